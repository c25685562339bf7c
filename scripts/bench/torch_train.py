#!/usr/bin/python3
"""Train a GPT-2 with plain PyTorch on one llm.c token shard: the PyTorch side of
scripts/bench/cpu_train.sh. Independent of hetu's code.

The model is the standard GPT-2 (pre-LayerNorm blocks, tanh GELU, tied LM head, learned
positions; HF parameter names with nn.Linear's (out, in) weights), initialised like GPT-2 /
nanoGPT: N(0, 0.02) weights, N(0, 0.02/sqrt(2L)) for the residual projections (attn.c_proj,
mlp.c_proj), zero biases, LayerNorm 1/0. AdamW with weight decay on tensors with ndim >= 2
only, global-norm gradient clipping, constant learning rate, fp32.

Data: the shard's uint16 tokens (after the 256-int32 header) cut into consecutive windows of
T + 1 tokens with stride T, taken in order, B per step: step k uses windows k*B .. k*B+B-1,
x = window[:-1], y = window[1:]. This is hetu's `data.sampling = "sequential"` order over a
single shard, so both trainers see the same batches.

Peers: run by Debian's /usr/bin/python3 it is PyTorch 1.13 (masked softmax, foreach AdamW); run by
the Python environment of scripts/setup.sh it is PyTorch 2.15 eager (scaled_dot_product_attention,
fused AdamW where the build has it on the CPU), and with --compile the same model under
torch.compile (inductor): the first step then includes the compilation, which the caller reports
apart from tok/s (step 1 is dropped from the timing).

Writes one JSON object per step to --metrics (the fields of hetu's metrics.jsonl it shares:
"step" 1-based, "loss" before the update, "step_s", "tokens_per_s"). step_s times the whole
step: batch copy, zero_grad, forward, backward, clip, optimizer step, loss.item().

  OMP_NUM_THREADS=1 /usr/bin/python3 scripts/bench/torch_train.py --data DIR/train_000000.bin \
      --vocab 256 --seq 64 --batch 4 --steps 31 --metrics /tmp/torch.jsonl
"""
import argparse
import inspect
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SHARD_MAGIC, SHARD_VERSION, HEADER_INTS = 20240520, 1, 256


def load_shard(path):
    header = np.fromfile(path, dtype="<i4", count=HEADER_INTS)
    if len(header) != HEADER_INTS or header[0] != SHARD_MAGIC or header[1] != SHARD_VERSION:
        sys.exit(f"{path}: not an llm.c version-1 token shard (uint16 tokens)")
    tokens = np.memmap(path, dtype="<u2", mode="r", offset=HEADER_INTS * 4)
    if len(tokens) != header[2]:
        sys.exit(f"{path}: header says {header[2]} tokens, the file holds {len(tokens)}")
    return tokens


class SequentialBatches:
    """Consecutive windows of T+1 tokens (stride T), B per batch, wrapping at the end of an epoch."""

    def __init__(self, tokens, batch, seq):
        self.tokens, self.B, self.T = tokens, batch, seq
        self.windows = (len(tokens) - 1) // seq
        self.batches = self.windows // batch
        if self.batches < 1:
            sys.exit(f"the shard holds {self.windows} windows of {seq + 1} tokens, fewer than one batch of {batch}")
        self.k = 0

    def next(self):
        first = (self.k % self.batches) * self.B
        self.k += 1
        rows = np.stack([self.tokens[(first + i) * self.T:(first + i) * self.T + self.T + 1] for i in range(self.B)])
        rows = torch.from_numpy(rows.astype(np.int64))
        return rows[:, :-1], rows[:, 1:]


