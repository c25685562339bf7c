// Reads the job file's tables into JobConfig: types, unknown and missing keys, defaults,
// model flavors. Cross-field rules live in config_validate.cpp.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "lib/config/config_internal.h"
#include "lib/config/device_spec.h"
#include "lib/models/model_family.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::config {
namespace {

// Runs `parse` and turns a UsageError from the device/layer parsers into one naming the key.
template <typename Fn>
auto with_key(TableReader& table, std::string_view key, Fn&& parse) {
  try {
    return parse();
  } catch (const UsageError& error) {
    table.fail(key, error.message());
  }
}

void read_job(TableReader& t, JobSection& job) {
  if (auto v = t.get_string("name")) job.name = *v;
  if (auto v = t.get_string("out_dir")) job.out_dir = *v;
  if (auto v = t.get_int("seed")) {
    if (*v < 0) t.fail("seed", "must be >= 0, got " + std::to_string(*v));
    job.seed = static_cast<uint64_t>(*v);
  }
  t.finish();
}

// model.rope_scaling = { type = "llama3", factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings } or { type = "none" }. Over a flavor that scales already
// (llama 1b, 8b), keys may be given alone (--set model.rope_scaling.factor=16).
void read_rope_scaling(TableReader t, RopeScaling& scaling) {
  const std::optional<size_t> type = t.get_choice("type", {"none", "llama3"});
  if (!type && scaling.type == RopeScalingType::none) {
    t.fail("type", "required key is missing (\"llama3\", or \"none\" for no scaling)");
  }
  if (type && static_cast<RopeScalingType>(*type) == RopeScalingType::none) {
    scaling = RopeScaling{};
    t.finish();  // a "none" table takes no other keys
    return;
  }
  const bool from_flavor = scaling.type == RopeScalingType::llama3;
  scaling.type = RopeScalingType::llama3;
  auto number = [&](std::string_view key, double& field) {
    if (auto v = t.get_number(key)) {
      field = *v;
    } else if (!from_flavor) {
      t.fail(key, "required key is missing for rope_scaling type \"llama3\"");
    }
  };
  number("factor", scaling.factor);
  number("low_freq_factor", scaling.low_freq_factor);
  number("high_freq_factor", scaling.high_freq_factor);
  if (auto v = t.get_int("original_max_position_embeddings")) {
    scaling.original_max_position_embeddings = *v;
  } else if (!from_flavor) {
    t.fail("original_max_position_embeddings", "required key is missing for rope_scaling type \"llama3\"");
  }
  t.finish();
}

// "llama": the families for which `accepts` holds, for "applies to ... only".
std::string families_where(bool ModelFamily::*accepts) {
  std::vector<std::string> names;
  for (const ModelFamily* f : model_families()) {
    if (f->*accepts) names.emplace_back(f->name);
  }
  return join(names, ", ");
}

void read_model(TableReader& t, ModelConfig& model) {
  std::vector<std::string> quoted;
  for (const ModelFamily* f : model_families()) quoted.push_back("\"" + std::string(f->name) + "\"");
  std::optional<std::string> arch_text = t.get_string("arch");
  if (!arch_text) t.fail("arch", "required key is missing (" + join(quoted, " or ") + ")");
  const ModelFamily* family = find_model_family(*arch_text);
  if (!family) t.fail("arch", "unknown value \"" + *arch_text + "\" (expected one of: " + model_family_names() + ")");
  const Arch arch = family->arch;
  const std::string name(family->name);

  std::optional<std::string> flavor = t.get_string("flavor");
  if (flavor) {
    std::optional<ModelConfig> preset = find_flavor(arch, *flavor);
    if (!preset) {
      t.fail("flavor", "unknown " + name + " flavor \"" + *flavor +
                           "\" (known: " + join(flavor_names(arch), ", ") + ")");
    }
    model = *preset;
  } else {
    model = ModelConfig{};
    model.arch = arch;
    model.tie_embeddings = family->always_ties_embeddings;
    model.rope_theta = family->default_rope_theta;
  }

  const bool explicit_shape = !flavor.has_value();
  auto shape_key = [&](std::string_view key, int64_t& field, bool required) {
    if (auto v = t.get_int(key)) {
      field = *v;
    } else if (explicit_shape && required) {
      t.fail(key, "required key is missing (no model.flavor given, so the shape must be explicit; "
                  "flavors: " + join(flavor_names(arch), ", ") + ")");
    }
  };
  shape_key("layers", model.layers, true);
  shape_key("hidden", model.hidden, true);
  shape_key("heads", model.heads, true);
  shape_key("vocab", model.vocab, true);
  shape_key("max_seq_len", model.max_seq_len, true);
  shape_key("ffn_hidden", model.ffn_hidden, family->ffn_hidden_required);
  if (explicit_shape && model.ffn_hidden == 0) model.ffn_hidden = 4 * model.hidden;
  if (auto v = t.get_int("vocab_multiple")) model.vocab_multiple = *v;
  if (auto v = t.get_number("norm_eps")) model.norm_eps = *v;

  if (family->grouped_kv_heads) {
    if (explicit_shape) model.kv_heads = model.heads;
    if (auto v = t.get_int("kv_heads")) model.kv_heads = *v;
  } else {
    if (t.has("kv_heads")) {
      t.fail("kv_heads", "applies to " + families_where(&ModelFamily::grouped_kv_heads) + " only (" + name +
                             " attention has kv_heads == heads)");
    }
    model.kv_heads = model.heads;
  }
  if (family->rotary_positions) {
    if (auto v = t.get_number("rope_theta")) model.rope_theta = *v;
    if (auto v = t.get_table("rope_scaling")) read_rope_scaling(*v, model.rope_scaling);
  } else {
    for (const char* key : {"rope_theta", "rope_scaling"}) {
      if (t.has(key)) {
        t.fail(key, "applies to " + families_where(&ModelFamily::rotary_positions) + " only (" + name +
                        " has learned positions)");
      }
    }
  }
  if (auto v = t.get_bool("tie_embeddings")) {
    if (family->always_ties_embeddings && !*v) {
      t.fail("tie_embeddings", name + " always ties the LM head to the token embedding");
    }
    model.tie_embeddings = *v;
  }
  t.finish();
}

void read_data(TableReader& t, DataSection& data) {
  data.train = t.require_string("train");
  if (auto v = t.get_string("val")) data.val = *v;
  if (auto v = t.get_choice("tokenizer", {"byte", "gpt2", "none", "tiktoken"})) data.tokenizer = static_cast<Tokenizer>(*v);
  if (auto v = t.get_string("vocab")) data.vocab = *v;
  if (auto v = t.get_string("tokenizer_pattern")) data.tokenizer_pattern = *v;
  if (auto v = t.get_choice("sampling", {"shuffled", "sequential"})) data.sampling = static_cast<Sampling>(*v);
  if (auto v = t.get_choice("packing", {"windows", "documents"})) data.packing = static_cast<Packing>(*v);
  if (auto v = t.get_int("balance_window")) data.balance_window = *v;
  t.finish();
}

void read_training(TableReader& t, TrainingSection& training) {
  training.steps = t.require_int("steps");
  training.global_batch = t.require_int("global_batch");
  training.seq_len = t.require_int("seq_len");
  if (auto v = t.get_int("micro_batch")) training.micro_batch = *v;
  if (auto v = t.get_choice("precision", {"fp32", "bf16", "fp64", "fp16"})) training.precision = static_cast<Precision>(*v);
  if (auto v = t.get_choice("grad_reduce_dtype", {"fp32", "bf16"})) training.grad_reduce_dtype = static_cast<Precision>(*v);
  if (auto v = t.get_number("grad_clip")) training.grad_clip = *v;
  if (auto v = t.get_number("loss_scale_init")) training.loss_scale_init = *v;
  if (auto v = t.get_int("loss_scale_window")) training.loss_scale_window = *v;
  if (auto v = t.get_int("eval_every")) training.eval_every = *v;
  if (auto v = t.get_int("eval_steps")) training.eval_steps = *v;
  if (auto v = t.get_int("log_every")) training.log_every = *v;
  if (auto v = t.get_int("threads")) training.threads = *v;
  if (auto v = t.get_string("trace")) training.trace = *v;
  if (auto v = t.get_number("comm_timeout_s")) training.comm_timeout_s = *v;
  t.finish();
}

void read_optimizer(TableReader& t, OptimizerSection& opt) {
  if (auto v = t.get_choice("name", {"adamw"})) opt.name = "adamw";
  if (auto v = t.get_number("lr")) opt.lr = *v;
  if (auto v = t.get_number_array("betas")) {
    if (v->size() != 2) t.fail("betas", "expected two numbers [beta1, beta2], got " + std::to_string(v->size()));
    opt.beta1 = (*v)[0];
    opt.beta2 = (*v)[1];
  }
  if (auto v = t.get_number("eps")) opt.eps = *v;
  if (auto v = t.get_number("weight_decay")) opt.weight_decay = *v;
  t.finish();
}

void read_lr_schedule(TableReader& t, LrScheduleSection& schedule) {
  if (auto v = t.get_int("warmup_steps")) schedule.warmup_steps = *v;
  if (auto v = t.get_choice("decay", {"constant", "linear", "cosine"})) schedule.decay = static_cast<LrDecay>(*v);
  if (auto v = t.get_number("min_lr_ratio")) schedule.min_lr_ratio = *v;
  t.finish();
}

void read_checkpoint(TableReader& t, CheckpointSection& ckpt) {
  if (auto v = t.get_int("every")) ckpt.every = *v;
  if (auto v = t.get_int("keep")) ckpt.keep = *v;
  if (auto v = t.get_string("resume")) ckpt.resume = *v;
  if (auto v = t.get_string("init_from")) ckpt.init_from = *v;
  t.finish();
}

void read_cluster(TableReader& t, ClusterSection& cluster, DeviceCatalog& catalog,
                  const std::string& job_file) {
  if (auto v = t.get_string("device_catalog")) cluster.device_catalog = *v;
  if (auto v = t.get_bool("rehearse")) cluster.rehearse = *v;
  if (cluster.device_catalog != "builtin") {
    std::filesystem::path path(cluster.device_catalog);
    if (path.is_relative()) path = std::filesystem::path(job_file).parent_path() / path;
    with_key(t, "device_catalog", [&] { read_device_catalog_file(path.string(), catalog); return 0; });
    // Resolved as an absolute path, so the resolved job (out_dir/config.resolved.toml, a
    // checkpoint's config) finds the same catalogue from any folder.
    cluster.device_catalog = std::filesystem::absolute(path).lexically_normal().string();
  }
  std::vector<TableReader> nodes = t.get_table_array("node");
  if (nodes.empty()) t.fail("node", "required: at least one [[cluster.node]] with host and devices");
  for (TableReader& n : nodes) {
    NodeSection node;
    node.host = n.require_string("host");
    std::optional<TableReader> devices = n.get_table("devices");
    if (!devices) n.fail("devices", "required key is missing (e.g. devices = { type = \"A100-80G\", count = 4 })");
    node.device_type = devices->require_string("type");
    node.count = devices->require_int("count");
    // Checked here, not with the other rules: the dp/tp/pp shorthand expands over it.
    if (node.count < 1) devices->fail("count", "must be >= 1, got " + std::to_string(node.count));
    devices->finish();
    if (auto v = n.get_number("emulate_link_gbps")) node.emulate_link_gbps = *v;
    if (auto v = n.get_number("emulate_link_latency_us")) node.emulate_link_latency_us = *v;
    if (auto v = n.get_number("link_gbps")) node.link_gbps = *v;
    if (auto v = n.get_number("link_latency_us")) node.link_latency_us = *v;
    n.finish();
    cluster.nodes.push_back(std::move(node));
  }
  t.finish();
}

// `recompute` of table t ("none" | "selective" | "full"), if given.
std::optional<autograd::Recompute> read_recompute(TableReader& t) {
  std::vector<std::string> names;  // in Recompute's order
  for (autograd::Recompute mode : {autograd::Recompute::none, autograd::Recompute::selective, autograd::Recompute::full}) {
    names.emplace_back(autograd::recompute_name(mode));
  }
  const std::optional<size_t> choice = t.get_choice("recompute", names);
  if (!choice) return std::nullopt;
  return static_cast<autograd::Recompute>(*choice);
}

StageSection read_stage(TableReader& s, size_t num_stages, autograd::Recompute layout_recompute) {
  StageSection stage;
  stage.recompute = read_recompute(s).value_or(layout_recompute);
  std::string devices = s.require_string("devices");
  stage.devices = with_key(s, "devices", [&] { return parse_device_list(devices); });
  if (auto layers = s.get_string("layers")) {
    stage.layers = with_key(s, "layers", [&] { return parse_layer_range(*layers); });
  } else if (num_stages > 1) {
    s.fail("layers", "required key is missing: a replica with several stages names each stage's "
                     "layers, e.g. layers = \"0-5\"");
  } else {
    stage.layers = LayerRange{0, -1};  // the whole model; filled in by read_parallel
  }
  s.finish();
  return stage;
}

// The keys of one layout ([parallel] or a [[parallel.strategy]]) into `parallel`: the
// dp/tp/pp/order shorthand or [[replica]] groups. The caller reads its other keys and calls
// t.finish().
void read_layout(TableReader& t, const JobConfig& config, const SourceMap& sources, ParallelSection& parallel) {
  std::optional<int64_t> dp = t.get_int("dp");
  std::optional<int64_t> tp = t.get_int("tp");
  std::optional<int64_t> pp = t.get_int("pp");
  std::optional<std::string> order = t.get_string("order");
  std::optional<std::string> devices = t.get_string("devices");
  std::vector<TableReader> replicas = t.get_table_array("replica");
  if (auto v = t.get_int("zero")) {
    if (*v != 0 && *v != 1) t.fail("zero", "must be 0 (optimizer state replicated) or 1 (ZeRO-1), got " + std::to_string(*v));
    parallel.zero = *v;
  }
  const std::optional<autograd::Recompute> recompute = read_recompute(t);
  const bool shorthand = dp || tp || pp || order || devices;
  parallel.auto_plan = t.get_bool("auto").value_or(false);
  if (parallel.auto_plan && recompute && *recompute != autograd::Recompute::none) {
    t.fail("recompute", "is not planned yet with auto = true: write the layout, or leave recompute out");
  }
  if (parallel.auto_plan && &parallel != &config.parallel) t.fail("auto", "only [parallel] (the strategy at step 0) is planned at launch");
  if (auto v = t.get_string("profile")) {
    if (!parallel.auto_plan) t.fail("profile", "is the profile [parallel] auto = true plans from; set auto = true");
    std::filesystem::path path(*v);
    if (path.is_relative()) path = std::filesystem::path(config.source).parent_path() / path;
    parallel.profile = std::filesystem::absolute(path).lexically_normal().string();
  }
  if (parallel.auto_plan && (shorthand || !replicas.empty())) {
    t.fail("auto", "plans the layout at launch: drop the dp/tp/pp shorthand and the [[parallel.replica]] groups");
  }
  if (shorthand && !replicas.empty()) {
    t.fail(dp ? "dp" : tp ? "tp" : pp ? "pp" : order ? "order" : "devices",
           "use either the dp/tp/pp shorthand or [[" + t.path() + ".replica]] groups, not both");
  }
  for (TableReader& r : replicas) {
    ReplicaSection replica;
    replica.micro_batch = config.training.micro_batch;
    if (auto v = r.get_number("batch_share")) replica.batch_share = *v;
    if (auto v = r.get_int("micro_batch")) replica.micro_batch = *v;
    if (auto v = r.get_choice("schedule", {"gpipe", "1f1b"})) replica.schedule = static_cast<PipelineSchedule>(*v);
    std::vector<TableReader> stages = r.get_table_array("stage");
    if (stages.empty()) r.fail("stage", "required: at least one [[" + t.path() + ".replica.stage]] with devices and layers");
    for (TableReader& s : stages) {
      replica.stages.push_back(read_stage(s, stages.size(), recompute.value_or(autograd::Recompute::none)));
      if (replica.stages.back().layers.last < 0) replica.stages.back().layers = {0, config.model.layers - 1};
    }
    r.finish();
    parallel.replicas.push_back(std::move(replica));
  }
  if (replicas.empty()) {
    // No groups: the shorthand, defaulting to pure data parallelism over every device.
    ParallelShorthand s;
    if (devices) s.devices = with_key(t, "devices", [&] { return parse_device_list(*devices); });
    const int64_t n = devices ? static_cast<int64_t>(s.devices.size()) : config.cluster.num_devices();
    s.tp = tp.value_or(1);
    s.pp = pp.value_or(1);
    if (s.tp < 1) t.fail("tp", "must be >= 1, got " + std::to_string(s.tp));
    if (s.pp < 1) t.fail("pp", "must be >= 1, got " + std::to_string(s.pp));
    if (dp) {
      s.dp = *dp;
      if (s.dp < 1) t.fail("dp", "must be >= 1, got " + std::to_string(s.dp));
    } else {
      if (n % (s.tp * s.pp) != 0) {
        t.fail(tp ? "tp" : "pp", "tp*pp = " + std::to_string(s.tp * s.pp) + " does not divide the " +
                                     std::to_string(n) + (devices ? " devices it names" : " devices of [cluster]"));
      }
      s.dp = n / (s.tp * s.pp);
    }
    if (order) s.order = *order;
    parallel.shorthand = s;
    parallel.replicas = expand_shorthand(s, config, sources, t.path());
    for (ReplicaSection& replica : parallel.replicas) {
      for (StageSection& stage : replica.stages) stage.recompute = recompute.value_or(autograd::Recompute::none);
    }
  }
}

// [parallel]: the default layout, [[parallel.strategy]] layouts and [[parallel.switch]]es.
void read_parallel(TableReader& t, JobConfig& config, const SourceMap& sources) {
  read_layout(t, config, sources, config.parallel);
  for (TableReader& s : t.get_table_array("strategy")) {
    StrategySection strategy;
    strategy.name = s.require_string("name");
    read_layout(s, config, sources, strategy.parallel);
    s.finish();
    config.strategies.push_back(std::move(strategy));
  }
  for (TableReader& s : t.get_table_array("switch")) {
    SwitchSection change;
    change.at_step = s.require_int("at_step");
    change.strategy = s.require_string("strategy");
    s.finish();
    config.switches.push_back(std::move(change));
  }
  for (TableReader& s : t.get_table_array("bucket")) {
    BucketSection bucket;
    bucket.max_len = s.get_int("max_len");
    bucket.strategy = s.require_string("strategy");
    s.finish();
    config.buckets.push_back(std::move(bucket));
  }
  t.finish();
}

// [straggler], after [parallel]: its cost model needs a profile (the launch plan's or its own).
void read_straggler(TableReader& t, JobConfig& config) {
  StragglerSection& s = config.straggler;
  if (auto v = t.get_bool("enabled")) s.enabled = *v;
  if (auto v = t.get_number("threshold")) {
    if (!(*v > 1) || !std::isfinite(*v)) t.fail("threshold", fmt::format("must be a number > 1, got {}", *v));
    s.threshold = *v;
  }
  if (auto v = t.get_int("window")) {
    if (*v < 1) t.fail("window", "must be >= 1, got " + std::to_string(*v));
    s.window = *v;
  }
  if (auto v = t.get_number("min_gain")) {
    if (!(*v >= 0) || !std::isfinite(*v)) t.fail("min_gain", fmt::format("must be a number >= 0, got {}", *v));
    s.min_gain = *v;
  }
  if (auto v = t.get_string("profile")) {
    if (config.parallel.auto_plan) {
      t.fail("profile", "[parallel] auto = true predicts from the profile it plans from (parallel.profile); drop "
                        "straggler.profile");
    }
    std::filesystem::path path(*v);
    if (path.is_relative()) path = std::filesystem::path(config.source).parent_path() / path;
    s.profile = std::filesystem::absolute(path).lexically_normal().string();
  }
  if (s.enabled && !config.parallel.auto_plan && s.profile.empty()) {
    t.fail("enabled", "re-plans with the cost model, which needs a profile: set [parallel] auto = true, or "
                      "straggler.profile = \"profile.toml\" (written by hetu profile)");
  }
  if (s.enabled && !config.switches.empty()) {
    t.fail("enabled", "cannot be combined with [[parallel.switch]] (both would choose the layout)");
  }
  t.finish();
}

}  // namespace

