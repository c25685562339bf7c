// The catalogue estimate in the job's precision: fp16 is priced as bf16 is (2-byte
// activations and pipeline messages, the fp16 peak, which equals bf16's on a type with both),
// and on a type without bf16 (T4) with its own fp16 peak, far above fp32's.
#include <catch2/catch.hpp>

#include <string>

#include "lib/config/config.h"
#include "lib/plan/layout_cost.h"

using namespace hetu;

namespace {

// gpt2, 4 layers, a 2-stage pipeline over two GPUs of `type`, in `precision`.
config::LoadedConfig job(const std::string& type, const std::string& precision) {
  const std::string text = R"([model]
arch = "gpt2"
layers = 4
hidden = 256
heads = 4
vocab = 256
max_seq_len = 128

[data]
train = "train_*.bin"
tokenizer = "byte"

[training]
steps = 10
global_batch = 16
seq_len = 128
micro_batch = 4
precision = ")" + precision + R"("

[cluster]
[[cluster.node]]
host = "gpu-a"
devices = { type = ")" + type + R"(", count = 2 }

[parallel]
pp = 2
)";
  return config::load_job_config_text(text, "job.toml", {});
}

}  // namespace

TEST_CASE("layout cost: fp16 is priced as bf16 and from the catalogue's fp16 peak", "[layout_cost]") {
  const plan::LayoutEstimate bf16 = plan::estimate_layout(job("A10", "bf16"));
  const plan::LayoutEstimate fp16 = plan::estimate_layout(job("A10", "fp16"));
  const plan::LayoutEstimate fp32 = plan::estimate_layout(job("A10", "fp32"));
  CHECK(fp16.peak_flops == 2 * 125e12);
  CHECK(fp16.peak_flops == bf16.peak_flops);
  CHECK(fp16.prediction.step_s == bf16.prediction.step_s);
  CHECK(fp16.prediction.peak_bytes == bf16.prediction.peak_bytes);  // 2-byte activations, as bf16's
  CHECK(fp16.prediction.peak_bytes != fp32.prediction.peak_bytes);
  // T4 (Turing): no bf16, an fp16 peak of 65 TFLOPS against 8.1 in fp32.
  const plan::LayoutEstimate t4_fp16 = plan::estimate_layout(job("T4", "fp16"));
  const plan::LayoutEstimate t4_fp32 = plan::estimate_layout(job("T4", "fp32"));
  CHECK(t4_fp16.peak_flops == 2 * 65e12);
  CHECK(t4_fp32.peak_flops == Approx(2 * 8.1e12));
  CHECK(t4_fp16.prediction.step_s < t4_fp32.prediction.step_s);
}
