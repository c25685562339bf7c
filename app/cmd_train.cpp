// `hetu train CONFIG [--set k=v]... [--dry-run]`: every rank loads and validates the job,
// checks the launched ranks against the device groups, and maps rank -> device. --dry-run
// stops there. Otherwise (one device for now; multi-device layouts arrive with distributed
// training) it builds the model, the data loaders and the checkpoint store, and runs the
// Trainer, writing out_dir/{config.resolved.toml, metrics.jsonl, logs/, checkpoints/}.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <fmt/core.h>

#include "app/build_info.h"
#include "app/commands.h"
#include "app/config/device_spec.h"
#include "lib/dist/mpi_session.h"
#include "lib/io/checkpoint.h"
#include "lib/io/data_loader.h"
#include "lib/ops/ops.h"
#include "lib/runtime/trainer.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "models/language_model.h"

namespace hetu::app {
namespace {

// Note [Rank order]: rank i runs the i-th device of the groups, walking replicas, then
// stages, then the devices of a stage in order. Host matching (rank -> device by host
// name and local index) replaces this with the distributed-training issue.
struct RankSlot {
  config::DeviceId device;
  size_t replica = 0;
  size_t stage = 0;
  int64_t tp_rank = 0;
  int64_t tp = 1;
  config::LayerRange layers;
};

std::vector<RankSlot> rank_slots(const config::JobConfig& c) {
  std::vector<RankSlot> slots;
  for (size_t r = 0; r < c.parallel.replicas.size(); ++r) {
    const auto& replica = c.parallel.replicas[r];
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      const auto& stage = replica.stages[s];
      for (size_t t = 0; t < stage.devices.size(); ++t) {
        slots.push_back({stage.devices[t], r, s, static_cast<int64_t>(t), stage.tp(), stage.layers});
      }
    }
  }
  return slots;
}

// The Trainer's data interface over io::DataLoader.
class LoaderSource final : public runtime::BatchSource {
 public:
  explicit LoaderSource(const io::DataLoaderOptions& options) : loader_(options) {}
  runtime::Batch next() override {
    io::Batch b = loader_.next();
    return {b.x, b.y};
  }
  std::string save_position() const override { return loader_.position().to_string(); }
  void restore_position(const std::string& position) override { loader_.restore(io::DataPosition::parse(position)); }

 private:
  io::DataLoader loader_;
};

// The Trainer's checkpoint interface over io::CheckpointManager; loads check every tensor
// against the model's names, shapes and dtypes.
class ManagerStore final : public runtime::CheckpointStore {
 public:
  ManagerStore(std::string dir, int64_t keep, std::map<std::string, io::ExpectedTensor> expected)
      : manager_(std::move(dir), keep), expected_(std::move(expected)) {}
  std::string save(const runtime::Snapshot& s) override { return manager_.save({s.step, s.tensors, s.metadata}); }
  std::optional<runtime::Snapshot> load_latest() override {
    std::optional<std::string> latest = manager_.latest();
    if (!latest) return std::nullopt;
    return load(*latest);
  }
  runtime::Snapshot load(const std::string& path) override {
    io::CheckpointData d = manager_.load(path, &expected_);
    return {d.step, std::move(d.tensors), std::move(d.metadata)};
  }

