#!/usr/bin/python3
"""Converts a measured set in Sailor's formats (the layout of tests/data/sailor-gh200, its README
explains every field) into hetu's: a profile (lib/profile/profile_file.h) with one [[profile]]
per (GPU type, micro-batch, tp) and the network fits as [[link]] curves keyed by the pair of GPU
types and how many GPUs of each node take part, a device catalogue with the set's GPU types
(peaks from hetu's builtin table, lib/config/builtin_devices.toml; memory from the set), and one
job file per measured plan with its layout as explicit [parallel] groups. Python standard library.

  scripts/sailor_to_hetu.py DIR OUT
  # DIR: training_config_*.json, llm_info_*.json, profile_*.json (one or several, merged),
  #      cluster_config.json, network/*.json, plans/*.json
  # OUT/profile.toml, OUT/catalog.toml, OUT/jobs/<plan>.toml, OUT/measured.json

Sailor's layers 0..L+1 are hetu's embedding, blocks 0..L-1 and head (final norm, LM head, loss).
Each piece's times are smoothed over micro-batch sizes (Note [Sailor's small micro-batches]).
Nothing is assumed that the files do not state, except what is written here: the per-GPU
memory the measured framework holds outside the model's tensors (RESERVED_BYTES) and the job's
precision (the best hetu runs on every GPU of the plan: bf16, else fp16, else fp32; the catalogue
says which a type has).
Errors name the file and the field and exit 2.
"""
import glob
import json
import os
import sys
import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILTIN_DEVICES = os.path.join(REPO, "lib", "config", "builtin_devices.toml")
# Sailor's names for GPU types hetu's catalogue names otherwise; any other name is looked up as
# it is (RTX-2080, RTX-3090, Titan-RTX are the catalogue's names too).
SAILOR_NAMES = {"GH-96": "GH200-96G", "A100-40": "A100-40G", "A100-80": "A100-80G", "V100-16": "V100-16G",
                "V100-32": "V100-32G", "H100-80": "H100-80G"}
# Sailor's simulator states a fixed per-GPU memory besides the model's tensors (runtime_simulator.py,
# get_memory_footprint_on_gpu: 4.76 GB "for fused kernel loading, depends on GPU + platform"
# + 300 MB); the sets have no measurement of it, so the profile carries that figure.
RESERVED_BYTES = 4.76e9 + 300e6


def fail(message):
    sys.stderr.write(f"sailor_to_hetu: {message}\n")
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        fail(f"{path}: {error}")


def field(obj, key, where):
    """obj[key], or a named error: `where` is "file: path" of obj."""
    if not isinstance(obj, dict) or key not in obj:
        fail(f"{where}: no field {key!r}")
    return obj[key]


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def mean(values):
    return sum(values) / len(values)


def one_file(data, pattern):
    found = sorted(glob.glob(os.path.join(data, pattern)))
    if len(found) != 1:
        fail(f"{data}: expected one {pattern}, found {len(found)}{': ' + ', '.join(found) if found else ''}")
    return found[0]


