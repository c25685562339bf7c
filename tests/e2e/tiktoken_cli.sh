#!/usr/bin/env bash
# `hetu tokenize` and `hetu data prepare` with --tokenizer tiktoken: the golden ids of
# tests/data/tiktoken through --jsonl and back with --decode, special-token text as plain text
# unless --allow-special, a byte-for-byte round trip of invalid UTF-8, and exit code 2 with a
# one-line message for a missing --pattern, an unknown one, --pattern with another tokenizer and a
# bad ranks file (named by line); `hetu data prepare` writes cl100k's ids into a uint32 (version 2)
# shard, the ids of `hetu tokenize` after the separator; a job with data.tokenizer = "tiktoken"
# trains on such shards and `hetu generate` continues a prompt with its tokenizer.
# Usage: tiktoken_cli.sh HETU_BINARY SOURCE_DIR
set -uo pipefail
hetu=$1
src=$2
dir=$src/tests/data/tiktoken
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

for name in cl100k o200k; do
  ranks="$dir/${name}_base.tiktoken"
  golden="$dir/${name}_base.golden.jsonl"
  sed -E 's/^\{"text":(".*"),"ids":(\[.*\])\}$/\1/' "$golden" > "$tmp/texts.jsonl"
  sed -E 's/^\{"text":(".*"),"ids":(\[.*\])\}$/\2/' "$golden" > "$tmp/ids.jsonl"
  "$hetu" tokenize --tokenizer tiktoken --vocab "$ranks" --pattern $name --jsonl < "$tmp/texts.jsonl" > "$tmp/out.jsonl" \
    || fail "$name --jsonl encode exited $?"
  diff "$tmp/ids.jsonl" "$tmp/out.jsonl" || fail "$name --jsonl ids differ from the golden file"
  "$hetu" tokenize --tokenizer tiktoken --vocab "$ranks" --pattern $name --jsonl --decode < "$tmp/ids.jsonl" > "$tmp/back.jsonl" \
    || fail "$name --jsonl --decode exited $?"
  diff "$tmp/texts.jsonl" "$tmp/back.jsonl" || fail "$name --jsonl --decode texts differ from the golden file"
done

ranks="$dir/cl100k_base.tiktoken"
tok() { "$hetu" tokenize --tokenizer tiktoken --vocab "$ranks" --pattern cl100k "$@"; }
[ "$(printf 'a<|endoftext|>b' | tok)" = "64 27 91 8862 728 428 91 29 65" ] || fail "special-token text should be plain text by default"
[ "$(printf 'a<|endoftext|>b' | tok --allow-special)" = "64 100257 65" ] || fail "--allow-special should give <|endoftext|> its id"
printf 'Hello world\r\n\x00\xff\xfe caf\xc3\xa9 \xe2\x80 <|endoftext|>\n\n\t end' > "$tmp/bytes"
tok < "$tmp/bytes" > "$tmp/bytes.ids" || fail "plain encode exited $?"
tok --decode < "$tmp/bytes.ids" > "$tmp/bytes.out" || fail "plain decode exited $?"
cmp "$tmp/bytes" "$tmp/bytes.out" || fail "plain encode | decode changed the bytes"

expect_usage() {  # expect_usage MESSAGE COMMAND...: exit 2 and MESSAGE on stderr
  local message=$1; shift
  out=$(printf 'x' | "$@" 2>&1); rc=$?
  [ $rc -eq 2 ] || fail "$* should exit 2 (rc=$rc): $out"
  grep -qF -- "$message" <<<"$out" || fail "$*: expected '$message', got: $out"
}
expect_usage "tiktoken tokenizer needs --pattern (cl100k, o200k, llama3)" "$hetu" tokenize --tokenizer tiktoken --vocab "$ranks"
expect_usage "unknown tiktoken pattern 'p50k' (expected cl100k, o200k, llama3)" \
  "$hetu" tokenize --tokenizer tiktoken --vocab "$ranks" --pattern p50k
expect_usage "tiktoken tokenizer needs --vocab FILE" "$hetu" tokenize --tokenizer tiktoken --pattern cl100k
expect_usage "--pattern is for --tokenizer tiktoken only (not byte)" "$hetu" tokenize --tokenizer byte --pattern cl100k
printf 'IQ== 0\nIg== x\n' > "$tmp/bad.tiktoken"
expect_usage "tiktoken ranks file $tmp/bad.tiktoken:2: rank \"x\" is not an integer" \
  "$hetu" tokenize --tokenizer tiktoken --vocab "$tmp/bad.tiktoken" --pattern cl100k

