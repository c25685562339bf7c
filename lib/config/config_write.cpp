// The resolved config as TOML (printed by `hetu config check`, written to
// out_dir/config.resolved.toml) and as a short human summary.
#include <fmt/format.h>

#include "lib/config/config.h"
#include "lib/config/device_spec.h"
#include "lib/models/model_family.h"

namespace hetu::config {
namespace {

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

// Shortest round-trip form that TOML reads as a float ("1.0", "0.0006", "1e-08").
std::string toml_float(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

// batch_share is a number; print whole shares as integers, which reads best.
std::string toml_number(double value) {
  if (value == static_cast<double>(static_cast<int64_t>(value))) return std::to_string(static_cast<int64_t>(value));
  return toml_float(value);
}

std::string human_count(int64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.2f}B", static_cast<double>(n) / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.1f}M", static_cast<double>(n) / 1e6);
  if (n >= 1'000) return fmt::format("{:.1f}K", static_cast<double>(n) / 1e3);
  return std::to_string(n);
}

// One layout's groups as [[TABLE.replica]] / [[TABLE.replica.stage]] tables.
void write_layout(std::string& out, const std::string& table, const ParallelSection& parallel) {
  if (parallel.zero != 0) {  // a key of the table itself, before its arrays of tables
    if (table == "parallel") out += "[parallel]\n";
    out += "zero = " + std::to_string(parallel.zero) + "\n";
  }
  if (const auto& s = parallel.shorthand) {
    out += fmt::format("# expanded from dp = {}, tp = {}, pp = {}, order = \"{}\"{}\n", s->dp, s->tp, s->pp, s->order,
                       s->devices.empty() ? "" : ", devices = \"" + format_device_list(s->devices) + "\"");
  }
  for (const ReplicaSection& replica : parallel.replicas) {
    out += "[[" + table + ".replica]]\n";
    out += "batch_share = " + toml_number(replica.batch_share) + "\n";
    out += "micro_batch = " + std::to_string(replica.micro_batch) + "\n";
    out += "schedule = " + quoted(to_string(replica.schedule)) + "\n";
    for (const StageSection& stage : replica.stages) {
      out += "  [[" + table + ".replica.stage]]\n";
      out += "  devices = " + quoted(format_device_list(stage.devices)) + "\n";
      out += "  layers = " + quoted(format_layer_range(stage.layers)) + "\n";
      if (stage.recompute != autograd::Recompute::none) {
        out += "  recompute = " + quoted(std::string(autograd::recompute_name(stage.recompute))) + "\n";
      }
    }
    out += "\n";
  }
}

// One layout's replicas and stages, for describe().
void describe_layout(std::string& out, const ParallelSection& parallel, int64_t global_batch) {
  if (parallel.zero == 1) out += "  ZeRO-1: optimizer state and f32 master weights split over each parameter's holders\n";
  for (size_t r = 0; r < parallel.replicas.size(); ++r) {
    const ReplicaSection& replica = parallel.replicas[r];
    const int64_t batch = parallel.replica_batch(r, global_batch);
    out += fmt::format("  replica {}: {} sequences/step = {} micro-batches of {}, {} schedule, {} stage(s)\n", r, batch,
                       batch / replica.micro_batch, replica.micro_batch, to_string(replica.schedule),
                       replica.stages.size());
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      const StageSection& stage = replica.stages[s];
      out += fmt::format("    stage {}: layers {:<7} tp={} on {}{}\n", s, format_layer_range(stage.layers), stage.tp(),
                         format_device_list(stage.devices),
                         stage.recompute == autograd::Recompute::none
                             ? ""
                             : fmt::format(", recompute {}", autograd::recompute_name(stage.recompute)));
    }
  }
}

}  // namespace

std::string to_toml(const RopeScaling& s) {
  if (s.type == RopeScalingType::none) return R"({ type = "none" })";
  return fmt::format(R"({{ type = "{}", factor = {}, low_freq_factor = {}, high_freq_factor = {}, )"
                     "original_max_position_embeddings = {} }}",
                     to_string(s.type), toml_float(s.factor), toml_float(s.low_freq_factor),
                     toml_float(s.high_freq_factor), s.original_max_position_embeddings);
}

