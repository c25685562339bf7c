// `hetu bench ops [--device cpu|cuda:N] [--dtype f32|bf16] [--threads N] [--quick]`: the
// throughput tables of lib/bench/op_benchmarks.h, after checking the device and dtype.
#include <cstdio>

#include "app/commands.h"
#include "lib/bench/op_benchmarks.h"
#include "lib/config/compute_device.h"
#include "lib/util/error.h"

namespace hetu::app {

int run_bench_ops(const BenchOptions& options) {
  const Device device = Device::parse(options.device);
  const bench::OpBenchOptions bench_options{.threads = options.threads, .quick = options.quick};
  HT_USAGE_CHECK(options.dtype.empty() || options.dtype == "f32" || options.dtype == "bf16",
                 "bench ops: --dtype {}: expected f32 or bf16", options.dtype);
  const std::string problem = config::cuda_device_problem(device);
  HT_USAGE_CHECK(problem.empty(), "bench ops: --device {}: no usable CUDA device: {}", device.str(), problem);
  if (device.is_cpu()) {
    HT_USAGE_CHECK(options.dtype != "bf16", "bench ops: --dtype bf16 needs a CUDA device (the CPU kernels compute in "
                   "f32)");
    return bench::run_cpu_op_benchmarks(bench_options);
  }
  if (!options.dtype.empty()) return bench::run_cuda_op_benchmarks(bench_options, device, options.dtype == "bf16" ? DType::bf16 : DType::f32);
  bench::run_cuda_op_benchmarks(bench_options, device, DType::f32);  // no --dtype: both tables
  std::fputs("\n", stdout);
  return bench::run_cuda_op_benchmarks(bench_options, device, DType::bf16);
}

}  // namespace hetu::app
