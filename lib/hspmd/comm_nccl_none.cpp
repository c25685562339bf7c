// make_nccl_communicator in a build without the CUDA backend.
#include "lib/hspmd/communicator.h"
#include "lib/util/error.h"

namespace hetu {

std::unique_ptr<Communicator> make_nccl_communicator(int /*device*/) {
  HT_USAGE_ERROR("the NCCL communicator needs a build with the CUDA backend (cmake -DHETU_CUDA=ON)");
}

}  // namespace hetu
