#!/usr/bin/env bash
# hetu's tiktoken-format tokenizer against the `tiktoken` package of the venv
# (tests/python/tiktoken_oracle.py): `hetu tokenize --tokenizer tiktoken` gives tiktoken's ids on
# 3000 random mixed texts for cl100k, o200k and llama3, with and without special tokens.
# usage: tiktoken_oracle.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/require_python_env.sh"
"$py" -c 'import tiktoken' || { echo "FAIL: the venv $py has no tiktoken package (scripts/setup.sh installs it)"; exit 1; }
"$py" "$src/tests/python/tiktoken_oracle.py" "$hetu" "$src" 3000