class MeasuredSet:
    """The files of one set, loaded and cross-checked."""

    def __init__(self, data):
        self.data = data
        self.training_path = one_file(data, "training_config_*.json")
        t = load(self.training_path)
        w = self.training_path
        self.model = field(t, "model", w)
        self.kind = field(t, "type", w)
        if self.kind != "gpt2":
            fail(f"{w}: type {self.kind!r}: only GPT-2-type models (type \"gpt2\") are converted")
        self.hidden = field(t, "hidden_size", w)
        self.blocks = field(t, "num_layers", w)
        self.heads = field(t, "heads", w)
        self.vocab = field(t, "vocab_size", w)
        self.seq_len = field(t, "sequence_length", w)
        self.max_positions = field(t, "max_position_embeddings", w)
        self.num_layers = field(t, "num_all_layers", w)
        if self.num_layers != self.blocks + 2:
            fail(f"{w}: num_all_layers {self.num_layers} != num_layers {self.blocks} + embedding + head")
        if "head_dim" in t and t["head_dim"] * self.heads != self.hidden:
            fail(f"{w}: heads {self.heads} x head_dim {t['head_dim']} != hidden_size {self.hidden}")

        self.llm_path = one_file(data, "llm_info_*.json")
        self.memory = field(load(self.llm_path), self.model, self.llm_path)  # [tp][layer]
        self.timing, self.profile_paths = {}, {}  # [gpu][mbs][tp][layer], the file of each gpu
        profiles = sorted(glob.glob(os.path.join(data, "profile_*.json")))
        if not profiles:
            fail(f"{data}: no profile_*.json")
        for path in profiles:
            for gpu, by_mbs in field(load(path), self.model, path).items():
                if gpu in self.timing:
                    fail(f"{path}: GPU type {gpu} is also in {self.profile_paths[gpu]}")
                self.timing[gpu], self.profile_paths[gpu] = by_mbs, path

        self.cluster_path = os.path.join(data, "cluster_config.json")
        self.cluster = load(self.cluster_path)
        self.zone = field(self.cluster, "zone", self.cluster_path)
        self.inter, self.intra = None, None
        for path in sorted(glob.glob(os.path.join(data, "network", "*.json"))):
            fits = load(path)
            if self.zone in fits:
                self.inter, self.inter_path = fits, path  # [zone][gpu][count][zone][gpu][count]
            elif fits and all(isinstance(v, dict) and all(isinstance(c, list) for c in v.values()) for v in fits.values()):
                self.intra, self.intra_path = fits, path  # [gpu][count]
        if self.inter is None:
            fail(f"{data}/network: no fits between nodes (a file whose top keys are zones, one of them {self.zone!r})")
        if self.intra is None:
            fail(f"{data}/network: no fits within a node (a file of [gpu][count] = [[c2, c1, c0], max bytes/s])")
        self.plans = sorted(glob.glob(os.path.join(data, "plans", "*.json")))
        if not self.plans:
            fail(f"{data}/plans: no plans")
        catalog = tomllib.load(open(BUILTIN_DEVICES, "rb"))["device"]
        self.catalog = {d["name"]: d for d in catalog}

    def catalog_entry(self, gpu, where):
        """The builtin catalogue's entry for Sailor's GPU name, or a named error."""
        entry = self.catalog.get(SAILOR_NAMES.get(gpu, gpu))
        if entry is None or entry.get("kind") != "gpu":
            fail(f"{where}: GPU type {gpu!r} is not in hetu's catalogue ({BUILTIN_DEVICES}: "
                 f"{', '.join(n for n, d in self.catalog.items() if d.get('kind') == 'gpu')})")
        return entry

    def gpus_per_node(self, gpu, where):
        return field(field(self.cluster, gpu, f"{self.cluster_path} (for {where})"), "gpus_per_node", self.cluster_path)


# Note [Sailor's small micro-batches]: Sailor times each layer alone, one measurement per
# (micro-batch, tp). At tp 4 and micro-batches of 1-4 sequences a layer's GPU work is tens of
# microseconds and its time is the fixed cost of launching its kernels and collectives, and
# there the entries are noisy: on GH200 (OPT-350M) the micro-batch-1 embedding forward takes
# 0.97 ms against micro-batch 2's 0.46, the head forward 2.40 against 1.63, and a block's forward
# is 1.70 ms at both 2 and 4 sequences. The measured jobs do not follow those entries: per
# micro-batch of one tp-4 GPU, the one-stage jobs (iteration minus the predicted gradient sync
# and AdamW, over their micro-batches) take 71 ms at 1 sequence (N1_D1_M4_G32; the profile sums
# to 82.5), 93 at 2 (N2_D2; profile 88.7), 143 at 4 (N4_D4; profile 126) and 221-225 at 8
# (N16_D16, N32_D32; profile 231): a fixed cost plus a cost per sequence, close to a line,
# which no single entry gives. So each piece's time at micro-batch m is the least-squares line
# (fixed + per sequence) through that piece's entries of the same GPU type and tp at the sizes
# within a factor of 4 of m (the two nearest sizes on each side), evaluated at m; with one
# size alone, its entry. The factor is the one free choice and was chosen on the GH200 set
# (scripts/bench/plan_real.sh, time error mean / max over the 15 plans): 1 (no smoothing)
# 5.0% / 15.8%; 2 the same (a line through two sizes is each entry again); 4 5.1% / 10.7%;
# 8 6.5% / 12.2% (it carries the slope of the throughput-bound sizes 16-64 down to 8). No plan
# has its own term.
SMOOTHING_FACTOR = 4
TIME_KEYS = ("layer_forward_s", "layer_backward_s", "embed_forward_s", "embed_backward_s",
             "head_forward_s", "head_backward_s")


