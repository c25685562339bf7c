#!/usr/bin/python3
"""Write a PyTorch reference dump for any GPT-2 or LLaMA shape, for `hetu verify`.

The format (what `hetu verify` and tests/models read): root attributes describe the model
(arch, layers, hidden, heads, vocab, max_seq_len, norm_eps; kv_heads, ffn_hidden, rope_theta
for llama) and the batch (batch, seq, seed); /params/<name> holds the initial parameters
(HF names, float32, every 2-D weight (out_features, in_features) as torch.nn.Linear stores
it); /batch/x, /batch/y the int32 (batch, seq) tokens and next-token targets;
/forward/logits (batch, seq, vocab) and /forward/loss (mean cross-entropy); /grads/<name>;
and /train/losses (loss before step i), /train/grad_norm (pre-clip global L2 norm at step
i), /train/params_after/<name> for K AdamW steps on the batch, with the optimizer settings
(lr, betas, eps, weight_decay on tensors with ndim >= 2 only, grad_clip) as attributes of
/train. Everything is computed in float32 on the CPU by the small model definitions below
(independent of hetu's code). tests/make_reference_fixtures.sh writes the tiny fixtures the
tests read.

  /usr/bin/python3 scripts/make_reference.py --arch llama --layers 3 --hidden 48 --heads 6 \
      --kv-heads 2 --ffn-hidden 80 --vocab 301 --out /tmp/llama_odd.h5
  build/bin/hetu verify /tmp/llama_odd.h5

--rope-scaling FACTOR LOW HIGH ORIGINAL adds Llama 3's rope scaling (root attributes
rope_scaling_factor, rope_scaling_low_freq_factor, rope_scaling_high_freq_factor,
rope_scaling_original_max_position_embeddings).
"""
import argparse
import math

import h5py
import numpy as np
import torch
import torch.nn.functional as F


