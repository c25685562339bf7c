#!/usr/bin/env bash
# The one place that names hetu's Python environment (scripts/python-requirements.txt,
# installed by scripts/setup.sh): a venv of Debian's /usr/bin/python3 outside the source tree,
# shared by every clone and worktree on the machine and keyed by the pin list, so a changed
# list gets a venv of its own:
#   ${XDG_CACHE_HOME:-~/.cache}/hetu/venv-<first 12 hex of the list's sha256>
# HETU_VENV=DIR overrides the folder. Run, it prints the interpreter (DIR/bin/python);
# sourced, it exports HETU_VENV and HETU_PYTHON. CMake reads it at configure time (tests/
# CMakeLists.txt, cache variable HETU_PYTHON); `python3` on PATH is not this interpreter.
_hetu_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HETU_PYTHON_REQUIREMENTS="$_hetu_src/scripts/python-requirements.txt"
if [ -z "${HETU_VENV:-}" ]; then
  _hetu_key=$(sha256sum "$HETU_PYTHON_REQUIREMENTS" | cut -c1-12)
  HETU_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/hetu/venv-$_hetu_key"
fi
HETU_PYTHON="$HETU_VENV/bin/python"
export HETU_VENV HETU_PYTHON HETU_PYTHON_REQUIREMENTS
unset _hetu_src _hetu_key
if [ "${BASH_SOURCE[0]}" = "$0" ]; then echo "$HETU_PYTHON"; fi
