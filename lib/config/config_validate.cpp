// Cross-field rules of the job file, checked before any compute. Each rule throws a
// UsageError naming the key and its line; advisory rules return warnings instead.
// The list (docs/config.md mirrors it): value ranges per key; cluster hosts unique and
// device types known; every group device exists and is used once; each replica's stages
// cover every layer exactly once, in order; each stage's tp divides heads, kv_heads,
// ffn_hidden (and the padded vocab on the first and last stage); global_batch splits over
// replicas by batch_share into whole micro-batches; bf16 needs GPUs with bf16 support. The
// layout rules hold for [parallel] and every [[parallel.strategy]]; strategy names are
// unique, switches come in increasing step order inside the run and name known strategies.
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "lib/config/config_internal.h"
#include "lib/config/device_spec.h"
#include "lib/models/model_family.h"
#include "lib/tokenize/tiktoken_encoding.h"
#include "lib/util/error.h"
#include "lib/util/step_timer.h"
#include "lib/util/strings.h"

namespace hetu::config {
namespace {

using std::to_string;

class Rules {
 public:
  Rules(const JobConfig& config, const DeviceCatalog& catalog, const SourceMap& sources)
      : c_(config), catalog_(catalog), sources_(sources) {}

  std::vector<std::string> check() {
    check_job();
    check_model();
    check_data();
    check_training();
    check_optimizer();
    check_cluster();
    check_parallel();
    for (size_t i = 0; i < c_.strategies.size(); ++i) {
      layout_ = &c_.strategies[i].parallel;
      table_ = "parallel.strategy[" + to_string(i) + "]";
      check_strategy_name(i);
      check_parallel();
    }
    check_switches();
    check_buckets();
    check_planned_buckets();
    check_idle_devices();
    return std::move(warnings_);
  }

 private:
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    config_error(sources_, key, message);
  }
  void at_least(const std::string& key, int64_t value, int64_t min) const {
    if (value < min) fail(key, "must be >= " + to_string(min) + ", got " + to_string(value));
  }
  void positive(const std::string& key, double value) const {
    if (!(value > 0)) fail(key, "must be > 0, got " + fmt::format("{}", value));
  }
  void warn(const std::string& key, const std::string& message) {
    warnings_.push_back(sources_.where(key) + ": " + key + ": " + message);
  }

  // The key a user should edit for a property of replica r / stage s. Groups that came
  // from the dp/tp/pp shorthand have no keys of their own, so name the shorthand.
  std::string group_key(size_t r, std::optional<size_t> s, const std::string& field,
                        const std::string& shorthand_key) const {
    if (layout_->shorthand) return table_ + "." + shorthand_key;
    std::string key = table_ + ".replica[" + to_string(r) + "]";
    if (s) key += ".stage[" + to_string(*s) + "]";
    return key + "." + field;
  }

  void check_job() {
    const std::string& name = c_.job.name;
    if (name.empty()) fail("job.name", "must not be empty");
    for (char ch : name) {
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')) {
        fail("job.name", "\"" + name + "\" may hold only letters, digits, '-', '_' and '.' (it names the run folder)");
      }
    }
    if (name == "." || name == "..") fail("job.name", "\"" + name + "\" is not a usable folder name");
    if (c_.job.out_dir.empty()) fail("job.out_dir", "must not be empty");
  }

  void check_model() {
    const ModelConfig& m = c_.model;
    at_least("model.layers", m.layers, 1);
    at_least("model.hidden", m.hidden, 1);
    at_least("model.heads", m.heads, 1);
    at_least("model.kv_heads", m.kv_heads, 1);
    at_least("model.ffn_hidden", m.ffn_hidden, 1);
    at_least("model.vocab", m.vocab, 1);
    at_least("model.vocab_multiple", m.vocab_multiple, 1);
    at_least("model.max_seq_len", m.max_seq_len, 1);
    positive("model.norm_eps", m.norm_eps);
    if (m.hidden % m.heads != 0) {
      fail("model.heads", "heads = " + to_string(m.heads) + " does not divide hidden = " + to_string(m.hidden));
    }
    if (m.heads % m.kv_heads != 0) {
      fail("model.kv_heads", "kv_heads = " + to_string(m.kv_heads) + " does not divide heads = " + to_string(m.heads) +
                                 " (each kv head serves heads/kv_heads query heads)");
    }
    if (model_family(m.arch).rotary_positions) {
      positive("model.rope_theta", m.rope_theta);
      check_rope_scaling(m.rope_scaling);
      if (m.head_dim() % 2 != 0) {
        fail("model.heads", "head_dim = hidden/heads = " + to_string(m.head_dim()) + " must be even for rotary embeddings");
      }
    }
  }

