// `hetu bench ops` / `hetu bench comm` flags as a user meets them: --device and --dtype are
// listed in --help (scripts/gpu-check.sh looks for --device), and a device that cannot run is
// a one-line usage error (exit 2) before any benchmark starts, in every build: cuda:1023 is
// not usable on any machine (CPU-only build, no driver, or past the visible GPUs).
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "tests/app/run_hetu.h"

namespace {

using hetu::test::run_hetu;
using Result = hetu::test::CliResult;

}  // namespace

TEST_CASE("bench ops and bench comm list --device in their help", "[cli]") {
  const Result ops = run_hetu("bench ops --help");
  CHECK(ops.exit_code == 0);
  CHECK_THAT(ops.output, Catch::Contains("--device") && Catch::Contains("--dtype"));
  const Result comm = run_hetu("bench comm --help");
  CHECK(comm.exit_code == 0);
  CHECK_THAT(comm.output, Catch::Contains("--device"));
}

TEST_CASE("bench on an unusable CUDA device is a usage error before any work", "[cli]") {
  const Result ops = run_hetu("bench ops --device cuda:1023 --quick");
  CHECK(ops.exit_code == 2);
  CHECK_THAT(ops.output, Catch::StartsWith("hetu: error: bench ops: --device cuda:1023: no usable CUDA device: "));
  CHECK_THAT(ops.output, !Catch::Contains("benchmark"));  // the table's header: nothing was measured
  const Result comm = run_hetu("bench comm --device cuda:1023 --iterations 1");
  CHECK(comm.exit_code == 2);
  CHECK_THAT(comm.output, Catch::StartsWith("hetu: error: bench comm: --device cuda:1023: no usable CUDA device: "));
  CHECK_THAT(comm.output, !Catch::Contains("all_reduce"));
}

TEST_CASE("bench flags with bad values are usage errors", "[cli]") {
  const Result bf16_cpu = run_hetu("bench ops --dtype bf16");
  CHECK(bf16_cpu.exit_code == 2);
  CHECK(bf16_cpu.output ==
        "hetu: error: bench ops: --dtype bf16 needs a CUDA device (the CPU kernels compute in f32)\n");
  const Result bad_device = run_hetu("bench ops --device gpu:0");
  CHECK(bad_device.exit_code == 2);
  CHECK_THAT(bad_device.output, Catch::Contains("bad device \"gpu:0\" (expected cpu or cuda:N)"));
  const Result bad_dtype = run_hetu("bench ops --dtype f16");
  CHECK(bad_dtype.exit_code == 2);
  CHECK_THAT(bad_dtype.output, Catch::Contains("--dtype"));
  const Result comm_device = run_hetu("bench comm --device tpu");
  CHECK(comm_device.exit_code == 2);
  CHECK_THAT(comm_device.output, Catch::Contains("bad device \"tpu\""));
}
