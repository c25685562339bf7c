#!/usr/bin/python3
"""The two PyTorch peers of scripts/bench/cpu_train.sh build the same model: with the weights of
scripts/bench/torch_train.py's nn.Module GPT-2 copied into scripts/bench/torch_train_functional.py's
parameter dict (its linear weights are (in, out): transposed), both give the same loss and the
same gradients on the same batch. A small model (2 layers, 64 wide, vocab 300, T 20 of 32)."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "bench"))
import torch_train as module_script  # noqa: E402
import torch_train_functional as functional_script  # noqa: E402

# functional name -> (module name, transposed)
def name_map(layers):
    m = {"wte": ("wte.weight", False), "wpe": ("wpe.weight", False), "lnf.w": ("ln_f.weight", False),
         "lnf.b": ("ln_f.bias", False)}
    for i in range(layers):
        for ours, theirs in (("ln1", "ln_1"), ("ln2", "ln_2")):
            m[f"{i}.{ours}.w"], m[f"{i}.{ours}.b"] = (f"h.{i}.{theirs}.weight", False), (f"h.{i}.{theirs}.bias", False)
        for ours, theirs in (("qkv", "attn.c_attn"), ("proj", "attn.c_proj"), ("fc", "mlp.c_fc"), ("out", "mlp.c_proj")):
            m[f"{i}.{ours}.w"], m[f"{i}.{ours}.b"] = (f"h.{i}.{theirs}.weight", True), (f"h.{i}.{theirs}.bias", False)
    return m


def main():
    a = argparse.Namespace(vocab=300, hidden=64, heads=4, layers=2, max_seq_len=32, norm_eps=1e-5)
    torch.manual_seed(0)
    model = module_script.GPT2(a).double()
    with torch.no_grad():  # away from the init's zeros and ones, so every parameter matters
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    params = {k: v.detach().double().requires_grad_(True)
              for k, v in functional_script.init_params(a, torch.Generator().manual_seed(1)).items()}
    theirs = dict(model.named_parameters())
    mapping = name_map(a.layers)
    assert sorted(mapping) == sorted(params) and sorted(n for n, _ in mapping.values()) == sorted(theirs)
    with torch.no_grad():
        for ours, (name, transposed) in mapping.items():
            params[ours].copy_(theirs[name].t() if transposed else theirs[name])
    x, y = torch.randint(0, a.vocab, (3, 20)), torch.randint(0, a.vocab, (3, 20))
    causal = torch.full((a.max_seq_len, a.max_seq_len), float("-inf"), dtype=torch.float64).triu(1)
    loss_m, loss_f = model(x, y), functional_script.loss_fn(params, a, x, y, causal)
    loss_m.backward()
    loss_f.backward()
    failures = []
    if abs(loss_m.item() - loss_f.item()) > 1e-12:
        failures.append(f"loss {loss_m.item()} vs {loss_f.item()}")
    for ours, (name, transposed) in mapping.items():
        g = theirs[name].grad.t() if transposed else theirs[name].grad
        diff = (g - params[ours].grad).abs().max().item()
        if diff > 1e-12:
            failures.append(f"gradient of {ours} ({name}) differs by {diff}")
    if failures:
        sys.exit("the two PyTorch bench scripts disagree:\n  " + "\n  ".join(failures))
    print(f"the two PyTorch bench scripts agree: loss {loss_f.item():.12f}, {len(mapping)} gradients within 1e-12")


if __name__ == "__main__":
    main()