  // Llama 3's formula divides by factor and by high_freq_factor - low_freq_factor.
  void check_rope_scaling(const RopeScaling& s) const {
    if (s.type != RopeScalingType::llama3) return;
    const std::string key = "model.rope_scaling.";
    if (!(s.factor >= 1)) {
      fail(key + "factor", "must be >= 1 (how much longer the context becomes), got " + fmt::format("{}", s.factor));
    }
    positive(key + "low_freq_factor", s.low_freq_factor);
    if (!(s.high_freq_factor > s.low_freq_factor)) {
      fail(key + "high_freq_factor", fmt::format("must be greater than low_freq_factor = {}, got {}", s.low_freq_factor,
                                                 s.high_freq_factor));
    }
    at_least(key + "original_max_position_embeddings", s.original_max_position_embeddings, 1);
  }

  void check_data() {
    if (c_.data.train.empty()) fail("data.train", "must name the training token shards (a path or glob)");
    if (!c_.data.tokenizer_pattern.empty() && c_.data.tokenizer != Tokenizer::tiktoken) {
      fail("data.tokenizer_pattern", "is for data.tokenizer = \"tiktoken\" only (data.tokenizer is \"" +
                                         std::string(to_string(c_.data.tokenizer)) + "\")");
    }
    if (c_.data.balance_window < 1 || c_.data.balance_window > kMaxBalanceWindow) {
      fail("data.balance_window", "must be in [1, " + to_string(kMaxBalanceWindow) + "] global batches, got " +
                                      to_string(c_.data.balance_window));
    } else if (c_.data.balance_window > 1 && c_.data.packing != Packing::documents) {
      fail("data.balance_window", "forms global batches of packed documents: it needs data.packing = \"documents\"");
    } else if (c_.data.balance_window > 1 && (!c_.switches.empty() || c_.straggler.enabled)) {
      // A window's batches depend on the batch shares; a new layout mid-window would re-form it.
      fail("data.balance_window", "forms each window's batches for the replicas' batch shares, which " +
                                      std::string(c_.switches.empty() ? "straggler re-planning" : "[[parallel.switch]]") +
                                      " changes while training: set it to 1");
    }
    if (c_.data.tokenizer == Tokenizer::none) return;  // the data loader checks ids < vocab
    int64_t needed = c_.data.tokenizer == Tokenizer::gpt2 ? 50257 : 256;
    if (c_.data.tokenizer == Tokenizer::tiktoken) needed = tiktoken_id_range();
    if (c_.model.vocab < needed) {
      fail("model.vocab", "vocab = " + to_string(c_.model.vocab) + " is smaller than the " +
                              std::string(to_string(c_.data.tokenizer)) + " tokenizer's " + to_string(needed) +
                              " ids (data.tokenizer)");
    }
  }

