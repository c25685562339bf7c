#!/usr/bin/env python3
"""Writes a catalogue-only `hetu plan` job: LLaMA-2 7B on nodes of 8 GPUs of four types
(A100-80G, H100-80G, V100-32G, L40; the last two from configs/catalogs/datacenter-gpus.toml),
NODES nodes of each type, with inter-node networks that differ by node (H100 nodes 400 Gb/s,
the first half of the A100 nodes 200 Gb/s and the rest 100, L40 nodes 100, V100 nodes 50).

  scripts/bench/make_plan_job.py 32 configs/plan-1024-gpus.toml     # 1,024 devices
  scripts/bench/make_plan_job.py 4 tests/data/plan-128-gpus.toml    # 128 devices (CI)
"""
import os
import sys

nodes_per_type, out = int(sys.argv[1]), sys.argv[2]
catalog = os.path.relpath("configs/catalogs/datacenter-gpus.toml", os.path.dirname(out) or ".")
devices = 4 * 8 * nodes_per_type
lines = [
    f"# LLaMA-2 7B planned on {devices} GPUs of four types, {nodes_per_type} nodes of 8 per type, whose",
    "# inter-node networks differ (link_gbps). Catalogue only: `hetu plan` plans it, nothing trains.",
    f"# Written by scripts/bench/make_plan_job.py {nodes_per_type} {out}; timed by scripts/bench/plan_search.sh.",
    "",
    "[job]",
    f'name = "plan-{devices}-gpus"',
    "",
    "[model]",
    'arch = "llama"',
    'flavor = "7b"',
    "",
    "[data]",
    'train = "data/none/train_*.bin"',
    'tokenizer = "none"',
    "",
    "[training]",
    "steps = 1",
    "global_batch = 1024",
    "seq_len = 4096",
    "micro_batch = 1",
    'precision = "bf16"',
    "",
    "[cluster]",
    f'device_catalog = "{catalog}"',
]
types = [("h100", "H100-80G", lambda i: 400), ("a100", "A100-80G", lambda i: 200 if i < nodes_per_type // 2 else 100),
         ("l40", "L40", lambda i: 100), ("v100", "V100-32G", lambda i: 50)]
for prefix, name, gbps in types:
    for i in range(nodes_per_type):
        lines += ["", "[[cluster.node]]", f'host = "{prefix}-{i}"', f'devices = {{ type = "{name}", count = 8 }}',
                  f"link_gbps = {gbps(i)}", "link_latency_us = 10"]
lines += ["", "[parallel]", f"dp = {devices // 8}", "tp = 8", ""]
tmp = out + ".tmp"
with open(tmp, "w") as f:
    f.write("\n".join(lines))
os.replace(tmp, out)
