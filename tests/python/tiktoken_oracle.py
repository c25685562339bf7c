"""hetu's tiktoken-format tokenizer against the `tiktoken` package (the reference, Rust).

Builds tiktoken.Encoding from the repository's ranks files (tests/data/tiktoken) with the
patterns and special tokens of each encoding's JSON, and for cl100k, o200k and llama3 (Llama 3's
pattern and special tokens over cl100k's ranks, since Meta's file cannot be shipped) compares
`hetu tokenize --jsonl` with encode_ordinary, and `--allow-special` with
encode(allowed_special="all"), on a few thousand random mixed texts (English, code, digits, CJK,
emoji, combining marks, random code points of Unicode 14, whitespace runs, special-token text).

usage: tiktoken_oracle.py HETU SOURCE_DIR [TEXTS]
"""
import json
import random
import subprocess
import sys

import unicodedata

import tiktoken
import tiktoken.load

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def llama3_specials():
    named = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
             "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
             "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
    names = named + [f"<|reserved_special_token_{i}|>" for i in range(3, 3 + 256 - len(named))]
    return {name: 128000 + i for i, name in enumerate(names)}


WORDS = ["the", " quick", " brown", "Fox", " JUMPS", "'s", "'LL", "'Re", " don't", "I'm", " you've", "HELLO'd",
         " 42", "1234567", "3.14159", "int main() {", " return 0;", "}", "x += y->z;", "def f(a, b):", "    pass",
         "//", "/* c */", "https://example.com/a?b=c&d=%20", "中文字符", "日本語のテキスト", "한국어", "текст",
         "Привет", "naïve", "café", "e\u0301", "🎉", "🚀🚀", "👩‍👩‍👧", "—", "“q”", "«»", "¿Qué?", "ß", "ǅ", "Ⅻ",
         "٣٤٥", "\u00a0", "\u3000", "!!!", "...", "$$", "#", "ﬁ", "ΑΒΓ", "مرحبا", "שלום", "हिन्दी", "ไทย"]
SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n ", "\n    ", "\t\t\n", "\r", "\u2028", "\x0b", "\x0c",
          "\u180e", "\u0085", "\u200b", "\u1680", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff", "\x1c"]
SPECIALS = ["<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>", "<|begin_of_text|>", "<|eot_id|>", "<|", "|>"]


def random_code_point(rng):
    while True:
        c = rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x2fff), rng.randint(0x3000, 0xd7ff),
                        rng.randint(0xe000, 0xffff), rng.randint(0x10000, 0x1faff)])
        # Characters assigned by Unicode 14 only: hetu's \p{L}, \p{N}, \s come from the system PCRE2's
        # tables (10.42: Unicode 14), tiktoken's from Rust's regex crate (newer); letters added since
        # (Egyptian hieroglyphs of Unicode 16...) are "unassigned" to PCRE2 and split differently.
        if not 0xd800 <= c <= 0xdfff and unicodedata.category(chr(c)) != "Cn":
            return chr(c)


def random_text(rng):
    parts = []
    for _ in range(rng.randint(1, 40)):
        kind = rng.random()
        if kind < 0.45:
            parts.append(rng.choice(WORDS))
        elif kind < 0.75:
            parts.append(rng.choice(SPACES) * rng.randint(1, 3))
        elif kind < 0.9:
            parts.append("".join(random_code_point(rng) for _ in range(rng.randint(1, 6))))
        elif kind < 0.95:
            parts.append(rng.choice(SPECIALS))
        else:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 12))))
    return "".join(parts)


def hetu_ids(hetu, ranks, pattern, texts, allow_special):
    cmd = [hetu, "tokenize", "--tokenizer", "tiktoken", "--vocab", ranks, "--pattern", pattern, "--jsonl"]
    if allow_special:
        cmd.append("--allow-special")
    lines = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts)
    out = subprocess.run(cmd, input=lines.encode(), capture_output=True, check=False)
    if out.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {out.returncode}: {out.stderr.decode()}")
    return [json.loads(line) for line in out.stdout.decode().splitlines()]


def main():
    hetu, src = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    rng = random.Random(37)
    texts = [random_text(rng) for _ in range(count)]
    data = f"{src}/tests/data/tiktoken"
    encodings = []
    for name in ["cl100k", "o200k"]:
        with open(f"{data}/{name}_base.json") as f:
            desc = json.load(f)
        encodings.append((name, f"{data}/{name}_base.tiktoken", desc["pat_str"], desc["special_tokens"]))
    encodings.append(("llama3", f"{data}/cl100k_base.tiktoken", LLAMA3_PATTERN, llama3_specials()))
    failures = 0
    for name, ranks_path, pattern, specials in encodings:
        ranks = tiktoken.load.load_tiktoken_bpe(ranks_path)
        enc = tiktoken.Encoding(f"hetu-test-{name}", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
        for allow_special in [False, True]:
            want = [enc.encode(t, allowed_special="all") if allow_special else enc.encode_ordinary(t) for t in texts]
            got = hetu_ids(hetu, ranks_path, name, texts, allow_special)
            if len(got) != len(want):
                sys.exit(f"FAIL: {name}: hetu gave {len(got)} lines for {len(want)} texts")
            bad = [i for i in range(len(texts)) if got[i] != want[i]]
            tokens = sum(len(w) for w in want)
            print(f"{name} allow_special={allow_special}: {len(texts) - len(bad)}/{len(texts)} texts equal "
                  f"({tokens} tokens)")
            for i in bad[:3]:
                print(f"  text {json.dumps(texts[i], ensure_ascii=True)}\n  tiktoken {want[i]}\n  hetu     {got[i]}")
            failures += len(bad)
    if failures:
        sys.exit(f"FAIL: {failures} texts differ from tiktoken")
    print("PASS")


if __name__ == "__main__":
    main()