class Attention(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.H = a.heads
        self.c_attn = nn.Linear(a.hidden, 3 * a.hidden)
        self.c_proj = nn.Linear(a.hidden, a.hidden)
        self.register_buffer("mask", torch.triu(torch.ones(a.max_seq_len, a.max_seq_len, dtype=torch.bool), 1),
                             persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in self.c_attn(x).split(C, dim=-1))
        if hasattr(F, "scaled_dot_product_attention"):  # PyTorch >= 2.0: the fused kernel
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # PyTorch 1.x (Debian 12 ships 1.13): the usual masked softmax
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.mask[:T, :T], float("-inf")), dim=-1)
            y = att @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Mlp(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.c_fc = nn.Linear(a.hidden, 4 * a.hidden)
        self.c_proj = nn.Linear(4 * a.hidden, a.hidden)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.ln_1 = nn.LayerNorm(a.hidden, eps=a.norm_eps)
        self.attn = Attention(a)
        self.ln_2 = nn.LayerNorm(a.hidden, eps=a.norm_eps)
        self.mlp = Mlp(a)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.wte = nn.Embedding(a.vocab, a.hidden)
        self.wpe = nn.Embedding(a.max_seq_len, a.hidden)
        self.h = nn.ModuleList(Block(a) for _ in range(a.layers))
        self.ln_f = nn.LayerNorm(a.hidden, eps=a.norm_eps)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * a.layers))
            elif p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)
            # LayerNorm weights keep their ones.

    def forward(self, idx, targets):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for block in self.h:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied head
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def blas_library():
    """MKL where PyTorch was built with it (PyPI's wheels link it in statically), else the BLAS
    shared object this process mapped (PyTorch's matmuls go through it)."""
    if torch.backends.mkl.is_available():
        return "MKL" + (" + oneDNN" if torch.backends.mkldnn.is_available() else "")
    try:
        with open("/proc/self/maps") as maps:
            libs = {line.split()[-1] for line in maps if "blas" in line.lower() or "mkl" in line.lower()}
        return ", ".join(sorted(os.path.realpath(p) for p in libs if p.startswith("/"))) or "?"
    except OSError:
        return "?"


def make_adamw(params, a):
    """AdamW with weight decay on ndim >= 2 tensors: the fused kernel where this build has it
    for the CPU (PyTorch >= 2.4), else the foreach (multi-tensor) one. Returns (optimizer, kind)."""
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": a.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    options = dict(lr=a.lr, betas=tuple(a.betas), eps=a.eps)
    try:
        return torch.optim.AdamW(groups, fused=True, **options), "fused"
    except (TypeError, RuntimeError):  # 1.x has no fused=; 2.0-2.3 have it for CUDA only
        return torch.optim.AdamW(groups, foreach=True, **options), "foreach"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="one llm.c shard (train_000000.bin)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--max-seq-len", type=int, default=256)
    ap.add_argument("--vocab", type=int, required=True, help="embedding rows (the tokenizer's ids must fit)")
    ap.add_argument("--norm-eps", type=float, default=1e-5)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=31, help="optimizer steps in all (the caller drops the first)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--betas", type=float, nargs=2, default=[0.9, 0.95])
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch >= 2.0)")
    ap.add_argument("--metrics", required=True, help="JSON lines out, one per step")
    a = ap.parse_args()
    assert a.hidden % a.heads == 0 and a.seq <= a.max_seq_len

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    tokens = load_shard(a.data)
    if int(tokens.max()) >= a.vocab:
        sys.exit(f"{a.data}: token id {int(tokens.max())} does not fit a vocab of {a.vocab}")
    data = SequentialBatches(tokens, a.batch, a.seq)

    model = GPT2(a)
    params = list(model.parameters())
    opt, adamw_kind = make_adamw(params, a)
    # The multi-tensor norm where it exists (PyTorch >= 2.0; 1.13's has no foreach=).
    clip_options = {"foreach": True} if "foreach" in inspect.signature(torch.nn.utils.clip_grad_norm_).parameters else {}
    forward = model
    if a.compile:
        if not hasattr(torch, "compile"):
            sys.exit(f"--compile needs PyTorch >= 2.0; this is {torch.__version__}")
        forward = torch.compile(model)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), BLAS {blas_library()}, "
          f"attention {'sdpa' if hasattr(F, 'scaled_dot_product_attention') else 'masked softmax'}, "
          f"AdamW {adamw_kind}, {'torch.compile (inductor)' if a.compile else 'eager'}; "
          f"model {sum(p.numel() for p in params)} parameters", flush=True)

    step_tokens = a.batch * a.seq
    with open(a.metrics, "w") as out:
        for step in range(1, a.steps + 1):
            start = time.perf_counter()
            x, y = data.next()
            opt.zero_grad(set_to_none=True)
            loss = forward(x, y)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(params, a.grad_clip, **clip_options)
            opt.step()
            loss_value = loss.item()
            step_s = time.perf_counter() - start
            out.write(json.dumps({"step": step, "loss": loss_value, "grad_norm": float(norm), "lr": a.lr,
                                  "tokens_per_s": step_tokens / step_s, "step_s": step_s}) + "\n")
            if not math.isfinite(loss_value):
                sys.exit(f"step {step}: the loss is {loss_value}")
    print(f"done: {a.steps} steps, final loss {loss_value:.4f}")


if __name__ == "__main__":
    main()
