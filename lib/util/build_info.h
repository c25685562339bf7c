// Facts fixed when hetu was configured and built (generated into build_info.cpp by CMake),
// and the default job file embedded in the binary.
#pragma once

#include <string_view>

namespace hetu {

struct BuildInfo {
  std::string_view version;
  std::string_view git_revision;
  std::string_view build_type;
  std::string_view compiler;
  std::string_view cuda_option;   // HETU_CUDA as configured: AUTO | ON | OFF
  bool cuda_backend;              // whether the CUDA sources were compiled in
  std::string_view cuda_archs;
};

const BuildInfo& build_info();

// configs/gpt2-tiny-cpu.toml as it was at build time; the quickstart job.
std::string_view default_job_toml();
inline constexpr std::string_view kDefaultJobName = "<embedded configs/gpt2-tiny-cpu.toml>";

}  // namespace hetu