  // data.tokenizer = "tiktoken" needs a built-in pattern and its ranks file; a pattern with
  // any other tokenizer is a mistake. Returns the pattern's id range (ranks and specials).
  int64_t tiktoken_id_range() const {
    const DataSection& d = c_.data;
    if (d.tokenizer_pattern.empty()) {
      fail("data.tokenizer", "\"tiktoken\" needs data.tokenizer_pattern (one of " +
                                 tokenize::builtin_tiktoken_names() + ")");
    }
    int64_t range = 0;
    try {
      range = tokenize::builtin_tiktoken_encoding(d.tokenizer_pattern).id_range();
    } catch (const UsageError&) {
      fail("data.tokenizer_pattern", "unknown pattern \"" + d.tokenizer_pattern + "\" (expected one of " +
                                         tokenize::builtin_tiktoken_names() + ")");
    }
    if (d.vocab.empty()) fail("data.tokenizer", "\"tiktoken\" needs data.vocab, the path of its .tiktoken ranks file");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(d.vocab, ec)) {
      fail("data.vocab", "no such file \"" + d.vocab + "\" (the tiktoken tokenizer's .tiktoken ranks file)");
    }
    return range;
  }

  void check_training() {
    const TrainingSection& t = c_.training;
    at_least("training.steps", t.steps, 1);
    at_least("training.global_batch", t.global_batch, 1);
    at_least("training.seq_len", t.seq_len, 1);
    at_least("training.micro_batch", t.micro_batch, 1);
    at_least("training.eval_every", t.eval_every, 0);
    at_least("training.eval_steps", t.eval_steps, 1);
    at_least("training.log_every", t.log_every, 1);
    at_least("training.threads", t.threads, 0);
    check_trace_range();
    if (!(t.comm_timeout_s >= 0)) {
      fail("training.comm_timeout_s", "must be >= 0 seconds (0: no deadline), got " + fmt::format("{}", t.comm_timeout_s));
    }
    if (t.grad_clip < 0) fail("training.grad_clip", "must be >= 0 (0 disables clipping), got " + fmt::format("{}", t.grad_clip));
    if (!(t.loss_scale_init >= 1) || !std::isfinite(t.loss_scale_init)) {
      fail("training.loss_scale_init", "must be a finite number >= 1 (the first fp16 loss scale), got " +
                                           fmt::format("{}", t.loss_scale_init));
    }
    at_least("training.loss_scale_window", t.loss_scale_window, 1);
    if (t.seq_len > c_.model.max_seq_len) {
      fail("training.seq_len", "seq_len = " + to_string(t.seq_len) + " exceeds model.max_seq_len = " +
                                   to_string(c_.model.max_seq_len));
    }
    if (t.eval_every > 0 && c_.data.val.empty()) fail("training.eval_every", "evaluation needs data.val");
    const LrScheduleSection& s = c_.lr_schedule;
    at_least("lr_schedule.warmup_steps", s.warmup_steps, 0);  // > steps was capped (config_load.cpp)
    if (!(s.min_lr_ratio >= 0 && s.min_lr_ratio <= 1)) {
      fail("lr_schedule.min_lr_ratio", "must be in [0, 1], got " + fmt::format("{}", s.min_lr_ratio));
    }
    at_least("checkpoint.every", c_.checkpoint.every, 0);
    at_least("checkpoint.keep", c_.checkpoint.keep, 1);
    if (c_.checkpoint.resume.empty()) fail("checkpoint.resume", "must be \"auto\", \"never\" or a checkpoint path");
  }

  void check_trace_range() {
    const TrainingSection& t = c_.training;
    int64_t first = 0;
    try {
      first = timing::parse_step_range(t.trace, "training.trace").first;
    } catch (const hetu::UsageError&) {
      fail("training.trace", "expected a step range such as \"20-22\" or \"7\" (steps from 1, first <= last), got \"" +
                                 t.trace + "\"");
    }
    if (first > t.steps) {
      fail("training.trace", "the range \"" + t.trace + "\" starts after the last step (training.steps = " +
                                 to_string(t.steps) + ")");
    }
  }

  void check_optimizer() {
    const OptimizerSection& o = c_.optimizer;
    positive("optimizer.lr", o.lr);
    positive("optimizer.eps", o.eps);
    for (double beta : {o.beta1, o.beta2}) {
      if (!(beta >= 0 && beta < 1)) fail("optimizer.betas", "each beta must be in [0, 1), got " + fmt::format("{}", beta));
    }
    if (!(o.weight_decay >= 0)) fail("optimizer.weight_decay", "must be >= 0, got " + fmt::format("{}", o.weight_decay));
  }

  void check_cluster() {
    std::set<std::string> hosts;
    for (size_t i = 0; i < c_.cluster.nodes.size(); ++i) {
      const NodeSection& node = c_.cluster.nodes[i];
      const std::string key = "cluster.node[" + to_string(i) + "]";
      if (node.host.empty()) fail(key + ".host", "must not be empty");
      if (!hosts.insert(node.host).second) fail(key + ".host", "host \"" + node.host + "\" is listed twice");
      const DeviceProfile* type = catalog_.find(node.device_type);
      if (type == nullptr) {
        fail(key + ".devices.type", "unknown device type \"" + node.device_type + "\" (known: " +
                                        join(catalog_.names(), ", ") + "; add others with cluster.device_catalog)");
      }
      for (const auto& [name, value] : {std::pair{"emulate_link_gbps", node.emulate_link_gbps},
                                        std::pair{"emulate_link_latency_us", node.emulate_link_latency_us}}) {
        if (!(value >= 0) || !std::isfinite(value)) {
          fail(key + "." + name, fmt::format("must be a number >= 0 (0: not emulated), got {}", value));
        }
        if (value > 0 && type->kind != DeviceKind::cpu) {
          fail(key + "." + name, "only CPU nodes emulate links (their ranks talk over MPI); node " + node.host +
                                     " has " + node.device_type + " devices");
        }
      }
      for (const auto& [name, value] :
           {std::pair{"link_gbps", node.link_gbps}, std::pair{"link_latency_us", node.link_latency_us}}) {
        if (!(value >= 0) || !std::isfinite(value)) {
          fail(key + "." + name, fmt::format("must be a number >= 0 (0: the planner's assumption), got {}", value));
        }
      }
    }
  }

  const NodeSection* node_of(const DeviceId& id) const {
    for (const NodeSection& node : c_.cluster.nodes) {
      if (node.host == id.host) return &node;
    }
    return nullptr;
  }

  void check_parallel() {
    const auto& replicas = layout_->replicas;
    if (replicas.empty()) fail(table_, "needs at least one replica");
    std::map<DeviceId, std::string> owner;  // device -> "replica[r].stage[s]"
    double share_sum = 0;
    for (size_t r = 0; r < replicas.size(); ++r) {
      const ReplicaSection& replica = replicas[r];
      positive(group_key(r, {}, "batch_share", "dp"), replica.batch_share);
      at_least(group_key(r, {}, "micro_batch", "micro_batch"), replica.micro_batch, 1);
      share_sum += replica.batch_share;
      for (size_t s = 0; s < replica.stages.size(); ++s) {
        check_stage_devices(r, s, owner);
        check_stage_tp(r, s);
      }
      check_layer_cover(r);
    }
    // An auto layout's placeholder (dp over every device) need not split the batch evenly: the
    // planner picks the shares (hetu launch relaunches a job on any number of survivors).
    if (!layout_->auto_plan) check_batch_split(share_sum);
    check_precision();
  }

  void check_strategy_name(size_t i) {
    const std::string& name = c_.strategies[i].name;
    const std::string key = table_ + ".name";
    if (name.empty()) fail(key, "must not be empty");
    if (name == kDefaultStrategy) fail(key, "\"default\" names [parallel] itself; pick another name");
    for (size_t j = 0; j < i; ++j) {
      if (c_.strategies[j].name == name) {
        fail(key, "strategy \"" + name + "\" is defined twice (also parallel.strategy[" + to_string(j) + "], " +
                      sources_.where("parallel.strategy[" + to_string(j) + "].name") + ")");
      }
    }
  }

  // `name` (at `key`) is "default" or a [[parallel.strategy]]'s.
  void check_known_strategy(const std::string& key, const std::string& name) const {
    bool known = name == kDefaultStrategy;
    for (const StrategySection& st : c_.strategies) known = known || st.name == name;
    if (known) return;
    std::vector<std::string> names{kDefaultStrategy};
    for (const StrategySection& st : c_.strategies) names.push_back(st.name);
    fail(key, "unknown strategy \"" + name + "\" (known: " + join(names, ", ") + ")");
  }

  // Switches come after distinct steps in increasing order, inside the run, to known strategies.
  void check_switches() {
    std::set<std::string> used;
    for (size_t i = 0; i < c_.switches.size(); ++i) {
      const SwitchSection& s = c_.switches[i];
      const std::string key = "parallel.switch[" + to_string(i) + "]";
      if (s.at_step < 1) fail(key + ".at_step", "must be >= 1 (the switch comes after that step), got " + to_string(s.at_step));
      if (i > 0 && s.at_step <= c_.switches[i - 1].at_step) {
        fail(key + ".at_step", "at_step = " + to_string(s.at_step) + " does not come after the previous switch's " +
                                   to_string(c_.switches[i - 1].at_step) + " (switches are listed in increasing step order)");
      }
      if (s.at_step >= c_.training.steps) {
        fail(key + ".at_step", "at_step = " + to_string(s.at_step) + " is not before the last step (training.steps = " +
                                   to_string(c_.training.steps) + "): the switch would never run");
      }
      check_known_strategy(key + ".strategy", s.strategy);
      used.insert(s.strategy);
    }
    for (const BucketSection& b : c_.buckets) used.insert(b.strategy);
    for (size_t i = 0; i < c_.strategies.size() && !c_.plans_buckets(); ++i) {
      if (!used.count(c_.strategies[i].name)) {
        warn("parallel.strategy[" + to_string(i) + "].name", "strategy \"" + c_.strategies[i].name +
                                                                  "\" is never switched to (no [[parallel.switch]] names it)");
      }
    }
  }

  // [[parallel.bucket]]: documents packing, every max_len but the last's, increasing and
  // below seq_len, known strategies; not with what else picks the layout, nor ZeRO-1.
  void check_buckets() {
    const size_t n = c_.buckets.size();
    for (size_t i = 0; i < n; ++i) {
      const BucketSection& b = c_.buckets[i];
      const std::string key = "parallel.bucket[" + to_string(i) + "]";
      if (c_.data.packing != Packing::documents) {
        fail(key + ".strategy", "buckets cut a batch by document length: they need data.packing = \"documents\" "
                                "(data.packing is \"" + std::string(to_string(c_.data.packing)) + "\")");
      }
      if (!c_.switches.empty()) {
        fail(key + ".strategy", "buckets cannot be combined with [[parallel.switch]] (both would choose the layout)");
      }
      if (c_.straggler.enabled) {
        fail(key + ".strategy", "buckets cannot be combined with straggler.enabled (both would choose the layout)");
      }
      if (c_.parallel.auto_plan) {
        fail(key + ".strategy", "[parallel] auto = true plans every step's buckets itself (from the profile and the "
                                "batch's document lengths, over the [[parallel.strategy]] layouts): drop the "
                                "[[parallel.bucket]] tables, or auto");
      }
      const bool last = i + 1 == n;
      if (last && b.max_len) {
        fail(key + ".max_len", "the last bucket takes every longer document and has no max_len (add a bucket after "
                               "it, or drop max_len)");
      }
      if (!last && !b.max_len) {
        fail(key + ".strategy", "max_len is missing: every bucket but the last needs one (the longest document, "
                                "in tokens, it takes)");
      }
      if (b.max_len) {
        at_least(key + ".max_len", *b.max_len, 1);
        if (i > 0 && *b.max_len <= *c_.buckets[i - 1].max_len) {
          fail(key + ".max_len", "max_len = " + to_string(*b.max_len) + " does not exceed the previous bucket's " +
                                     to_string(*c_.buckets[i - 1].max_len) + " (buckets are listed in increasing max_len)");
        }
        if (*b.max_len >= c_.training.seq_len) {
          fail(key + ".max_len", "max_len = " + to_string(*b.max_len) + " is not below training.seq_len = " +
                                     to_string(c_.training.seq_len) + ": documents are cut into pieces of at most "
                                     "seq_len tokens, so the buckets after it would stay empty");
        }
      }
      check_known_strategy(key + ".strategy", b.strategy);
      if (b.strategy != kDefaultStrategy && c_.strategy(b.strategy).zero != 0) {
        fail(key + ".strategy", "strategy \"" + b.strategy + "\" has zero = 1, but a bucket's strategy only computes "
                                "on a copy of the parameters and holds no optimizer state (it stays in the default "
                                "layout): drop its zero, or set parallel.zero = 1 to shard the default's");
      }
    }
  }

  // [parallel] auto = true over documents and [[parallel.strategy]] layouts plans every step's
  // buckets: nothing else may pick the layout, and only the default holds optimizer state.
  void check_planned_buckets() {
    if (!c_.plans_buckets()) return;
    if (!c_.switches.empty()) {
      fail("parallel.switch[0].strategy", "[parallel] auto = true with documents plans a layout per batch over the "
                                          "strategies; it cannot be combined with [[parallel.switch]]");
    }
    if (c_.straggler.enabled) {
      fail("straggler.enabled", "[parallel] auto = true with documents plans a layout per batch over the strategies; "
                                "it cannot be combined with straggler re-planning");
    }
    for (size_t i = 0; i < c_.strategies.size(); ++i) {
      if (c_.strategies[i].parallel.zero != 0) {
        fail("parallel.strategy[" + to_string(i) + "].zero", "the per-batch layouts [parallel] auto = true plans run "
                                                             "a strategy on a copy of the parameters with no optimizer "
                                                             "state of its own (it stays in the default layout): drop "
                                                             "its zero, or set parallel.zero = 1 to shard the default's");
      }
    }
  }

  void check_idle_devices() {
    const int64_t unused = c_.cluster.num_devices() - static_cast<int64_t>(c_.strategy_devices().size());
    if (unused > 0) {
      warn("parallel", to_string(unused) + " device(s) of [cluster] are in no group and will stay idle");
    }
  }

  void check_stage_devices(size_t r, size_t s, std::map<DeviceId, std::string>& owner) {
    const StageSection& stage = layout_->replicas[r].stages[s];
    const bool listed = layout_->shorthand && !layout_->shorthand->devices.empty();  // shorthand `devices`
    const std::string key = group_key(r, s, "devices", listed ? "devices" : "dp");
    const std::string here = table_ + ".replica[" + to_string(r) + "].stage[" + to_string(s) + "]";
    std::set<std::string> types;
    for (const DeviceId& id : stage.devices) {
      const NodeSection* node = node_of(id);
      if (node == nullptr) fail(key, "host \"" + id.host + "\" is not a [[cluster.node]]");
      if (id.index >= node->count) {
        fail(key, "device " + id.str() + " does not exist: node " + id.host + " has " + to_string(node->count) +
                      " devices (0-" + to_string(node->count - 1) + ")");
      }
      auto [it, inserted] = owner.emplace(id, here);
      if (!inserted) fail(key, "device " + id.str() + " is used twice: by " + it->second + " and " + here);
      types.insert(node->device_type);
    }
    std::set<std::string> hosts;
    for (const DeviceId& id : stage.devices) hosts.insert(id.host);
    if (hosts.size() > 1) {
      warn(key, "the tp group " + format_device_list(stage.devices) + " spans " + to_string(hosts.size()) +
                    " nodes: tensor-parallel collectives run every layer and are slow across the network");
    }
    if (types.size() > 1) {
      warn(key, "the tp group mixes device types (" + join({types.begin(), types.end()}, ", ") +
                    "): every tp rank waits for the slowest");
    }
  }

  void check_stage_tp(size_t r, size_t s) {
    const ReplicaSection& replica = layout_->replicas[r];
    const StageSection& stage = replica.stages[s];
    const ModelConfig& m = c_.model;
    const int64_t tp = stage.tp();
    const std::string key = group_key(r, s, "devices", "tp");
    auto divides = [&](int64_t value, const std::string& what) {
      if (value % tp != 0) {
        fail(key, "tp = " + to_string(tp) + " (" + format_device_list(stage.devices) + ") does not divide " + what +
                      " = " + to_string(value));
      }
    };
    divides(m.heads, "model.heads");
    divides(m.kv_heads, "model.kv_heads");
    divides(m.ffn_hidden, "model.ffn_hidden");
    const bool holds_vocab = s == 0 || s + 1 == replica.stages.size();
    if (holds_vocab) divides(m.padded_vocab(), "the padded vocab (model.vocab rounded up to model.vocab_multiple)");
  }

  static std::string uncovered(const LayerRange& range) {
    return (range.count() == 1 ? "layer " : "layers ") + format_layer_range(range) +
           (range.count() == 1 ? " is" : " are") + " not covered by any stage";
  }

  void check_layer_cover(size_t r) {
    const ReplicaSection& replica = layout_->replicas[r];
    const int64_t layers = c_.model.layers;
    int64_t next = 0;  // first layer not yet covered
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      const LayerRange& range = replica.stages[s].layers;
      const std::string key = group_key(r, s, "layers", "pp");
      if (range.last >= layers) {
        fail(key, "layers \"" + format_layer_range(range) + "\" go past the model's " + to_string(layers) +
                      " layers (0-" + to_string(layers - 1) + ")");
      }
      if (range.first < next) {
        fail(key, "layer " + to_string(range.first) + " is covered twice (stages must cover each layer once, in order)");
      }
      if (range.first > next) fail(key, uncovered({next, range.first - 1}));
      next = range.last + 1;
    }
    if (next < layers) {
      fail(group_key(r, replica.stages.size() - 1, "layers", "pp"),
           uncovered({next, layers - 1}) + " (model.layers = " + to_string(layers) + ")");
    }
  }

  void check_batch_split(double share_sum) {
    const auto& replicas = layout_->replicas;
    const int64_t global = c_.training.global_batch;
    for (size_t r = 0; r < replicas.size(); ++r) {
      const double exact = static_cast<double>(global) * replicas[r].batch_share / share_sum;
      const int64_t batch = std::llround(exact);
      if (std::fabs(exact - static_cast<double>(batch)) > 1e-9) {
        fail(group_key(r, {}, "batch_share", "dp"),
             "training.global_batch = " + to_string(global) + " does not split into whole sequences by batch_share (" +
                 "replica " + to_string(r) + " would get " + fmt::format("{:.3f}", exact) + ")");
      }
      if (batch < 1) fail(group_key(r, {}, "batch_share", "dp"), "replica " + to_string(r) + " gets no sequences");
      const int64_t micro = replicas[r].micro_batch;
      if (batch % micro != 0) {
        fail(group_key(r, {}, "micro_batch", "micro_batch"),
             "replica " + to_string(r) + "'s batch of " + to_string(batch) + " sequences does not split into micro-batches of " +
                 to_string(micro));
      }
      const int64_t count = batch / micro;
      const int64_t stages = static_cast<int64_t>(replicas[r].stages.size());
      if (stages > 1 && count < stages) {
        warn(group_key(r, {}, "micro_batch", "micro_batch"),
             "replica " + to_string(r) + " runs " + to_string(count) + (count == 1 ? " micro-batch" : " micro-batches") +
                 " through " + to_string(stages) +
                 " pipeline stages: most stages will idle (use at least as many micro-batches as stages)");
      }
    }
  }

  // One kind of device per job (GPUs talk NCCL, CPUs MPI), and a precision it computes in.
  void check_precision() {
    const DeviceProfile* first = nullptr;
    DeviceId first_id;
    for (const auto& replica : layout_->replicas) {
      for (const auto& stage : replica.stages) {
        for (const DeviceId& id : stage.devices) {
          const DeviceProfile* type = catalog_.find(node_of(id)->device_type);
          if (first == nullptr) {
            first = type;
            first_id = id;
          }
          if (type->kind != first->kind) {
            fail(table_, "the groups mix GPUs and CPUs (" + first_id.str() + " is a \"" + first->name + "\", " +
                                 id.str() + " a \"" + type->name + "\"): a job trains on one kind of device");
          }
          const bool gpu = type->kind == DeviceKind::gpu;
          if (c_.training.precision == Precision::bf16 && (!gpu || type->peak_tflops_bf16 <= 0)) {
            fail("training.precision", "\"bf16\" needs GPUs with bf16 support, but " + id.str() + " is a \"" + type->name +
                                           "\" (use precision = \"fp16\" where it has an fp16 path, or \"fp32\")");
          }
          if (c_.training.precision == Precision::fp16 && gpu && type->peak_tflops_fp16 <= 0) {
            fail("training.precision", "\"fp16\" needs GPUs with an fp16 path (peak_tflops_fp16 > 0 in the device "
                                       "catalogue), but " + id.str() + " is a \"" + type->name + "\" (use precision = \"fp32\")");
          }
          if (c_.training.precision == Precision::fp64 && gpu) {
            fail("training.precision", "\"fp64\" (the CPU numerics reference) runs on CPUs only, but " + id.str() +
                                           " is a \"" + type->name + "\" GPU (use \"bf16\", \"fp16\" or \"fp32\")");
          }
        }
      }
    }
  }

  const JobConfig& c_;
  const DeviceCatalog& catalog_;
  const SourceMap& sources_;
  std::vector<std::string> warnings_;
  // The layout check_parallel() checks: [parallel], then each [[parallel.strategy]].
  const ParallelSection* layout_ = &c_.parallel;
  std::string table_ = "parallel";
};

}  // namespace

std::vector<std::string> validate_job_config(const JobConfig& config, const DeviceCatalog& catalog,
                                             const SourceMap& sources) {
  return Rules(config, catalog, sources).check();
}

}  // namespace hetu::config