 private:
  io::CheckpointManager manager_;
  std::map<std::string, io::ExpectedTensor> expected_;
};

// MFU's denominator: the catalogue's peak for GPUs; for CPUs a short sgemm probe at this
// thread count, cached per CPU model in ~/.cache/hetu so runs do not repeat it.
double device_peak_flops(const config::JobConfig& c, const DeviceCatalog& catalog, const RankSlot& slot) {
  std::string type;
  for (const auto& node : c.cluster.nodes) {
    if (node.host == slot.device.host) type = node.device_type;
  }
  const DeviceProfile* profile = catalog.find(type);
  if (profile != nullptr && profile->kind == DeviceKind::gpu) {
    return 1e12 * (c.training.precision == config::Precision::bf16 ? profile->peak_tflops_bf16 : profile->peak_tflops_fp32);
  }
  std::string cpu_model = "cpu";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      cpu_model = std::string(trim(line.substr(line.find(':') + 1)));
      break;
    }
  }
  const char* home = std::getenv("HOME");
  const std::string cache = fmt::format("{}/.cache/hetu/sgemm-peak-{}t.txt", home ? home : "/tmp", ops::num_threads());
  std::ifstream in(cache);
  std::string cached_model;
  double flops = 0;
  if (std::getline(in, cached_model) && cached_model == cpu_model && (in >> flops) && flops > 0) return flops;
  flops = ops::measure_sgemm_flops(0.3);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(cache).parent_path(), ec);
  if (!ec) write_file_atomic(cache, fmt::format("{}\n{}\n", cpu_model, flops));
  spdlog::info("CPU peak for MFU: {:.1f} GFLOP/s (sgemm probe, {} thread(s); cached in {})", flops / 1e9,
               ops::num_threads(), cache);
  return flops;
}

optim::LrDecayKind decay_kind(config::LrDecay decay) {
  switch (decay) {
    case config::LrDecay::constant: return optim::LrDecayKind::constant;
    case config::LrDecay::linear: return optim::LrDecayKind::linear;
    case config::LrDecay::cosine: return optim::LrDecayKind::cosine;
  }
  return optim::LrDecayKind::cosine;
}

int train_one_device(const config::LoadedConfig& loaded, const RankSlot& slot, int64_t stop_at_step) {
  const config::JobConfig& c = loaded.config;
  const config::ReplicaSection& replica = c.parallel.replicas[0];
  std::unique_ptr<LanguageModel> model = build_model(c.model, c.job.seed);
  spdlog::info("model: {} parameters", model->num_parameters());

  io::DataLoaderOptions train_data;
  train_data.pattern = c.data.train;
  train_data.seq_len = c.training.seq_len;
  train_data.global_batch = c.training.global_batch;
  train_data.micro_batch = replica.micro_batch;
  train_data.sampling = c.data.sampling == config::Sampling::shuffled ? io::Sampling::shuffled : io::Sampling::sequential;
  train_data.seed = c.job.seed;
  LoaderSource train(train_data);
  std::unique_ptr<LoaderSource> val;
  if (c.training.eval_every > 0) {
    io::DataLoaderOptions val_data;
    val_data.pattern = c.data.val;
    val_data.seq_len = c.training.seq_len;
    val_data.global_batch = replica.micro_batch;
    val = std::make_unique<LoaderSource>(val_data);
  }

  std::map<std::string, io::ExpectedTensor> expected;
  for (const nn::NamedParameter& p : model->named_parameters()) {
    expected[p.name] = {p.tensor.shape(), p.tensor.dtype()};
    expected["optim.m/" + p.name] = {p.tensor.shape(), p.tensor.dtype()};
    expected["optim.v/" + p.name] = {p.tensor.shape(), p.tensor.dtype()};
  }
  ManagerStore store(c.job.out_dir + "/checkpoints", c.checkpoint.keep, std::move(expected));

  runtime::TrainerOptions o;
  o.steps = c.training.steps;
  o.micro_batches = c.replica_micro_batches(0);
  o.tokens_per_micro_batch = replica.micro_batch * c.training.seq_len;
  o.schedule = {c.optimizer.lr, c.lr_schedule.warmup_steps, c.training.steps, decay_kind(c.lr_schedule.decay),
                c.lr_schedule.min_lr_ratio};
  o.adamw = {c.optimizer.beta1, c.optimizer.beta2, c.optimizer.eps, c.optimizer.weight_decay};
  o.grad_clip = c.training.grad_clip;
  o.log_every = c.training.log_every;
  o.eval_every = c.training.eval_every;
  o.eval_steps = c.training.eval_steps;
  o.checkpoint_every = c.checkpoint.every;
  o.resume = c.checkpoint.resume;
  o.stop_at_step = stop_at_step;
  o.metrics_path = c.job.out_dir + "/metrics.jsonl";
  o.flops_per_token = model->flops_per_token(c.training.seq_len);
  o.peak_flops = device_peak_flops(c, loaded.catalog, slot);
  o.progress_bar = ::isatty(STDOUT_FILENO) != 0;
  o.checkpoint_metadata = {{"config", config::to_toml(c)}, {"arch", std::string(to_string(c.model.arch))}};
  const LanguageModel* m = model.get();
  runtime::Trainer trainer(*model, [m](const runtime::Batch& b, double n) { return m->loss(b.inputs, b.targets, n); }, o);
  const runtime::TrainResult result = trainer.run(train, val.get(), &store);
  spdlog::info("done: {} steps, final loss {:.4f}{}; checkpoint {}", result.losses.size(),
               result.losses.empty() ? 0.0 : result.losses.back(),
               result.val_losses.empty() ? "" : fmt::format(", val loss {:.4f}", result.val_losses.back()),
               result.last_checkpoint);
  return 0;
}

}  // namespace

