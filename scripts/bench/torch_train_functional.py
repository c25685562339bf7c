#!/usr/bin/python3
"""The second PyTorch side of scripts/bench/cpu_train.sh: the same GPT-2 and training step as
scripts/bench/torch_train.py, built another way, so that a slow construction in one script
cannot pass for PyTorch's speed. Independent of hetu's code and of the first script.

Where the first script uses nn.Module layers (nn.Linear with (out, in) weights, nn.LayerNorm,
nn.Embedding, masked_fill + softmax attention, torch.optim.AdamW's per-tensor loop and
clip_grad_norm_), this one holds the parameters in one flat dict of leaf tensors and writes
the forward with tensor functions only:
  - linear layers as torch.addmm(bias, x, W) on (B*T, in) rows with W stored (in, out) (the
    layout of GPT-2's own Conv1D), so the bias is added by the GEMM (beta = 1);
  - attention scores as torch.baddbmm(causal bias, q, k^T, alpha = 1/sqrt(D)) with an
    additive -inf bias, softmax, torch.bmm with v, on (B*H, T, D) batches;
  - F.layer_norm, F.gelu (tanh), F.embedding, the tied head as torch.mm with wte^T, F.cross_entropy;
  - AdamW with foreach=True (the multi-tensor path) and clipping with torch._foreach_norm /
    torch._foreach_mul_.
Same model and FLOPs: pre-LayerNorm blocks, tanh GELU, learned positions, tied LM head, GPT-2 /
nanoGPT init (N(0, 0.02), N(0, 0.02/sqrt(2L)) for the residual projections, zero biases,
LayerNorm 1/0), weight decay on tensors with ndim >= 2 only, constant learning rate, fp32.

Data: the llm.c shard's uint16 tokens read into one tensor; step k takes windows k*B .. k*B+B-1
of T + 1 tokens at stride T (hetu's data.sampling = "sequential" over one shard, wrapping at the
end), x = window[:-1], y = window[1:]. Output: one JSON line per step with "step" (1-based),
"loss", "grad_norm", "lr", "tokens_per_s", "step_s" (the whole step, batch to loss.item()).

  OMP_NUM_THREADS=1 /usr/bin/python3 scripts/bench/torch_train_functional.py \
      --data DIR/train_000000.bin --vocab 256 --seq 64 --batch 4 --steps 31 --metrics /tmp/t.jsonl
"""
import argparse
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

MAGIC, VERSION, HEADER_BYTES = 20240520, 1, 1024


def read_tokens(path):
    """All tokens of an llm.c version-1 shard as an int64 tensor."""
    raw = np.fromfile(path, dtype=np.uint8)
    header = raw[:HEADER_BYTES].view("<i4")
    if raw.size < HEADER_BYTES or header[0] != MAGIC or header[1] != VERSION:
        sys.exit(f"{path}: not an llm.c version-1 token shard")
    tokens = raw[HEADER_BYTES:].view("<u2")
    if tokens.size != header[2]:
        sys.exit(f"{path}: header says {header[2]} tokens, the file holds {tokens.size}")
    return torch.from_numpy(tokens.astype(np.int64))


def init_params(a, gen):
    """name -> leaf tensor; linear weights are (in, out)."""
    C, L = a.hidden, a.layers

    def normal(shape, std):
        return torch.empty(shape).normal_(0.0, std, generator=gen)

    p = {"wte": normal((a.vocab, C), 0.02), "wpe": normal((a.max_seq_len, C), 0.02)}
    for i in range(L):
        for ln in ("ln1", "ln2"):
            p[f"{i}.{ln}.w"], p[f"{i}.{ln}.b"] = torch.ones(C), torch.zeros(C)
        for name, fan_in, fan_out, std in (("qkv", C, 3 * C, 0.02), ("proj", C, C, 0.02 / math.sqrt(2 * L)),
                                           ("fc", C, 4 * C, 0.02), ("out", 4 * C, C, 0.02 / math.sqrt(2 * L))):
            p[f"{i}.{name}.w"], p[f"{i}.{name}.b"] = normal((fan_in, fan_out), std), torch.zeros(fan_out)
    p["lnf.w"], p["lnf.b"] = torch.ones(C), torch.zeros(C)
    for t in p.values():
        t.requires_grad_(True)
    return p


