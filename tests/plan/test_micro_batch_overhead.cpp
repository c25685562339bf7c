// A micro-batch's fixed cost per stage (lib/plan/micro_batch_overhead.h) against hand-computed
// values: the intercepts of profile times made exactly linear in the micro-batch, a layout's
// stages' layers, embedding and head summed by hand, and a tp stage's collectives' latency.
#include <catch2/catch.hpp>

#include <string>

#include "lib/config/config.h"
#include "lib/plan/micro_batch_overhead.h"

using namespace hetu;
using namespace hetu::plan;

namespace {

// `type` at tp 1 and seq_len 128, every time a + b x micro_batch.
profile::DeviceTypeProfile linear_entry(const std::string& type, int64_t micro_batch) {
  const auto m = static_cast<double>(micro_batch);
  profile::DeviceTypeProfile p;
  p.device_type = type;
  p.micro_batch = micro_batch;
  p.seq_len = 128;
  p.layer_forward_s = 0.003 + 0.002 * m, p.layer_backward_s = 0.006 + 0.004 * m;
  p.embed_forward_s = 0.0005 + 0.0001 * m, p.embed_backward_s = 0.001 + 0.0002 * m;
  p.head_forward_s = 0.002 + 0.001 * m, p.head_backward_s = 0.004 + 0.002 * m;
  return p;
}

}  // namespace

TEST_CASE("micro-batch overhead: the intercept of a fit over the profile's micro-batch sizes", "[micro_batch_overhead]") {
  const profile::Profile profile({linear_entry("cpu", 1), linear_entry("cpu", 2), linear_entry("cpu", 4)});
  const std::optional<MicroBatchFit> fit = micro_batch_intercepts(profile, "cpu", 1, 128);
  REQUIRE(fit.has_value());
  CHECK(fit->layer_forward_s == Approx(0.003).epsilon(1e-9));
  CHECK(fit->layer_backward_s == Approx(0.006).epsilon(1e-9));
  CHECK(fit->embed_forward_s == Approx(0.0005).epsilon(1e-9));
  CHECK(fit->head_backward_s == Approx(0.004).epsilon(1e-9));
  CHECK_FALSE(micro_batch_intercepts(profile, "cpu", 2, 128).has_value());    // no entry at tp 2
  CHECK_FALSE(micro_batch_intercepts(profile, "cpu", 1, 256).has_value());    // nor at that length
  CHECK_FALSE(micro_batch_intercepts(profile::Profile({linear_entry("cpu", 4)}), "cpu", 1, 128).has_value());  // one size
  profile::DeviceTypeProfile falling = linear_entry("cpu", 8);  // a noisy fit below 0 is held at 0
  falling.layer_forward_s = 0.2;
  const profile::Profile noisy({linear_entry("cpu", 1), falling});
  CHECK(micro_batch_intercepts(noisy, "cpu", 1, 128)->layer_forward_s == 0);
}

TEST_CASE("micro-batch overhead: per stage, its layers', embedding's and head's and its messages' latency",
          "[micro_batch_overhead]") {
  // gpt2-hetero-replicas: replica A is layers 0-1 then 2-3 on one device each, replica B all
  // four on a tp-2 group; the profile has tp 1 only, so B's collectives are priced from the
  // link: 2 all_reduces per layer, each a ring of 2 (2 - 1) messages.
  const std::string job = std::string(HETU_SOURCE_DIR) + "/configs/layouts/gpt2-hetero-replicas.toml";
  const config::LoadedConfig loaded = config::load_job_config(job, {});
  const profile::Profile profile({linear_entry("cpu", 1), linear_entry("cpu", 2), linear_entry("cpu", 4)});
  const LayoutEstimate e = estimate_layout(loaded, profile);
  const auto fixed = micro_batch_overhead(loaded, profile, e);
  REQUIRE(fixed.size() == 2);
  REQUIRE(fixed[0].size() == 2);
  REQUIRE(fixed[1].size() == 1);
  CHECK(fixed[0][0].forward_s == Approx(2 * 0.003 + 0.0005).epsilon(1e-9));
  CHECK(fixed[0][0].backward_s == Approx(2 * 0.006 + 0.001).epsilon(1e-9));
  CHECK(fixed[0][0].send_s == Approx(e.stages[0][0].send_latency_s));
  CHECK(fixed[0][1].forward_s == Approx(2 * 0.003 + 0.002).epsilon(1e-9));
  CHECK(fixed[0][1].send_s == 0);
  const double latency = 4 * 2 * 2 * e.stages[1][0].tp_latency_s;
  CHECK(fixed[1][0].forward_s == Approx(4 * 0.003 + 0.0005 + 0.002 + latency).epsilon(1e-9));
  CHECK(fixed[1][0].backward_s == Approx(4 * 0.006 + 0.001 + 0.004 + latency).epsilon(1e-9));
  // Never more than a stage's per-token time.
  for (size_t r = 0; r < fixed.size(); ++r) {
    for (size_t s = 0; s < fixed[r].size(); ++s) {
      const plan::StageCost& c = e.replicas[r].stages[s];
      CHECK(fixed[r][s].forward_s <= c.times.forward_s - c.attention_forward_s);
      CHECK(fixed[r][s].backward_s <= c.times.backward_s - c.attention_backward_s);
    }
  }
}