def least_squares_at(xs, ys, x):
    """The line (a + b x) through the points (xs, ys) by least squares, at x."""
    mx, my = mean(xs), mean(ys)
    sxx = sum((xi - mx) ** 2 for xi in xs)
    b = sum((xi - mx) * (yi - my) for xi, yi in zip(xs, ys)) / sxx
    return my + b * (x - mx)


def smooth_over_micro_batches(entries):
    """Each entry's times replaced by the line through its type's and tp's entries within a
    factor of SMOOTHING_FACTOR in micro-batch size (Note [Sailor's small micro-batches])."""
    out = []
    for e in entries:
        near = [o for o in entries if o["device_type"] == e["device_type"] and o["tp"] == e["tp"] and
                e["micro_batch"] <= SMOOTHING_FACTOR * o["micro_batch"] and
                o["micro_batch"] <= SMOOTHING_FACTOR * e["micro_batch"]]
        smoothed = dict(e)
        if len(near) >= 2:
            xs = [o["micro_batch"] for o in near]
            for key in TIME_KEYS:
                value = least_squares_at(xs, [o[key] for o in near], e["micro_batch"])
                smoothed[key] = value if value > 0 else e[key]
        out.append(smoothed)
    return out


def profile_entries(s, gpu, precision):
    """One [[profile]] per (micro-batch, tp) of `gpu`: block times averaged over the blocks; the
    parameters and activation bytes per device from llm_info at the entry's tp."""
    where = s.profile_paths[gpu]
    out = []
    for mbs in sorted(s.timing[gpu], key=int):
        for tp in sorted(s.timing[gpu][mbs], key=int):
            layers = s.timing[gpu][mbs][tp]
            if sorted(map(int, layers)) != list(range(s.num_layers)):
                fail(f"{where}: {s.model}.{gpu}.{mbs}.{tp}: layers {sorted(map(int, layers))}, expected 0..{s.num_layers - 1}")
            rows = [layers[str(i)] for i in range(s.num_layers)]
            updates = {row[2] for row in rows}
            if len(updates) != 1:
                fail(f"{where}: {s.model}.{gpu}.{mbs}.{tp}: optimizer times differ between layers ({sorted(updates)})")
            blocks = rows[1:-1]
            entry = {
                "device_type": gpu, "micro_batch": int(mbs), "seq_len": s.seq_len, "precision": precision,
                "tp": int(tp),
                "layer_forward_s": mean([r[0] for r in blocks]), "layer_backward_s": mean([r[1] for r in blocks]),
                "embed_forward_s": rows[0][0], "embed_backward_s": rows[0][1],
                "head_forward_s": rows[-1][0], "head_backward_s": rows[-1][1],
            }
            if rows[0][2] > 0:  # 0: not measured (the estimate's AdamW)
                entry["optimizer_s"] = rows[0][2]
            if tp in s.memory:  # measured at micro-batch 1; activations grow with the micro-batch
                mem = s.memory[tp]
                if sorted(map(int, mem)) != list(range(s.num_layers)):
                    fail(f"{s.llm_path}: {s.model}.{tp}: layers {sorted(map(int, mem))}, expected 0..{s.num_layers - 1}")
                act = [mem[str(i)]["act_mem_bytes"] for i in range(s.num_layers)]
                entry["layer_activation_bytes"] = int(mbs) * mean(act[1:-1])
                entry["embed_activation_bytes"] = int(mbs) * act[0]
                entry["head_activation_bytes"] = int(mbs) * act[-1]
            # The measured jobs' LM head is unfused: its backward holds the bf16 logits and their
            # gradient, split over tp (an unmeasured figure, stated from the model's shape).
            entry["head_workspace_bytes"] = 2 * 2 * int(mbs) * s.seq_len * s.vocab / int(tp)
            entry["reserved_bytes"] = RESERVED_BYTES
            out.append(entry)
    return out


def toml_value(v):
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return repr(float(v))


def table(header, fields):
    return f"\n[[{header}]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in fields.items())


def link_tables(s, gpus):
    """[[link]] curves: between nodes per (type, GPUs taking part, peer type, peer's GPUs), within a
    node per (type, GPUs taking part); only for the set's GPU types."""
    out = []
    by_type = s.inter[s.zone]
    for a in gpus:
        for count, peers in sorted(by_type.get(a, {}).items(), key=lambda kv: int(kv[0])):
            for b in gpus:
                for peer_count, fit in sorted(peers.get(s.zone, {}).get(b, {}).items(), key=lambda kv: int(kv[0])):
                    (c2, c1, c0), cap = fit
                    out.append(table("link", {"scope": "between", "device_type": a, "gpus": int(count), "peer_type": b,
                                              "peer_gpus": int(peer_count), "bandwidth_gbs_poly": [c2, c1, c0],
                                              "max_bytes_per_s": cap}))
        for count, fit in sorted(s.intra.get(a, {}).items(), key=lambda kv: int(kv[0])):
            (c2, c1, c0), cap = fit
            out.append(table("link", {"scope": "within", "device_type": a, "gpus": int(count),
                                      "bandwidth_gbs_poly": [c2, c1, c0], "max_bytes_per_s": cap}))
    return "".join(out)


