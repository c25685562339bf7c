// nccl_version() for builds without the CUDA backend.
#include "lib/hspmd/nccl_probe.h"

namespace hetu {

std::string nccl_version() { return "not built (no CUDA backend)"; }

}  // namespace hetu
