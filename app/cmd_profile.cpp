// `hetu profile JOB [--set k=v]... [--out profile.toml]`: times one micro-batch of the job's
// model on this CPU in this one process (training.micro_batch x training.seq_len, the job's
// precision and threads): the embedding, each layer and the LM head with the loss forward
// (averaged over the layers and over kRepeats runs after a warm-up), and the backward, split
// between them in proportion to their forward times. Every CPU type of the cluster runs on
// this CPU, so each gets these times x its emulate_slowdown (what the emulation's sleeps add
// to every piece of compute). GPU types are left to the catalogue estimate.
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <set>

#include "app/commands.h"
#include "app/compute_device.h"
#include "app/profile_file.h"
#include "lib/autograd/engine.h"
#include "lib/ops/ops.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"
#include "models/language_model.h"

namespace hetu::app {
namespace {

constexpr int kRepeats = 5;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Raw times of this CPU for the job's model (not slowed down).
DeviceTypeProfile measure(const config::JobConfig& c) {
  const int64_t mb = c.training.micro_batch, T = c.training.seq_len;
  std::unique_ptr<LanguageModel> model =
      build_model(c.model, ModelBuild{c.job.seed, ModelPart::whole(), nullptr, compute_dtype(c.training.precision)});
  const Tensor ids = full({mb, T}, 7, DType::i64), targets = full({mb, T}, 11, DType::i64);
  DeviceTypeProfile p;
  p.micro_batch = mb;
  p.seq_len = T;
  p.precision = std::string(to_string(c.training.precision));
  double embed = 0, layers = 0, head = 0, backward = 0;
  for (int run = 0; run <= kRepeats; ++run) {  // run 0 warms up
    const double t0 = now_s();
    Tensor x = model->embed(ids, 0);
    const double t1 = now_s();
    for (int64_t layer = 0; layer < c.model.layers; ++layer) x = model->block(layer, x, nullptr);
    const double t2 = now_s();
    Tensor loss = model->head_loss(x, targets);
    const double t3 = now_s();
    autograd::backward(loss);
    const double t4 = now_s();
    model->zero_grad();
    if (run == 0) continue;
    embed += t1 - t0, layers += t2 - t1, head += t3 - t2, backward += t4 - t3;
  }
  const double forward = embed + layers + head;
  const double n = kRepeats, L = static_cast<double>(c.model.layers);
  p.embed_forward_s = embed / n;
  p.layer_forward_s = layers / n / L;
  p.head_forward_s = head / n;
  p.embed_backward_s = backward * (embed / forward) / n;
  p.layer_backward_s = backward * (layers / forward) / n / L;
  p.head_backward_s = backward * (head / forward) / n;
  return p;
}

}  // namespace

int run_profile(const ProfileOptions& options) {
  const config::LoadedConfig loaded = load_job(options);
  const config::JobConfig& c = loaded.config;
  ops::set_num_threads(static_cast<int>(c.training.threads));
  std::vector<DeviceTypeProfile> profiles;
  std::optional<DeviceTypeProfile> measured;  // this CPU, once
  std::set<std::string> seen;
  for (const config::NodeSection& node : c.cluster.nodes) {
    const DeviceProfile* type = loaded.catalog.find(node.device_type);
    if (!seen.insert(node.device_type).second) continue;
    if (type->kind != DeviceKind::cpu) {
      std::printf("%s: a GPU type, not measured here (hetu plan estimates it from the catalogue)\n", type->name.c_str());
      continue;
    }
    if (!measured) measured = measure(c);
    DeviceTypeProfile p = *measured;
    p.device_type = type->name;
    for (double* t : {&p.layer_forward_s, &p.layer_backward_s, &p.embed_forward_s, &p.embed_backward_s,
                      &p.head_forward_s, &p.head_backward_s}) {
      *t *= type->emulate_slowdown;
    }
    std::printf("%s: per micro-batch of %lld x %lld: layer forward %.3f ms, backward %.3f ms; embedding %.3f / %.3f "
                "ms; head and loss %.3f / %.3f ms%s\n",
                p.device_type.c_str(), static_cast<long long>(p.micro_batch), static_cast<long long>(p.seq_len),
                1e3 * p.layer_forward_s, 1e3 * p.layer_backward_s, 1e3 * p.embed_forward_s, 1e3 * p.embed_backward_s,
                1e3 * p.head_forward_s, 1e3 * p.head_backward_s,
                type->emulate_slowdown > 1 ? fmt::format(" (measured x emulate_slowdown {})", type->emulate_slowdown).c_str()
                                           : "");
    profiles.push_back(std::move(p));
  }
  HT_USAGE_CHECK(!profiles.empty(), "hetu profile: {} has no CPU device type to measure here", c.source);
  const std::string header = fmt::format("# hetu profile of {} ({} threads per rank); read by hetu plan --profile\n",
                                         c.source, ops::num_threads());
  write_file_atomic(options.out, to_toml(profiles, header));
  std::printf("wrote %s\n", options.out.c_str());
  return 0;
}

}  // namespace hetu::app
