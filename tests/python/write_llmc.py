#!/usr/bin/python3
"""Write an llm.c GPT-2 checkpoint (gpt2_*.bin) with random weights, independently of hetu,
from llm.c's layout (train_gpt2.c: 256 int32 header — magic 20240326, version 3 f32 / 5
bf16, maxT, V, L, NH, C, Vp — then wte (Vp, C), wpe, and 14 blocks stacked over layers, the
vocab padding rows zero), and the logits torch_models.py computes from the same weights.

    /usr/bin/python3 tests/python/write_llmc.py --out m.bin --version 5 --layers 2 --hidden 64 \
        --heads 4 --vocab 250 --padded-vocab 256 --max-seq-len 32 --tokens ids.txt --logits ref.safetensors
"""
import argparse
import os
import struct
import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
import torch_models  # noqa: E402
from hf_logits import read_tokens  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", type=int, choices=[3, 5], default=3)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=250)
    ap.add_argument("--padded-vocab", type=int, default=256)
    ap.add_argument("--max-seq-len", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--logits", required=True)
    a = ap.parse_args()
    L, C, V, Vp, T = a.layers, a.hidden, a.vocab, a.padded_vocab, a.max_seq_len
    g = torch.Generator().manual_seed(a.seed)
    rand = lambda *shape, scale=0.1, mean=0.0: mean + scale * torch.randn(*shape, generator=g)
    # llm.c's 16 blocks, in file order; weights (out, in).
    blocks = [
        ("wte", torch.cat([rand(V, C), torch.zeros(Vp - V, C)])), ("wpe", rand(T, C)),
        ("ln1w", rand(L, C, mean=1.0)), ("ln1b", rand(L, C)), ("qkvw", rand(L, 3 * C, C)), ("qkvb", rand(L, 3 * C)),
        ("attprojw", rand(L, C, C)), ("attprojb", rand(L, C)), ("ln2w", rand(L, C, mean=1.0)), ("ln2b", rand(L, C)),
        ("fcw", rand(L, 4 * C, C)), ("fcb", rand(L, 4 * C)), ("fcprojw", rand(L, C, 4 * C)), ("fcprojb", rand(L, C)),
        ("lnfw", rand(C, mean=1.0)), ("lnfb", rand(C)),
    ]
    dtype = torch.bfloat16 if a.version == 5 else torch.float32
    blocks = [(n, t.to(dtype)) for n, t in blocks]
    header = struct.pack("<256i", 20240326, a.version, T, V, L, a.heads, C, Vp, *([0] * 248))
    with open(a.out, "wb") as f:
        f.write(header)
        for _, t in blocks:
            f.write(t.contiguous().view(-1).view(torch.uint8).numpy().tobytes())

    # The same weights as a HF GPT-2 state dict (Conv1D weights are (in, out)).
    w = dict(blocks)
    sd = {"wte.weight": w["wte"][:V], "wpe.weight": w["wpe"], "ln_f.weight": w["lnfw"], "ln_f.bias": w["lnfb"]}
    for i in range(L):
        h = f"h.{i}."
        sd.update({h + "ln_1.weight": w["ln1w"][i], h + "ln_1.bias": w["ln1b"][i],
                   h + "attn.c_attn.weight": w["qkvw"][i].T, h + "attn.c_attn.bias": w["qkvb"][i],
                   h + "attn.c_proj.weight": w["attprojw"][i].T, h + "attn.c_proj.bias": w["attprojb"][i],
                   h + "ln_2.weight": w["ln2w"][i], h + "ln_2.bias": w["ln2b"][i],
                   h + "mlp.c_fc.weight": w["fcw"][i].T, h + "mlp.c_fc.bias": w["fcb"][i],
                   h + "mlp.c_proj.weight": w["fcprojw"][i].T, h + "mlp.c_proj.bias": w["fcprojb"][i]})
    cfg = {"model_type": "gpt2", "n_embd": C, "n_head": a.heads, "n_layer": L, "layer_norm_epsilon": 1e-5}
    logits = torch_models.forward(cfg, sd, read_tokens(a.tokens))
    safetensors_io.write_file(a.logits, {"logits": logits})
    print(f"{a.out}: llm.c version {a.version}, L {L} C {C} V {V} Vp {Vp} maxT {T}; logits {tuple(logits.shape)}")


if __name__ == "__main__":
    main()