void read_job_config(TableReader& root, JobConfig& out, DeviceCatalog& catalog) {
  auto section = [&](std::string_view name, bool required, auto&& read) {
    std::optional<TableReader> table = root.get_table(name);
    if (!table && required) root.fail(name, "required table [" + std::string(name) + "] is missing");
    if (table) read(*table);
  };
  section("job", false, [&](TableReader& t) { read_job(t, out.job); });
  section("model", true, [&](TableReader& t) { read_model(t, out.model); });
  section("data", true, [&](TableReader& t) { read_data(t, out.data); });
  section("training", true, [&](TableReader& t) { read_training(t, out.training); });
  section("optimizer", false, [&](TableReader& t) { read_optimizer(t, out.optimizer); });
  section("lr_schedule", false, [&](TableReader& t) { read_lr_schedule(t, out.lr_schedule); });
  section("checkpoint", false, [&](TableReader& t) { read_checkpoint(t, out.checkpoint); });
  section("cluster", true, [&](TableReader& t) { read_cluster(t, out.cluster, catalog, out.source); });
  std::optional<TableReader> parallel = root.get_table("parallel");
  if (parallel) {
    read_parallel(*parallel, out, root.sources());
  } else {
    toml::table empty;
    TableReader defaults(empty, "parallel", root.sources());
    read_parallel(defaults, out, root.sources());
  }
  section("straggler", false, [&](TableReader& t) { read_straggler(t, out); });
  root.finish();

  // "{name}" in out_dir expands to the job name.
  const std::string placeholder = "{name}";
  for (size_t pos; (pos = out.job.out_dir.find(placeholder)) != std::string::npos;) {
    out.job.out_dir.replace(pos, placeholder.size(), out.job.name);
  }
}

}  // namespace hetu::config