def gpt2_params(a, g):
    C, L, V, S = a.hidden, a.layers, a.vocab, a.max_seq_len
    p = {"wte.weight": (V, C), "wpe.weight": (S, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for i in range(L):
        h = f"h.{i}."
        p.update({h + "ln_1.weight": (C,), h + "ln_1.bias": (C,),
                  h + "attn.c_attn.weight": (3 * C, C), h + "attn.c_attn.bias": (3 * C,),
                  h + "attn.c_proj.weight": (C, C), h + "attn.c_proj.bias": (C,),
                  h + "ln_2.weight": (C,), h + "ln_2.bias": (C,),
                  h + "mlp.c_fc.weight": (4 * C, C), h + "mlp.c_fc.bias": (4 * C,),
                  h + "mlp.c_proj.weight": (C, 4 * C), h + "mlp.c_proj.bias": (C,)})
    return init(p, g)


def llama_params(a, g):
    C, L, V, F_ = a.hidden, a.layers, a.vocab, a.ffn_hidden
    D = C // a.heads
    p = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not a.tie_embeddings:
        p["lm_head.weight"] = (V, C)
    for i in range(L):
        h = f"model.layers.{i}."
        p.update({h + "input_layernorm.weight": (C,), h + "post_attention_layernorm.weight": (C,),
                  h + "self_attn.q_proj.weight": (a.heads * D, C),
                  h + "self_attn.k_proj.weight": (a.kv_heads * D, C),
                  h + "self_attn.v_proj.weight": (a.kv_heads * D, C),
                  h + "self_attn.o_proj.weight": (C, a.heads * D),
                  h + "mlp.gate_proj.weight": (F_, C), h + "mlp.up_proj.weight": (F_, C),
                  h + "mlp.down_proj.weight": (C, F_)})
    return init(p, g)


def init(shapes, g):
    """Random values everywhere (norm weights near 1, biases small but non-zero) so every
    parameter's gradient path is exercised."""
    out = {}
    for name, shape in shapes.items():
        if name.endswith("norm.weight") or (len(shape) == 1 and name.endswith(".weight")):
            t = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            t = 0.02 * torch.randn(shape, generator=g)
        else:
            t = 0.02 * torch.randn(shape, generator=g)
        out[name] = t.float().requires_grad_(True)
    return out


def causal_attention(q, k, v):
    """q (B, H, T, D), k/v (B, Hkv, T, D): naive softmax(q k^T / sqrt(D) + mask) v."""
    H, Hkv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(H // Hkv, dim=1)
    v = v.repeat_interleave(H // Hkv, dim=1)
    T = q.shape[2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v


def gpt2_forward(p, a, x):
    B, T = x.shape
    C, H = a.hidden, a.heads
    h = p["wte.weight"][x] + p["wpe.weight"][torch.arange(T)]
    for i in range(a.layers):
        n = f"h.{i}."
        y = F.layer_norm(h, (C,), p[n + "ln_1.weight"], p[n + "ln_1.bias"], a.norm_eps)
        qkv = y @ p[n + "attn.c_attn.weight"].T + p[n + "attn.c_attn.bias"]
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in qkv.split(C, dim=-1))
        y = causal_attention(q, k, v).transpose(1, 2).reshape(B, T, C)
        h = h + y @ p[n + "attn.c_proj.weight"].T + p[n + "attn.c_proj.bias"]
        y = F.layer_norm(h, (C,), p[n + "ln_2.weight"], p[n + "ln_2.bias"], a.norm_eps)
        y = F.gelu(y @ p[n + "mlp.c_fc.weight"].T + p[n + "mlp.c_fc.bias"], approximate="tanh")
        h = h + y @ p[n + "mlp.c_proj.weight"].T + p[n + "mlp.c_proj.bias"]
    h = F.layer_norm(h, (C,), p["ln_f.weight"], p["ln_f.bias"], a.norm_eps)
    return h @ p["wte.weight"].T


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def llama3_scaled(inv, factor, low, high, original):
    """Llama 3.1's rope scaling of inverse frequencies `inv`, from Meta's published recipe:
    wavelengths under original/high keep their frequency, those over original/low are slowed
    by `factor`, and in between the two are blended by how far original/wavelength lies
    from low towards high."""
    wavelength = 2 * math.pi / inv
    blend = ((original / wavelength - low) / (high - low)).clamp(0.0, 1.0)
    blended = inv / factor * (1 - blend) + inv * blend
    return torch.where(wavelength < original / high, inv,
                       torch.where(wavelength > original / low, inv / factor, blended))


def rotate(x, theta, scaling=None):
    """x (B, T, heads, D), rotate-half convention, inverse frequencies theta^(-2i/D) (then
    Llama 3's scaling when `scaling` = (factor, low_freq_factor, high_freq_factor, original))."""
    T, D = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    if scaling:
        inv = llama3_scaled(inv, *scaling)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1).float()[None, :, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1).float()[None, :, None, :]
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def llama_forward(p, a, x):
    B, T = x.shape
    C, H, Hkv = a.hidden, a.heads, a.kv_heads
    D = C // H
    h = p["model.embed_tokens.weight"][x]
    for i in range(a.layers):
        n = f"model.layers.{i}."
        y = rms_norm(h, p[n + "input_layernorm.weight"], a.norm_eps)
        q = rotate((y @ p[n + "self_attn.q_proj.weight"].T).view(B, T, H, D), a.rope_theta, a.rope_scaling)
        k = rotate((y @ p[n + "self_attn.k_proj.weight"].T).view(B, T, Hkv, D), a.rope_theta, a.rope_scaling)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = (y @ p[n + "self_attn.v_proj.weight"].T).view(B, T, Hkv, D).transpose(1, 2)
        y = causal_attention(q, k, v).transpose(1, 2).reshape(B, T, H * D)
        h = h + y @ p[n + "self_attn.o_proj.weight"].T
        y = rms_norm(h, p[n + "post_attention_layernorm.weight"], a.norm_eps)
        y = F.silu(y @ p[n + "mlp.gate_proj.weight"].T) * (y @ p[n + "mlp.up_proj.weight"].T)
        h = h + y @ p[n + "mlp.down_proj.weight"].T
    h = rms_norm(h, p["model.norm.weight"], a.norm_eps)
    head = p["model.embed_tokens.weight"] if a.tie_embeddings else p["lm_head.weight"]
    return h @ head.T


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=["gpt2", "llama"], required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=None)
    ap.add_argument("--ffn-hidden", type=int, default=None)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--max-seq-len", type=int, default=64)
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--rope-scaling", type=float, nargs=4, metavar=("FACTOR", "LOW", "HIGH", "ORIGINAL"),
                    help="llama: Llama 3 rope scaling (factor, low_freq_factor, high_freq_factor, "
                         "original_max_position_embeddings)")
    ap.add_argument("--norm-eps", type=float, default=1e-5)
    ap.add_argument("--tie-embeddings", action="store_true", help="llama: share lm_head with embed_tokens")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--betas", type=float, nargs=2, default=[0.9, 0.95])
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    a.kv_heads = a.kv_heads or a.heads
    a.ffn_hidden = a.ffn_hidden or 4 * a.hidden
    assert a.hidden % a.heads == 0 and a.heads % a.kv_heads == 0 and a.seq <= a.max_seq_len

    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(a.seed)
    params = gpt2_params(a, g) if a.arch == "gpt2" else llama_params(a, g)
    forward = gpt2_forward if a.arch == "gpt2" else llama_forward
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=g)
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    initial = {k: v.detach().clone() for k, v in params.items()}

    logits = forward(params, a, x)
    loss = F.cross_entropy(logits.reshape(-1, a.vocab), y.reshape(-1))
    loss.backward()
    grads = {k: v.grad.detach().clone() for k, v in params.items()}

    # K AdamW steps from the same initial parameters.
    train = {k: v.clone().requires_grad_(True) for k, v in initial.items()}
    decay = [v for v in train.values() if v.dim() >= 2]
    no_decay = [v for v in train.values() if v.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=tuple(a.betas), eps=a.eps)
    losses, norms = [], []
    for _ in range(a.steps):
        opt.zero_grad()
        l = F.cross_entropy(forward(train, a, x).reshape(-1, a.vocab), y.reshape(-1))
        losses.append(l.item())
        l.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(list(train.values()), a.grad_clip).item())
        opt.step()

    with h5py.File(a.out, "w") as f:
        root = {"arch": a.arch, "layers": a.layers, "hidden": a.hidden, "heads": a.heads, "vocab": a.vocab,
                "max_seq_len": a.max_seq_len, "norm_eps": a.norm_eps, "batch": a.batch, "seq": a.seq, "seed": a.seed,
                "layout": "every 2-D weight is (out_features, in_features), as torch.nn.Linear stores it"}
        if a.arch == "llama":
            root.update({"kv_heads": a.kv_heads, "ffn_hidden": a.ffn_hidden, "rope_theta": a.rope_theta})
            if a.rope_scaling:
                for key, value in zip(["factor", "low_freq_factor", "high_freq_factor",
                                       "original_max_position_embeddings"], a.rope_scaling):
                    root["rope_scaling_" + key] = value
        for k, v in root.items():
            f.attrs[k] = v
        for k, v in initial.items():
            f[f"params/{k}"] = v.numpy()
        f["batch/x"] = x.numpy().astype(np.int32)
        f["batch/y"] = y.numpy().astype(np.int32)
        f["forward/logits"] = logits.detach().numpy()
        f["forward/loss"] = np.float32(loss.item())
        for k, v in grads.items():
            f[f"grads/{k}"] = v.numpy()
        f["train/losses"] = np.array(losses, dtype=np.float32)
        f["train/grad_norm"] = np.array(norms, dtype=np.float32)
        for k, v in train.items():
            f[f"train/params_after/{k}"] = v.detach().numpy()
        t = f["train"]
        t.attrs.update({"lr": a.lr, "betas": np.array(a.betas), "eps": a.eps, "weight_decay": a.weight_decay,
                        "grad_clip": a.grad_clip, "weight_decay_applies_to": "tensors with ndim >= 2 only",
                        "note": "losses[i] is the loss before step i; grad_norm[i] is the pre-clip global L2 norm at step i"})
    print(f"wrote {a.out}: {a.arch}, {sum(v.numel() for v in initial.values())} parameters, loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
