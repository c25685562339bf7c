"""transformers itself as the client of hetu's Hugging Face files (tests/e2e/hf_transformers.sh),
run by the venv's interpreter (scripts/python_env.sh; ctest passes it as HETU_PYTHON):

    $HETU_PYTHON tests/python/hf_transformers.py check HF_DIR --tokens ids.txt --hetu-logits L.safetensors \
        [--prompt TEXT --hetu-generated OUT.txt --max-tokens N --min-distinct K (3)] [--tol 1e-4] [--min-rel R]
    $HETU_PYTHON tests/python/hf_transformers.py make-random {gpt2,llama,llama-tied,llama3} HF_DIR [--seed S]

check: AutoModelForCausalLM.from_pretrained(HF_DIR) (local files only, float32) must give the
"logits" of `hetu ckpt logits` within --tol relative: max |hetu - transformers| <= tol *
max |transformers| over every row, and differ by at least --min-rel relative (for a model
that must have changed). With --prompt, greedy generate() on the prompt's bytes (the byte
tokenizer: id = byte) must give the bytes `hetu generate --temperature 0` printed (its
stdout in --hetu-generated; both stop at the byte tokenizer's end-of-text id 0), with at least
--min-distinct distinct ids, so that a model stuck on one id cannot pass by agreeing on it.
make-random: a randomly initialised GPT2LMHeadModel or LlamaForCausalLM (hidden 64, 2 layers,
vocab 256; llama: GQA 4/2, untied; llama-tied; llama3: Llama 3 rope scaling, rope_theta 500)
saved with save_pretrained in shards of at most 40 KB (an index json beside them).
"""
import argparse
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"  # never the hub: every model here is a local folder
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import safetensors.torch  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bars in the test log


def read_tokens(path):
    rows = [[int(w) for w in line.split()] for line in open(path) if line.strip()]
    return torch.tensor(rows, dtype=torch.int64)


def fail(message):
    sys.exit(f"FAIL: {message}")


def check(a):
    model = transformers.AutoModelForCausalLM.from_pretrained(a.hf_dir, dtype=torch.float32, local_files_only=True)
    model.eval()
    expected_class = model.config.architectures[0]
    if type(model).__name__ != expected_class:
        fail(f"{a.hf_dir}: transformers built {type(model).__name__}, config.json names {expected_class}")
    with torch.no_grad():
        logits = model(read_tokens(a.tokens)).logits.double()
    hetu = safetensors.torch.load_file(a.hetu_logits)["logits"].double()
    if hetu.shape != logits.shape:
        fail(f"{a.hetu_logits}: logits {tuple(hetu.shape)}, transformers gives {tuple(logits.shape)}")
    relative = ((hetu - logits).abs().max() / logits.abs().max()).item()
    print(f"{a.hf_dir}: {type(model).__name__} logits {tuple(logits.shape)}, "
          f"max |hetu - transformers| / max |transformers| = {relative:.2e} (tolerance {a.tol:.0e})")
    if not relative <= a.tol:
        fail(f"{a.hetu_logits} differs from transformers' logits by {relative:.3e} relative")
    if relative < a.min_rel:
        fail(f"{a.hetu_logits} is within {a.min_rel:.0e} of transformers' logits ({relative:.3e}), expected a change")
    if a.prompt is None:
        return
    prompt = list(a.prompt.encode())
    settings = transformers.GenerationConfig(max_new_tokens=a.max_tokens, do_sample=False, eos_token_id=0,
                                             pad_token_id=0)
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.int64),
                             generation_config=settings)
    new_ids = out[0, len(prompt):].tolist()
    if new_ids and new_ids[-1] == 0:
        new_ids.pop()  # hetu stops at end-of-text without printing it
    printed = open(a.hetu_generated, "rb").read()
    if printed.endswith(b"\n"):
        printed = printed[:-1]
    expected = bytes(prompt + new_ids)
    print(f"greedy ids: transformers {new_ids}, hetu {list(printed[len(prompt):])}")
    if printed != expected:
        fail(f"{a.hetu_generated}: hetu generated {printed!r}, transformers' greedy generate gives {expected!r}")
    if len(set(new_ids)) < a.min_distinct:
        fail(f"greedy generation gives {len(set(new_ids))} distinct ids, fewer than {a.min_distinct}: "
             "too weak a check, train the model differently")


def make_random(a):
    torch.manual_seed(a.seed)
    shape = dict(vocab_size=256)
    if a.variant == "gpt2":
        config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=32, bos_token_id=0,
                                         eos_token_id=0, **shape)
        model = transformers.GPT2LMHeadModel(config)
    else:
        rope = {"rope_type": "default", "rope_theta": 500.0}
        if a.variant == "llama3":  # head_dim 16, theta 500: wavelengths fall in all three bands of 32/4 .. 32/1
            rope = {"rope_type": "llama3", "rope_theta": 500.0, "factor": 8.0, "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
        config = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                          num_key_value_heads=2, intermediate_size=96, max_position_embeddings=32,
                                          rms_norm_eps=1e-5, rope_parameters=rope,
                                          tie_word_embeddings=a.variant == "llama-tied", **shape)
        model = transformers.LlamaForCausalLM(config)
    # Larger weights than the 0.02 initialisation, so that the logits are far from uniform and
    # a wrong layout shows beyond the tolerance.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.2)
    model.save_pretrained(a.hf_dir, max_shard_size="40KB")
    print(f"{a.hf_dir}: random {type(model).__name__} ({a.variant}), "
          f"{sum(p.numel() for p in model.parameters())} parameters")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check")
    c.add_argument("hf_dir")
    c.add_argument("--tokens", required=True)
    c.add_argument("--hetu-logits", required=True)
    c.add_argument("--tol", type=float, default=1e-4)
    c.add_argument("--min-rel", type=float, default=0.0)
    c.add_argument("--prompt")
    c.add_argument("--hetu-generated")
    c.add_argument("--max-tokens", type=int, default=12)
    c.add_argument("--min-distinct", type=int, default=3)
    m = sub.add_parser("make-random")
    m.add_argument("variant", choices=["gpt2", "llama", "llama-tied", "llama3"])
    m.add_argument("hf_dir")
    m.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    check(a) if a.command == "check" else make_random(a)


if __name__ == "__main__":
    main()