def stage_layers(sailor_layers, num_blocks, where):
    """Sailor's layer indices of one stage -> hetu's block range "a-b" (the ends go with it)."""
    blocks = [i - 1 for i in sailor_layers if 1 <= i <= num_blocks]
    if not blocks or blocks != list(range(blocks[0], blocks[-1] + 1)):
        fail(f"{where}: stage layers {sailor_layers}: not a contiguous range of blocks")
    return f"{blocks[0]}-{blocks[-1]}"


def plan_layout(s, path, plan):
    """The plan's nodes [(gpu, count)] and replicas [[(node indices, layers "a-b", tp)]]: every
    stage replica's tp group on nodes of its own, in plan order."""
    nodes, replicas = [], []
    pipelines = field(plan, "pipeline_list", path)
    for p, pipe in enumerate(pipelines):
        w = f"{path}: pipeline_list[{p}]"
        stages, dps, tmps = field(pipe, "layers_per_stage", w), field(pipe, "dp", w), field(pipe, "tmp_per_stage", w)
        if len(dps) != len(stages) or len(tmps) != len(stages):
            fail(f"{w}: {len(stages)} layers_per_stage, {len(dps)} dp, {len(tmps)} tmp_per_stage")
        if len(set(dps)) != 1:
            fail(f"{w}.dp: {dps}: stages with different replica counts are not converted")
        covered = sorted(i for st in stages for i in st)
        if covered != list(range(s.num_layers)):
            fail(f"{w}.layers_per_stage: layers {covered}, expected each of 0..{s.num_layers - 1} once")
        for r in range(dps[0]):
            replica = []
            for st, (layers, stage_tmps) in enumerate(zip(stages, tmps)):
                ws = f"{w}.tmp_per_stage[{st}]"
                if len(stage_tmps) != dps[0]:
                    fail(f"{ws}: {len(stage_tmps)} replicas, dp says {dps[0]}")
                vms, tp = stage_tmps[r]
                group = []
                for vm in vms:
                    gpu, count, zone = vm
                    if zone != s.zone:
                        fail(f"{ws}[{r}]: zone {zone!r}; the set's cluster_config.json is zone {s.zone!r}")
                    if gpu not in s.timing:
                        fail(f"{ws}[{r}]: GPU type {gpu!r} is not in the profiles "
                             f"({', '.join(sorted(set(s.profile_paths.values())))}: {', '.join(sorted(s.timing))})")
                    s.catalog_entry(gpu, f"{ws}[{r}]")
                    if count > s.gpus_per_node(gpu, f"{ws}[{r}]"):
                        fail(f"{ws}[{r}]: {count} {gpu} GPUs on a node; cluster_config.json says "
                             f"{s.gpus_per_node(gpu, ws)} per node")
                    group.append(len(nodes))
                    nodes.append((gpu, count))
                if tp != sum(vm[1] for vm in vms):
                    fail(f"{ws}[{r}]: tp {tp} over {sum(vm[1] for vm in vms)} GPUs ({vms})")
                replica.append((group, stage_layers(layers, s.blocks, f"{ws}"), tp))
            replicas.append(replica)
    if len(nodes) != field(plan, "N", path):
        fail(f"{path}: N: the plan's tp groups take {len(nodes)} nodes, N says {plan['N']}")
    mbs, gbs = field(plan, "mbs", path), field(plan, "gbs", path)
    if gbs % (mbs * len(replicas)) != 0:
        fail(f"{path}: gbs: {gbs} sequences are not whole micro-batches of {mbs} over {len(replicas)} replicas")
    return nodes, replicas


def best_precision(entries):
    """bf16 when every catalogue entry has a bf16 path, else fp16 when every one has an fp16 path, else fp32."""
    for precision in ("bf16", "fp16"):
        if all(e.get(f"peak_tflops_{precision}", 0) > 0 for e in entries):
            return precision
    return "fp32"