int run_train(const TrainOptions& options) {
  MpiSession mpi(nullptr, nullptr);
  init_logging({mpi.rank(), options.log_level, "", true});

  config::LoadedConfig loaded = load_job(options);
  const config::JobConfig& c = loaded.config;
  ops::set_num_threads(static_cast<int>(c.training.threads));
  const std::vector<RankSlot> slots = rank_slots(c);
  const int64_t needed = static_cast<int64_t>(slots.size());
  const bool single_process_dry_run = options.dry_run && mpi.world_size() == 1;
  if (mpi.world_size() != needed && !single_process_dry_run) {
    HT_USAGE_ERROR("launched {} rank(s), but the [parallel] groups of {} name {} device(s): start one rank per "
                   "device, e.g. mpirun -np {} hetu train {} (or srun -n {})",
                   mpi.world_size(), c.source, needed, needed, c.source, needed);
  }

  if (!options.dry_run) {
    const std::string log_file = c.job.out_dir + "/logs/rank-" + std::to_string(mpi.rank()) + ".log";
    init_logging({mpi.rank(), options.log_level, log_file, true});
    if (mpi.rank() == 0) write_file_atomic(c.job.out_dir + "/config.resolved.toml", config::to_toml(c));
  }

  spdlog::info("hetu {} | job '{}' from {}", build_info().version, c.job.name, c.source);
  const std::string summary = config::describe(c);
  for (std::string_view line : split(summary, '\n')) {
    if (!line.empty()) spdlog::info("{}", line);
  }
  for (const std::string& warning : loaded.warnings) spdlog::warn("{}", warning);
  if (single_process_dry_run && needed != 1) {
    spdlog::info("dry run in one process: a real run needs {} ranks (mpirun -np {})", needed, needed);
  }
  for (int64_t rank = 0; rank < needed; ++rank) {
    const RankSlot& slot = slots[static_cast<size_t>(rank)];
    spdlog::info("rank {} -> {} (replica {}, stage {}, tp rank {}/{}, layers {})", rank, slot.device.str(), slot.replica,
                 slot.stage, slot.tp_rank, slot.tp, config::format_layer_range(slot.layers));
  }
  if (options.dry_run) {
    spdlog::info("dry run: the job is valid; nothing was trained or written");
    return 0;
  }
  HT_CHECK(needed == 1, "hetu train: this build trains on one device; the job's groups name {} devices (distributed "
           "training across replicas, stages and tp groups is the next milestone; --dry-run validates such jobs)", needed);
  return train_one_device(loaded, slots[0], options.stop_at_step);
}

}  // namespace hetu::app
