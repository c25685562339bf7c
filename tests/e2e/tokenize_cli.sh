#!/usr/bin/env bash
# `hetu tokenize` end to end: --jsonl encoding of golden lines (ids from OpenAI's encoder.py),
# --jsonl --decode back to the same JSON strings, a plain encode | decode byte-for-byte round
# trip (invalid UTF-8 and NULs included), HETU_GPT2_VOCAB as the default --vocab, and exit
# code 2 with a one-line message for a missing --vocab or a bad input line.
# Usage: tokenize_cli.sh HETU_BINARY VOCAB_DIR (tests/data/gpt2)
set -uo pipefail
hetu=$1
vocab=$2
golden="$vocab/golden.jsonl"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

# Golden lines read {"text":"...","ids":[...]}: split each into the JSON string and the array.
for n in 1 2 5 6 8 10; do sed -n "${n}p" "$golden"; done > "$tmp/golden"
sed -E 's/^\{"text":(".*"),"ids":(\[.*\])\}$/\1/' "$tmp/golden" > "$tmp/texts.jsonl"
sed -E 's/^\{"text":(".*"),"ids":(\[.*\])\}$/\2/' "$tmp/golden" > "$tmp/ids.jsonl"

"$hetu" tokenize --vocab "$vocab" --jsonl < "$tmp/texts.jsonl" > "$tmp/out_ids.jsonl" || fail "--jsonl encode exited $?"
diff "$tmp/ids.jsonl" "$tmp/out_ids.jsonl" || fail "--jsonl ids differ from golden.jsonl"
"$hetu" tokenize --vocab "$vocab" --jsonl --decode < "$tmp/ids.jsonl" > "$tmp/out_texts.jsonl" || fail "--jsonl --decode exited $?"
diff "$tmp/texts.jsonl" "$tmp/out_texts.jsonl" || fail "--jsonl --decode texts differ from golden.jsonl"

# Plain mode: any bytes survive encode | decode, here with invalid UTF-8, NULs, CRLF.
printf 'Hello world\r\n\x00\xff\xfe caf\xc3\xa9 \xe2\x80 <|endoftext|>\n\n\t end' > "$tmp/bytes"
cat "$golden" >> "$tmp/bytes"
"$hetu" tokenize --vocab "$vocab" < "$tmp/bytes" > "$tmp/bytes.ids" || fail "plain encode exited $?"
"$hetu" tokenize --vocab "$vocab" --decode < "$tmp/bytes.ids" > "$tmp/bytes.out" || fail "plain decode exited $?"
cmp "$tmp/bytes" "$tmp/bytes.out" || fail "plain encode | decode changed the bytes"
[ "$(printf 'Hello world' | "$hetu" tokenize --vocab "$vocab")" = "15496 995" ] || fail "plain encode of 'Hello world'"

# The vocab folder from the environment; none at all is a usage error.
[ "$(printf 'Hello world' | HETU_GPT2_VOCAB="$vocab" "$hetu" tokenize)" = "15496 995" ] \
  || fail "HETU_GPT2_VOCAB should stand in for --vocab"
out=$(printf 'Hello' | env -u HETU_GPT2_VOCAB "$hetu" tokenize 2>&1); rc=$?
[ $rc -eq 2 ] || fail "missing --vocab should exit 2 (rc=$rc): $out"
grep -q "gpt2 tokenizer needs --vocab DIR (encoder.json, vocab.bpe)" <<<"$out" || fail "missing --vocab message: $out"

# Bad input lines name the line.
out=$(printf '"ok"\n[1, 2]\n' | "$hetu" tokenize --vocab "$vocab" --jsonl 2>&1); rc=$?
[ $rc -eq 2 ] || fail "a non-string --jsonl line should exit 2 (rc=$rc): $out"
grep -q "stdin line 2: expected a JSON string, got array" <<<"$out" || fail "bad --jsonl line message: $out"
out=$(printf '15496 995\n50257\n' | "$hetu" tokenize --vocab "$vocab" --decode 2>&1); rc=$?
[ $rc -eq 2 ] || fail "an out-of-range id should exit 2 (rc=$rc): $out"
grep -q "stdin line 2: token id 50257 is outside \[0, 50257)" <<<"$out" || fail "out-of-range id message: $out"

# The byte tokenizer needs no vocab.
[ "$(printf 'hi' | "$hetu" tokenize --tokenizer byte)" = "104 105" ] || fail "byte tokenizer encode"
echo "PASS"
