// The step's small reductions over every rank of the world (the loss, the squared gradient
// norm, the evaluation sum, the stop flag): one f64 all_reduce on the communicator's device.
// Ranks that a strategy leaves idle join them with zero, which adds exactly.
#pragma once

#include "lib/hspmd/communicator.h"

namespace hetu::runtime {

double sum_over_world(Communicator& comm, double value);

}  // namespace hetu::runtime
