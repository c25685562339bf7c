// nccl_version() for CUDA builds: asks the linked libnccl (works without a GPU).
#include <nccl.h>

#include "lib/hspmd/nccl_probe.h"

namespace hetu {

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown (ncclGetVersion failed)";
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

}  // namespace hetu
