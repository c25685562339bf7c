"""GPT-2 and LLaMA forward passes in plain PyTorch over Hugging Face state dicts and
config.json, written from the published architectures (no `transformers` needed), in
float64 so that comparisons measure the other implementation's error alone.

GPT-2 (HF GPT2LMHeadModel): names with or without "transformer.", Conv1D weights stored
(in, out), GELU tanh, LayerNorm, LM head tied to wte. LLaMA (HF LlamaForCausalLM): RMSNorm,
rotary embeddings in HF's rotate_half form (dimension i pairs with i + head_dim/2), grouped
-query attention (kv head j serves query heads j*g .. j*g+g-1), SwiGLU, lm_head or tied,
config.json's rope_scaling of type llama3.

    logits = forward(config, state_dict, ids)   # ids (B, T) int64 -> (B, T, vocab_size) f64
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

# Llama 3's rope scaling, as written (independently of hetu) in scripts/make_reference.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from make_reference import llama3_scaled  # noqa: E402


def causal_attention(q, k, v):
    """q (B, H, T, D), k and v (B, H, T, D) -> (B, H, T, D)."""
    T, D = q.shape[2], q.shape[3]
    scores = q @ k.transpose(-1, -2) / math.sqrt(D)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v


def gpt2_forward(cfg, sd, ids):
    p = {(k[len("transformer."):] if k.startswith("transformer.") else k): v.double() for k, v in sd.items()}
    C, H, eps = cfg["n_embd"], cfg["n_head"], cfg.get("layer_norm_epsilon", 1e-5)
    B, T = ids.shape
    ln = lambda x, n: F.layer_norm(x, (C,), p[n + ".weight"], p[n + ".bias"], eps)
    conv1d = lambda x, n: x @ p[n + ".weight"] + p[n + ".bias"]  # weight (in, out)
    x = p["wte.weight"][ids] + p["wpe.weight"][:T]
    for i in range(cfg["n_layer"]):
        h = f"h.{i}."
        q, k, v = conv1d(ln(x, h + "ln_1"), h + "attn.c_attn").split(C, dim=-1)
        heads = lambda t: t.view(B, T, H, C // H).transpose(1, 2)
        y = causal_attention(heads(q), heads(k), heads(v)).transpose(1, 2).reshape(B, T, C)
        x = x + conv1d(y, h + "attn.c_proj")
        m = F.gelu(conv1d(ln(x, h + "ln_2"), h + "mlp.c_fc"), approximate="tanh")
        x = x + conv1d(m, h + "mlp.c_proj")
    return ln(x, "ln_f") @ p["wte.weight"].T


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def llama_forward(cfg, sd, ids):
    p = {k: v.double() for k, v in sd.items()}
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads", H)
    D, eps, theta = C // H, cfg.get("rms_norm_eps", 1e-6), cfg.get("rope_theta", 10000.0)
    scaling = cfg.get("rope_scaling")
    B, T = ids.shape
    rms = lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    inv_freq = 1.0 / theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D)
    if scaling:  # HF config.json's field names
        if scaling.get("rope_type", scaling.get("type")) != "llama3":
            raise ValueError(f"rope_scaling {scaling} is not implemented here")
        inv_freq = llama3_scaled(inv_freq, scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"],
                                 scaling["original_max_position_embeddings"])
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    rope = lambda t: t * cos + rotate_half(t) * sin
    x = p["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        h = f"model.layers.{i}."
        n = rms(x, p[h + "input_layernorm.weight"])
        proj = lambda name, heads: (n @ p[h + f"self_attn.{name}.weight"].T).view(B, T, heads, D).transpose(1, 2)
        q, k, v = rope(proj("q_proj", H)), rope(proj("k_proj", Hkv)), proj("v_proj", Hkv)
        k, v = k.repeat_interleave(H // Hkv, dim=1), v.repeat_interleave(H // Hkv, dim=1)
        y = causal_attention(q, k, v).transpose(1, 2).reshape(B, T, H * D)
        x = x + y @ p[h + "self_attn.o_proj.weight"].T
        m = rms(x, p[h + "post_attention_layernorm.weight"])
        gated = F.silu(m @ p[h + "mlp.gate_proj.weight"].T) * (m @ p[h + "mlp.up_proj.weight"].T)
        x = x + gated @ p[h + "mlp.down_proj.weight"].T
    x = rms(x, p["model.norm.weight"])
    head = p["lm_head.weight"] if "lm_head.weight" in p else p["model.embed_tokens.weight"]
    return x @ head.T


def forward(cfg, sd, ids):
    if cfg["model_type"] == "gpt2":
        return gpt2_forward(cfg, sd, ids)
    if cfg["model_type"] == "llama":
        return llama_forward(cfg, sd, ids)
    raise ValueError(f"model_type {cfg['model_type']}")