std::string to_toml(const JobConfig& c) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    out += fmt::format("{} = {}\n", key, value);
  };
  auto str = [](std::string_view s) { return quoted(s); };
  auto num = [](int64_t v) { return std::to_string(v); };

  out += "# Resolved by hetu from " + c.source + ": flavor expanded, overrides applied,\n";
  out += "# defaults filled, parallel groups explicit. Loading this file gives the same job.\n\n";
  out += "[job]\n";
  line("name", str(c.job.name));
  line("out_dir", str(c.job.out_dir));
  line("seed", std::to_string(c.job.seed));

  const ModelConfig& m = c.model;
  out += "\n[model]\n";
  line("arch", str(to_string(m.arch)));
  if (!m.flavor.empty()) line("flavor", str(m.flavor));
  line("layers", num(m.layers));
  line("hidden", num(m.hidden));
  line("heads", num(m.heads));
  const ModelFamily& family = model_family(m.arch);
  if (family.grouped_kv_heads) line("kv_heads", num(m.kv_heads));
  line("ffn_hidden", num(m.ffn_hidden));
  line("vocab", num(m.vocab));
  line("vocab_multiple", num(m.vocab_multiple));
  line("max_seq_len", num(m.max_seq_len));
  if (family.rotary_positions) line("rope_theta", toml_float(m.rope_theta));
  if (family.rotary_positions) line("rope_scaling", to_toml(m.rope_scaling));
  line("norm_eps", toml_float(m.norm_eps));
  line("tie_embeddings", m.tie_embeddings ? "true" : "false");

  out += "\n[data]\n";
  line("train", str(c.data.train));
  if (!c.data.val.empty()) line("val", str(c.data.val));
  line("tokenizer", str(to_string(c.data.tokenizer)));
  if (!c.data.vocab.empty()) line("vocab", str(c.data.vocab));
  if (!c.data.tokenizer_pattern.empty()) line("tokenizer_pattern", str(c.data.tokenizer_pattern));
  line("sampling", str(to_string(c.data.sampling)));
  if (c.data.packing != Packing::windows) line("packing", str(to_string(c.data.packing)));
  if (c.data.balance_window != 1) line("balance_window", num(c.data.balance_window));

  const TrainingSection& t = c.training;
  out += "\n[training]\n";
  line("steps", num(t.steps));
  line("global_batch", num(t.global_batch));
  line("seq_len", num(t.seq_len));
  line("micro_batch", num(t.micro_batch));
  line("precision", str(to_string(t.precision)));
  line("grad_reduce_dtype", str(to_string(t.grad_reduce_dtype)));
  line("grad_clip", toml_float(t.grad_clip));
  line("loss_scale_init", toml_float(t.loss_scale_init));
  line("loss_scale_window", std::to_string(t.loss_scale_window));
  line("eval_every", num(t.eval_every));
  line("eval_steps", num(t.eval_steps));
  line("log_every", num(t.log_every));
  line("threads", num(t.threads));
  line("trace", str(t.trace));
  line("comm_timeout_s", toml_float(t.comm_timeout_s));

  const OptimizerSection& o = c.optimizer;
  out += "\n[optimizer]\n";
  line("name", str(o.name));
  line("lr", toml_float(o.lr));
  line("betas", "[" + toml_float(o.beta1) + ", " + toml_float(o.beta2) + "]");
  line("eps", toml_float(o.eps));
  line("weight_decay", toml_float(o.weight_decay));

  out += "\n[lr_schedule]\n";
  line("warmup_steps", num(c.lr_schedule.warmup_steps));
  line("decay", str(to_string(c.lr_schedule.decay)));
  line("min_lr_ratio", toml_float(c.lr_schedule.min_lr_ratio));

  out += "\n[checkpoint]\n";
  line("every", num(c.checkpoint.every));
  line("keep", num(c.checkpoint.keep));
  line("resume", str(c.checkpoint.resume));
  if (!c.checkpoint.init_from.empty()) line("init_from", str(c.checkpoint.init_from));

  if (c.straggler != StragglerSection{}) {
    out += "\n[straggler]\n";
    line("enabled", c.straggler.enabled ? "true" : "false");
    line("threshold", toml_float(c.straggler.threshold));
    line("window", num(c.straggler.window));
    line("min_gain", toml_float(c.straggler.min_gain));
    if (!c.straggler.profile.empty()) line("profile", str(c.straggler.profile));
  }

  out += "\n[cluster]\n";
  line("device_catalog", str(c.cluster.device_catalog));
  line("rehearse", c.cluster.rehearse ? "true" : "false");
  for (const NodeSection& node : c.cluster.nodes) {
    out += "\n[[cluster.node]]\n";
    line("host", str(node.host));
    line("devices", "{ type = " + str(node.device_type) + ", count = " + num(node.count) + " }");
    if (node.emulate_link_gbps > 0) line("emulate_link_gbps", toml_number(node.emulate_link_gbps));
    if (node.emulate_link_latency_us > 0) line("emulate_link_latency_us", toml_number(node.emulate_link_latency_us));
    if (node.link_gbps > 0) line("link_gbps", toml_number(node.link_gbps));
    if (node.link_latency_us > 0) line("link_latency_us", toml_number(node.link_latency_us));
  }

  out += "\n";
  if (c.parallel.auto_plan) {  // planned at launch: no groups to write
    out += "[parallel]\n";
    line("auto", "true");
    if (!c.parallel.profile.empty()) line("profile", str(c.parallel.profile));
    if (c.parallel.zero != 0) line("zero", num(c.parallel.zero));
    out += "\n";
  } else {
    write_layout(out, "parallel", c.parallel);
  }
  for (const StrategySection& strategy : c.strategies) {
    out += "[[parallel.strategy]]\n";
    line("name", str(strategy.name));
    write_layout(out, "parallel.strategy", strategy.parallel);
  }
  for (const SwitchSection& change : c.switches) {
    out += "[[parallel.switch]]\n";
    line("at_step", num(change.at_step));
    line("strategy", str(change.strategy));
    out += "\n";
  }
  for (const BucketSection& bucket : c.buckets) {
    out += "[[parallel.bucket]]\n";
    if (bucket.max_len) line("max_len", num(*bucket.max_len));
    line("strategy", str(bucket.strategy));
    out += "\n";
  }
  return out;
}

