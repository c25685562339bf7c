#!/usr/bin/env bash
# The main job, from a fresh clone: install dependencies if missing, build hetu, turn the King
# James Bible (Debian's bible-kjv package; nothing is downloaded from elsewhere) into byte-level
# token shards, train the default job (configs/gpt2-tiny-cpu.toml: a 4-layer GPT-2) for a couple
# of minutes on this machine's CPU with the loss falling, save a checkpoint, print a sample, and
# write the run's report (runs/gpt2-tiny-cpu/report.html: curves and time per phase).
# Extra arguments go to `hetu train` (e.g. --set training.steps=100).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --without-python-env
scripts/build.sh --target hetu
hetu=build/bin/hetu
job=configs/gpt2-tiny-cpu.toml

if [ ! -f data/kjv/train_000000.bin ]; then
  echo "== preparing data/kjv from the bible-kjv package"
  mkdir -p data
  bible "Genesis1:1-Revelation22:21" > data/kjv.txt
  # One document per chapter (a line like "Genesis 1" starts one): data.packing = "documents"
  # then packs whole chapters; the default windows read the same shards as one stream.
  "$hetu" data prepare --tokenizer byte --out data/kjv --val-tokens 200000 \
    --document-start '^([1-3] )?[A-Z][a-z]+( [a-z]+)*( [A-Z][a-z]+)* [0-9]+$' data/kjv.txt
fi

echo "== hetu config check $job"
"$hetu" config check "$job" "$@" > /dev/null
echo "== hetu train $job"
"$hetu" train "$job" "$@"
echo "== hetu generate runs/gpt2-tiny-cpu"
"$hetu" generate runs/gpt2-tiny-cpu --prompt "And God said" --max-tokens 200 --temperature 0.8 --seed 7
echo "== hetu report runs/gpt2-tiny-cpu"
"$hetu" report runs/gpt2-tiny-cpu
echo "report: runs/gpt2-tiny-cpu/report.html (open it in a browser; hetu report RUN_A RUN_B overlays runs)"
