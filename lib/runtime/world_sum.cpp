// sum_over_world: one f64 all_reduce.
#include "lib/runtime/world_sum.h"

namespace hetu::runtime {

double sum_over_world(Communicator& comm, double value) {
  Tensor buffer = full({1}, value, DType::f64, comm.device());
  comm.all_reduce(buffer, comm.world());
  return buffer.item();
}

}  // namespace hetu::runtime