def job_file(s, name, path, plan):
    """The plan's job file, its precision and its GPU types."""
    nodes, replicas = plan_layout(s, path, plan)
    types = {gpu for gpu, _ in nodes}
    precision = best_precision([s.catalog_entry(g, path) for g in types])
    lines = [
        f"# Sailor's measured job {name} ({os.path.relpath(path, s.data)} of {s.data}), converted by",
        "# scripts/sailor_to_hetu.py: each stage replica's tp group on nodes of its own, in plan order.",
        f"# measured: {plan['real']} s per iteration, peak {plan['max_mem']} bytes on the busiest GPU",
        "", "[job]", f'name = "sailor-{name}"', "", "[model]", 'arch = "gpt2"',
        f"layers = {s.blocks}", f"hidden = {s.hidden}", f"heads = {s.heads}",
        f"vocab = {s.vocab}", f"max_seq_len = {s.max_positions}",
        "", "[data]", 'train = "data/sailor/train_*.bin"', 'tokenizer = "none"',
        "", "[training]", "steps = 1", f"global_batch = {plan['gbs']}", f"seq_len = {s.seq_len}",
        f"micro_batch = {plan['mbs']}", f'precision = "{precision}"',
        "", "[cluster]", 'device_catalog = "../catalog.toml"',
    ]
    for n, (gpu, count) in enumerate(nodes):
        lines += ["[[cluster.node]]", f'host = "n{n}"', f'devices = {{ type = "{gpu}", count = {count} }}']
    for replica in replicas:
        lines += ["", "[[parallel.replica]]", 'schedule = "1f1b"']
        for group, layers, tp in replica:
            devices = "; ".join(f"n{n}:0-{nodes[n][1] - 1}" for n in group)
            lines += ["  [[parallel.replica.stage]]", f'  devices = "{devices}"', f'  layers = "{layers}"']
    return "\n".join(lines) + "\n", precision, sorted(types)


def main():
    if len(sys.argv) != 3:
        fail("usage: sailor_to_hetu.py DATA_DIR OUT_DIR")
    data, out = sys.argv[1], sys.argv[2]
    s = MeasuredSet(data)
    os.makedirs(os.path.join(out, "jobs"), exist_ok=True)

    jobs, measured, precisions = {}, {}, {}
    for path in s.plans:
        name = os.path.basename(path)[:-len(".json")].split("_plan_config_")[-1]
        plan = load(path)
        jobs[name], precision, types = job_file(s, name, path, plan)
        for gpu in types:
            precisions.setdefault(gpu, set()).add(precision)
        measured[name] = {"real_s": field(plan, "real", path), "max_mem_bytes": field(plan, "max_mem", path),
                          "nodes": plan["N"], "gpus": types}

    gpus = sorted(s.timing)
    header = (f"# hetu profile converted by scripts/sailor_to_hetu.py from Sailor's measurements of {s.model}\n"
              f"# ({data}). Times per micro-batch on one GPU of a tp group.\n")
    entries = []
    for gpu in gpus:
        # The precision the set's jobs on this type run in (a type no plan uses: its best).
        best = best_precision([s.catalog_entry(gpu, s.profile_paths[gpu])])
        entries += profile_entries(s, gpu, sorted(precisions.get(gpu, {best}))[0])
    text = header + "".join(table("profile", e) for e in smooth_over_micro_batches(entries)) + link_tables(s, gpus)
    write_atomic(os.path.join(out, "profile.toml"), text)

    catalog = ["# GPU types of the measured set: peaks from lib/config/builtin_devices.toml, memory from\n"
               f"# {s.cluster_path}.\n"]
    for gpu in gpus:
        entry = dict(s.catalog_entry(gpu, s.profile_paths[gpu]))
        entry["name"] = gpu
        entry["memory_gib"] = field(field(s.cluster, gpu, s.cluster_path), "mem_per_gpu", s.cluster_path) / 2**30
        catalog.append(table("device", entry))
    write_atomic(os.path.join(out, "catalog.toml"), "".join(catalog))
    for name, text in jobs.items():
        write_atomic(os.path.join(out, "jobs", name + ".toml"), text)
    write_atomic(os.path.join(out, "measured.json"), json.dumps(measured, indent=1, sort_keys=True) + "\n")
    print(f"sailor_to_hetu: {len(measured)} jobs of {s.model} on {', '.join(gpus)}; profile and catalogue in {out}")


if __name__ == "__main__":
    main()
