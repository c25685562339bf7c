# Shared by the benchmarks of the emulated job (source it from the repository root with
# $steps set): $hetu (build/bin/hetu, or $HETU), a work folder $work removed on exit (kept, and
# its path printed, with HETU_BENCH_KEEP=1), byte-level data from the docs, the
# mpirun environment and the training overrides `common` (one thread per rank, a progress
# line and metrics every step).
hetu=${HETU:-$PWD/build/bin/hetu}  # HETU: another build's binary (the ctest smoke's)
work=$(mktemp -d /tmp/hetu-emulated-XXXXXX)
if [ "${HETU_BENCH_KEEP:-0}" = 1 ]; then echo "work folder: $work"; else trap 'rm -rf "$work"' EXIT; fi
cat docs/*.md README.md configs/*.toml > "$work/text.txt"
"$hetu" data prepare --tokenizer byte --out "$work/data" --val-tokens 4000 "$work/text.txt" > /dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
common=(--set "data.train=$work/data/train_*.bin" --set training.eval_every=0 --set "training.steps=$steps"
        --set lr_schedule.warmup_steps=1 --set checkpoint.every=0 --set training.threads=1 --set training.log_every=1)
