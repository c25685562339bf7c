// `hetu env`: what this binary was built with and what it sees at run time: build options,
// BLAS, OpenMP, MPI, HDF5, the CUDA runtime, cuBLAS, NCCL and the visible CUDA devices.
#include <cblas.h>
#include <hdf5.h>
#include <omp.h>

#include <cstdio>
#include <fmt/core.h>

#include "app/commands.h"
#include "lib/core/cuda_probe.h"
#include "lib/hspmd/mpi_session.h"
#include "lib/hspmd/nccl_probe.h"
#include "lib/ops/cpu/gemm_choice.h"
#include "lib/ops/cpu/isa.h"
#include "lib/util/build_info.h"

namespace hetu::app {
namespace {

std::string cuda_version_text(int version) {
  if (version <= 0) return "none";
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

}  // namespace

std::string version_string() {
  const BuildInfo& info = build_info();
  return fmt::format("hetu {} (git {}, {})", info.version, info.git_revision, info.build_type);
}

int run_env() {
  const BuildInfo& info = build_info();
  auto row = [](std::string_view key, const std::string& value) {
    std::fputs(fmt::format("{:<9} {}\n", key, value).c_str(), stdout);
  };
  row("hetu", version_string());
  row("compiler", std::string(info.compiler) + ", C++20");
  row("build", fmt::format("HETU_CUDA={} -> CUDA backend {}{}", info.cuda_option, info.cuda_backend ? "on" : "off",
                           info.cuda_backend ? fmt::format(" (sm {})", info.cuda_archs) : ""));
  row("BLAS", fmt::format("{} ({} threads)", openblas_get_config(), openblas_get_num_threads()));
  row("OpenMP", fmt::format("{} threads", omp_get_max_threads()));
  const auto isa_name = [](ops::cpu::IsaLevel level) {
    return level == ops::cpu::IsaLevel::avx512 ? "avx512" : level == ops::cpu::IsaLevel::avx2 ? "avx2" : "baseline";
  };
  row("CPU ISA", fmt::format("{} for elementwise kernels (this CPU: up to {}; HETU_CPU_ISA caps it)",
                             isa_name(ops::cpu::isa_level()), isa_name(ops::cpu::max_isa_level())));
  row("CPU GEMM", ops::cpu::gemm_choice_summary());
  row("MPI", mpi_library_version());
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  row("HDF5", fmt::format("{}.{}.{}", major, minor, release));

  const CudaProbe cuda = probe_cuda();
  if (!cuda.compiled) {
    row("CUDA", "not built");
  } else {
    row("CUDA", fmt::format("runtime {}, driver {}", cuda_version_text(cuda.runtime_version),
                            cuda_version_text(cuda.driver_version)));
    row("cuBLAS", cuda.cublas_version > 0 ? fmt::format("{}.{}.{}", cuda.cublas_version / 10000,
                                                        cuda.cublas_version / 100 % 100, cuda.cublas_version % 100)
                                          : "unknown");
    row("NCCL", nccl_version());
  }
  if (cuda.devices.empty()) {
    row("devices", "no CUDA device: " + cuda.error);
  } else {
    for (const CudaDeviceInfo& d : cuda.devices) {
      row("devices", fmt::format("cuda:{} {} (sm_{}{}, {} SMs, {:.1f} GiB)", d.index, d.name, d.cc_major, d.cc_minor,
                                 d.sm_count, static_cast<double>(d.memory_bytes) / (1 << 30)));
    }
  }
  return 0;
}

}  // namespace hetu::app
