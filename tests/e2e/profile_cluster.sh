#!/usr/bin/env bash
# hetu profile under mpirun, one rank per device, all measuring at once.
# 1. configs/emulated-hetero-cpu.toml (rehearsed: rank 0 drives "fast", rank 1 "slow", a CPU at
#    emulate_slowdown 2 behind an emulated 1 Gb/s, 200 us link): the slow type's per-layer
#    times are about twice the fast type's (generous bounds: the machine is shared), the
#    activations per layer and the AdamW step's parameter count are the same on both and
#    match the model (counted here from its shape), and the link between the nodes is
#    measured near the emulated 1 Gb/s and at least its 200 us (more when the machine is busy).
# 2. Two CPUs on one node: tp 1 and tp 2 are profiled (tp 2 by both ranks, keeping about half
#    the activations), and the p2p and all_reduce links within the node are measured; its
#    HETU_WAIT_TRACE shows every collective of a tp-2 pass inside a timed piece.
# usage: profile_cluster.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work profile

mpirun -np 2 --bind-to none "$hetu" profile "$src/configs/emulated-hetero-cpu.toml" --out "$work/hetero.toml" \
  > "$work/hetero.log" 2>&1 || { cat "$work/hetero.log"; fail "mpirun -np 2 hetu profile of the emulated job"; }
grep -q "node slow (1x cpu-slow) computes 2x slower" "$work/hetero.log" || fail "profile does not print the emulation"
/usr/bin/python3 - "$work/hetero.toml" <<'PY' || { cat "$work/hetero.toml"; fail "the emulated profile is off"; }
import sys, tomllib
p = tomllib.load(open(sys.argv[1], "rb"))
entries = {(e["device_type"], e["tp"], e["micro_batch"]): e for e in p["profile"]}
assert sorted(entries) == sorted((t, 1, mb) for t in ("cpu", "cpu-slow") for mb in (1, 2, 4)), sorted(entries)
# GPT-2, vocab 256, hidden 128, 4 layers, 128 positions: wte + wpe + 4 x (12 h^2 + 13 h) + final norm.
h = 128
params = 256 * h + 128 * h + 4 * (12 * h * h + 13 * h) + 2 * h
fast = slow = 0.0
for mb in (1, 2, 4):
    f, s = entries[("cpu", 1, mb)], entries[("cpu-slow", 1, mb)]
    fast += f["layer_forward_s"] + f["layer_backward_s"]
    slow += s["layer_forward_s"] + s["layer_backward_s"]
    assert f["layer_activation_bytes"] == s["layer_activation_bytes"] > 0, (f, s)
    assert f["optimizer_params"] == s["optimizer_params"] == params, (f["optimizer_params"], params)
    assert f["optimizer_s"] > 0 and s["optimizer_s"] > 0
# Activations grow with the micro-batch: 4 sequences keep 4x what 1 keeps (within 10%).
a1, a4 = entries[("cpu", 1, 1)]["layer_activation_bytes"], entries[("cpu", 1, 4)]["layer_activation_bytes"]
assert 3.6 < a4 / a1 < 4.4, (a1, a4)
ratio = slow / fast
print(f"slow / fast layer time {ratio:.2f} (emulate_slowdown 2)")
assert 1.3 < ratio < 3.0, ratio
links = {(l["kind"], l["scope"]): l for l in p["link"]}
p2p = links[("p2p", "between")]
assert sorted(p2p["hosts"]) == ["fast", "slow"], p2p
print(f"link fast-slow: {p2p['gbps']:.3f} Gb/s, {p2p['latency_us']:.0f} us (emulated 1 Gb/s, 200 us)")
assert 0.4 < p2p["gbps"] < 1.6, p2p
# Latency: at least the emulated 200 us (an unemulated message here takes ~10 us), and on a
# busy machine a woken sleeper may wait a scheduler tick or more (4 ms seen under load 10).
assert 150 < p2p["latency_us"] < 20000, p2p
ring = links[("all_reduce", "between")]
assert ring["ranks"] == 2 and 0.3 < ring["gbps"] < 1.6 and ring["latency_us"] > 150, ring
PY
# hetu plan reads it.
"$hetu" plan --evaluate --profile "$work/hetero.toml" "$src/configs/emulated-hetero-cpu.toml" > "$work/plan.log" 2>&1 \
  || { cat "$work/plan.log"; fail "hetu plan --profile does not read the mpirun profile"; }

# Two CPUs on one node: tp 2 and the links within the node.
sed -e '/^\[cluster\]/,$d' "$src/configs/emulated-hetero-cpu.toml" > "$work/one-node.toml"
printf '[cluster]\n[[cluster.node]]\nhost = "localhost"\ndevices = { type = "cpu", count = 2 }\n' >> "$work/one-node.toml"
mkdir "$work/trace"
HETU_WAIT_TRACE="$work/trace" mpirun -np 2 --bind-to none "$hetu" profile "$work/one-node.toml" \
  --out "$work/one-node-profile.toml" > "$work/one-node.log" 2>&1 \
  || { cat "$work/one-node.log"; fail "mpirun -np 2 hetu profile on one node"; }
