# Sourced by the tests that run the Python oracles (torch 2.15, transformers): sets $py to the
# interpreter ctest passes as HETU_PYTHON (tests/CMakeLists.txt, from scripts/python_env.sh), or
# fails the test naming what is missing and how to make it. Never a skip: a missing venv is a
# broken set-up, not a reason to test less.
if [ -z "${HETU_PYTHON:-}" ]; then
  echo "FAIL: HETU_PYTHON is not set (ctest sets it; by hand: source scripts/python_env.sh)"
  exit 1
fi
if [ ! -x "$HETU_PYTHON" ]; then
  echo "FAIL: the Python environment $HETU_PYTHON is missing: run scripts/setup.sh (it makes the venv of scripts/python-requirements.txt)"
  exit 1
fi
py=$HETU_PYTHON