def loss_fn(p, a, x, y, causal):
    B, T = x.shape
    C, H = a.hidden, a.heads
    D = C // H
    h = (F.embedding(x, p["wte"]) + p["wpe"][:T]).view(B * T, C)
    for i in range(a.layers):
        n = F.layer_norm(h, (C,), p[f"{i}.ln1.w"], p[f"{i}.ln1.b"], a.norm_eps)
        qkv = torch.addmm(p[f"{i}.qkv.b"], n, p[f"{i}.qkv.w"]).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
        q, k, v = (t.reshape(B * H, T, D) for t in qkv.unbind(0))
        scores = torch.baddbmm(causal[:T, :T], q, k.transpose(1, 2), alpha=1.0 / math.sqrt(D))
        att = torch.bmm(torch.softmax(scores, dim=-1), v)
        att = att.view(B, H, T, D).transpose(1, 2).reshape(B * T, C)
        h = h + torch.addmm(p[f"{i}.proj.b"], att, p[f"{i}.proj.w"])
        n = F.layer_norm(h, (C,), p[f"{i}.ln2.w"], p[f"{i}.ln2.b"], a.norm_eps)
        u = F.gelu(torch.addmm(p[f"{i}.fc.b"], n, p[f"{i}.fc.w"]), approximate="tanh")
        h = h + torch.addmm(p[f"{i}.out.b"], u, p[f"{i}.out.w"])
    logits = torch.mm(F.layer_norm(h, (C,), p["lnf.w"], p["lnf.b"], a.norm_eps), p["wte"].t())
    return F.cross_entropy(logits, y.reshape(-1))


def clip_(grads, max_norm):
    """Global L2 norm of `grads`; scales them in place to max_norm when above it."""
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    factor = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
    torch._foreach_mul_(grads, factor.item())
    return float(norm)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # The command line of scripts/bench/torch_train.py (cpu_train.sh passes both the same flags).
    for flag, kind, default in (("--layers", int, 4), ("--heads", int, 4), ("--hidden", int, 256),
                                ("--max-seq-len", int, 256), ("--norm-eps", float, 1e-5), ("--batch", int, 4),
                                ("--seq", int, 64), ("--steps", int, 31), ("--lr", float, 1e-3),
                                ("--eps", float, 1e-8), ("--weight-decay", float, 0.1), ("--grad-clip", float, 1.0),
                                ("--seed", int, 1234), ("--threads", int, 1)):
        ap.add_argument(flag, type=kind, default=default)
    ap.add_argument("--betas", type=float, nargs=2, default=[0.9, 0.95])
    ap.add_argument("--vocab", type=int, required=True, help="embedding rows (the tokenizer's ids must fit)")
    ap.add_argument("--data", required=True, help="one llm.c shard (train_000000.bin)")
    ap.add_argument("--metrics", required=True, help="JSON lines out, one per step")
    a = ap.parse_args()
    if a.hidden % a.heads != 0 or not 1 <= a.seq <= a.max_seq_len:
        sys.exit("hidden must be a multiple of heads and 1 <= seq <= max_seq_len")

    torch.set_num_threads(a.threads)
    tokens = read_tokens(a.data)
    if int(tokens.max()) >= a.vocab:
        sys.exit(f"{a.data}: token id {int(tokens.max())} does not fit a vocab of {a.vocab}")
    B, T = a.batch, a.seq
    batches = ((tokens.numel() - 1) // T) // B
    if batches < 1:
        sys.exit(f"{a.data}: fewer than {B} windows of {T + 1} tokens")
    window = torch.arange(T + 1)

    params = init_params(a, torch.Generator().manual_seed(a.seed))
    leaves = list(params.values())
    opt = torch.optim.AdamW([{"params": [t for t in leaves if t.dim() >= 2], "weight_decay": a.weight_decay},
                             {"params": [t for t in leaves if t.dim() < 2], "weight_decay": 0.0}],
                            lr=a.lr, betas=tuple(a.betas), eps=a.eps, foreach=True)
    causal = torch.full((a.max_seq_len, a.max_seq_len), float("-inf")).triu(1)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), functional GPT-2 (addmm, baddbmm), "
          f"foreach AdamW; model {sum(t.numel() for t in leaves)} parameters", flush=True)

    with open(a.metrics, "w") as out:
        for step in range(1, a.steps + 1):
            start = time.perf_counter()
            first = ((step - 1) % batches) * B
            rows = tokens[(first + torch.arange(B))[:, None] * T + window]  # (B, T + 1)
            x, y = rows[:, :-1], rows[:, 1:]
            for t in leaves:
                t.grad = None
            loss = loss_fn(params, a, x, y, causal)
            loss.backward()
            norm = clip_([t.grad for t in leaves], a.grad_clip)
            opt.step()
            loss_value = loss.item()
            step_s = time.perf_counter() - start
            out.write(json.dumps({"step": step, "loss": loss_value, "grad_norm": norm, "lr": a.lr,
                                  "tokens_per_s": B * T / step_s, "step_s": step_s}) + "\n")
            if not math.isfinite(loss_value):
                sys.exit(f"step {step}: the loss is {loss_value}")
    print(f"done: {a.steps} steps, final loss {loss_value:.4f}")


if __name__ == "__main__":
    main()