/usr/bin/python3 - "$work/one-node-profile.toml" <<'PY' || { cat "$work/one-node-profile.toml"; fail "the one-node profile is off"; }
import sys, tomllib
p = tomllib.load(open(sys.argv[1], "rb"))
entries = {(e["tp"], e["micro_batch"]): e for e in p["profile"]}
assert sorted(entries) == [(tp, mb) for tp in (1, 2) for mb in (1, 2, 4)], sorted(entries)
for mb in (1, 2, 4):
    one, two = entries[(1, mb)], entries[(2, mb)]
    assert one["ranks"] == 2 and two["ranks"] == 2, (one, two)
    # Each tp rank keeps its shard of the MLP and attention (the norms' inputs are whole).
    share = two["layer_activation_bytes"] / one["layer_activation_bytes"]
    assert 0.4 < share < 0.9, share
    assert two["optimizer_params"] < one["optimizer_params"]
kinds = sorted((l["kind"], l["scope"]) for l in p["link"])
assert kinds == [("all_reduce", "within"), ("p2p", "within")], kinds
assert all(l["hosts"] == ["localhost"] and l["gbps"] > 0 for l in p["link"]), p["link"]
PY
# HETU_WAIT_TRACE (lib/util/wait_trace.h): per rank, every tp-2 pass's collectives happen inside
# its timed pieces (none is left out of the entry), the pieces lie within the pass and add up to
# it but for the untimed glue between them, and both ranks wait on as many collectives. Every
# timed pass comes right after a settling pass of its own tp and micro-batch, not after the
# AdamW step or another size (a training step's micro-batches after its first follow one of
# their size; Note [Profile windows]), and the tp degrees take their windows in turns, 3 rounds
# (interleaving).
/usr/bin/python3 - "$work/trace" <<'PY' || fail "the wait trace of the tp-2 profile is off"
import glob, sys
counts = {}
for path in sorted(glob.glob(sys.argv[1] + "/wait.*.txt")):
    rank = path.split("/")[-1].split(".")[1]
    passes, piece, current, order = [], None, None, []
    for f in (line.split() for line in open(path)):
        if f[0] == "M" and f[2] == "begin" and (f[1] in ("pass", "settle") or f[1:4] == ["piece", "begin", "4"]):
            order.append((f[1], f[3], f[4]))  # pass / settle: tp, micro-batch; piece 4: the AdamW step
        if f[0] == "M" and f[1] == "pass" and f[2] == "begin":
            current = {"begin": float(f[5]), "tp": int(f[3]), "pieces": 0.0, "waits": 0, "outside": 0}
        elif f[0] == "M" and f[1] == "pass" and f[2] == "end":
            current["end"] = float(f[5])
            passes.append(current)
            current = None
        elif f[0] == "M" and f[1] == "piece" and f[2] == "begin":
            piece = float(f[5])
        elif f[0] == "M" and f[1] == "piece" and f[2] == "end":
            if current is not None:
                assert current["begin"] <= piece <= float(f[5]) <= current["begin"] + 60, (piece, f)
                current["pieces"] += float(f[5]) - piece
            piece = None
        elif f[0] == "W" and current is not None:
            current["waits"] += 1
            current["outside"] += piece is None
    tp2 = [p for p in passes if p["tp"] == 2]
    assert len(tp2) == 3 * 14, len(tp2)  # micro-batches 1, 2, 4 x (3 rounds' warm-ups + 11 measured windows)
    timed = [i for i, e in enumerate(order) if e[0] == "pass"]
    degrees = [order[i][1] for i in timed]
    turns = sum(a != b for a, b in zip(degrees, degrees[1:]))
    assert turns == 2 * 3 - 1, (turns, degrees)  # tp 1, tp 2, tp 1, tp 2, tp 1, tp 2
    assert len(timed) == 2 * 3 * 14 and all(i > 0 and order[i - 1] == ("settle",) + order[i][1:] for i in timed), \
        [order[i - 1:i + 1] for i in timed if i == 0 or order[i - 1] != ("settle",) + order[i][1:]][:3]
    for p in tp2:
        assert p["waits"] > 0 and p["outside"] == 0, p
        wall = p["end"] - p["begin"]
        assert 0.5 * wall < p["pieces"] <= wall, p
    counts[rank] = [p["waits"] for p in tp2]
assert sorted(counts) == ["0", "1"] and counts["0"] == counts["1"], counts
print(f"wait trace: {counts['0'][-1]} collectives in a tp-2 pass, all inside timed pieces")
PY
/usr/bin/python3 "$src/scripts/bench/tp_wait_trace.py" "$work/trace" > "$work/trace.txt" \
  && grep -q "^profile" "$work/trace.txt" || { cat "$work/trace.txt"; fail "tp_wait_trace.py reads no profile"; }
/usr/bin/python3 "$src/scripts/bench/first_pass_trace.py" "$work/trace" > "$work/first.txt" \
  && grep -q "profile tp 2 micro-batch 1: settling pass (after the AdamW step)" "$work/first.txt" \
  || { cat "$work/first.txt"; fail "first_pass_trace.py reads no settling pass"; }
echo "PASS profile cluster"