std::string describe(const JobConfig& c) {
  const ModelConfig& m = c.model;
  std::string out = fmt::format("model: {} {} with {} parameters ({} layers, hidden {}, {} heads", to_string(m.arch),
                                m.flavor.empty() ? "(custom)" : m.flavor, human_count(m.num_params()), m.layers,
                                m.hidden, m.heads);
  if (m.kv_heads != m.heads) out += fmt::format(" / {} kv", m.kv_heads);
  out += fmt::format(", vocab {}", m.vocab);
  if (m.padded_vocab() != m.vocab) out += fmt::format(" padded to {}", m.padded_vocab());
  out += ")\n";
  out += fmt::format("cluster: {} devices on {} node(s):", c.cluster.num_devices(), c.cluster.nodes.size());
  for (const NodeSection& node : c.cluster.nodes) out += fmt::format(" {} {}x{}", node.host, node.count, node.device_type);
  out += "\n";
  const std::string layout = c.parallel.auto_plan ? std::string("layout planned at launch")
                                                   : fmt::format("{} replica(s) on {} devices",
                                                                 c.parallel.replicas.size(), c.parallel.num_devices());
  out += fmt::format("training: {} steps, global batch {} x {} tokens, {}, {}\n", c.training.steps,
                     c.training.global_batch, c.training.seq_len, to_string(c.training.precision), layout);
  if (c.parallel.auto_plan) {
    out += fmt::format("  parallel: auto (hetu train plans the layout at launch from {}; hetu plan shows the "
                       "candidates)\n", c.parallel.profile.empty() ? "a profile of the cluster it measures first"
                                                                    : c.parallel.profile);
  } else {
    describe_layout(out, c.parallel, c.training.global_batch);
  }
  for (const StrategySection& strategy : c.strategies) {
    out += fmt::format("strategy \"{}\": {} replica(s) on {} devices\n", strategy.name, strategy.parallel.replicas.size(),
                       strategy.parallel.num_devices());
    describe_layout(out, strategy.parallel, c.training.global_batch);
  }
  if (!c.buckets.empty()) {
    out += "buckets (a layout per batch, parameters and optimizer state in default's):";
    for (const BucketSection& bucket : c.buckets) {
      out += bucket.max_len ? fmt::format(" up to {} tokens -> {};", *bucket.max_len, bucket.strategy)
                            : fmt::format(" longer -> {}", bucket.strategy);
    }
    out += "\n";
  }
  if (!c.switches.empty()) {
    out += "switches: default";
    for (const SwitchSection& change : c.switches) out += fmt::format(" -> {} after step {}", change.strategy, change.at_step);
    out += "\n";
  }
  return out;
}

}  // namespace hetu::config