# data prepare picks the tokenizer; its ids (<|endoftext|> = 100257) need the uint32 shards of
# format version 2, which it writes: the shard's ids are hetu tokenize's, the separator first.
printf 'Hello, world!' > "$tmp/doc.txt"
"$hetu" data prepare --tokenizer tiktoken --vocab "$ranks" --pattern cl100k --out "$tmp/shards" "$tmp/doc.txt" > /dev/null \
  || fail "tiktoken data prepare"
ids=$("$hetu" tokenize --tokenizer tiktoken --vocab "$ranks" --pattern cl100k < "$tmp/doc.txt") || fail "tokenize"
/usr/bin/python3 - "$tmp/shards/train_000000.bin" "$ids" <<'PY' || fail "the tiktoken shard is not version 2 with the tokenized ids"
import struct, sys
data = open(sys.argv[1], "rb").read()
magic, version, count = struct.unpack("<3i", data[:12])
got = list(struct.unpack(f"<{count}I", data[1024:]))
want = [100257] + [int(t) for t in sys.argv[2].replace(",", " ").split()]
assert (magic, version, len(data)) == (20240520, 2, 1024 + 4 * count), (magic, version, len(data))
assert got == want, (got, want)
PY
expect_usage "data prepare: tiktoken tokenizer needs --pattern" \
  "$hetu" data prepare --tokenizer tiktoken --vocab "$ranks" --out "$tmp/x" "$tmp/doc.txt"

# A tiktoken job (its ranks file a copy, moved below): cl100k shards of the test corpus train two steps, generate uses cl100k.
"$hetu" data prepare --tokenizer tiktoken --vocab "$ranks" --pattern cl100k --out "$tmp/cl100k-data" --val-tokens 500 \
  "$src/tests/data/byte-corpus.txt" > /dev/null || fail "tiktoken data prepare of the corpus"
cp "$ranks" "$tmp/job.tiktoken"
"$hetu" train "$src/configs/gpt2-tiny-cpu.toml" --set "data.train=\"$tmp/cl100k-data/train_*.bin\"" --set model.layers=1 \
  --set model.hidden=32 --set model.heads=2 --set model.max_seq_len=32 --set training.seq_len=16 \
  --set training.global_batch=2 --set training.micro_batch=1 --set training.threads=1 --set training.steps=2 \
  --set training.eval_every=0 --set "job.out_dir=\"$tmp/run\"" --set 'data.tokenizer="tiktoken"' \
  --set "data.vocab=\"$tmp/job.tiktoken\"" --set 'data.tokenizer_pattern="cl100k"' --set model.vocab=100277 > "$tmp/train.log" 2>&1 \
  || fail "tiktoken job did not train: $(tail -3 "$tmp/train.log")"
out=$("$hetu" generate "$tmp/run" --prompt "Hello world" --max-tokens 3 --threads 1) || fail "generate exited $?"
case "$out" in "Hello world"*) ;; *) fail "generate printed '$out'";; esac
# The ranks file elsewhere: the stored data.vocab is missing, --vocab names the new place.
mv "$tmp/job.tiktoken" "$tmp/moved.tiktoken"
out=$("$hetu" generate "$tmp/run" --prompt "Hello" --max-tokens 3 --threads 1 2>&1); rc=$?
[ $rc -eq 2 ] || fail "generate without the ranks file should exit 2 (rc=$rc): $out"
grep -qF "data.vocab: no such file \"$tmp/job.tiktoken\"" <<<"$out" || fail "missing ranks file message: $out"
out=$("$hetu" generate "$tmp/run" --prompt "Hello world" --max-tokens 3 --threads 1 --vocab "$tmp/moved.tiktoken") \
  || fail "generate --vocab exited $?"
case "$out" in "Hello world"*) ;; *) fail "generate --vocab printed '$out'";; esac
out=$("$hetu" train "$src/configs/gpt2-tiny-cpu.toml" --set 'data.tokenizer="tiktoken"' --set "data.vocab=\"$ranks\"" \
  --set 'data.tokenizer_pattern="cl100k"' 2>&1); rc=$?
[ $rc -eq 2 ] || fail "a vocab below the tokenizer's ids should exit 2 (rc=$rc): $out"
grep -q "model.vocab: vocab = .* is smaller than the tiktoken tokenizer's 100277 ids" <<<"$out" || fail "vocab check: $out"
echo "PASS"
