// What a Communicator records about each operation for the step timer (lib/util/step_timer.h):
// the bytes it moves and, for a send/recv batch, each peer. Every Communicator opens a
// timing::Scope(Phase::comm, ...) per call with these.
//
//   timing::Scope scope(timing::Phase::comm, "all_reduce", timing::Track::comm,
//                       {{"bytes", tensor_bytes(buffer)}, {"ranks", group.size()}});
//   if (scope.traced()) scope.set_args(p2p_trace_args(ops));  // a batch: "sends":[[peer,bytes]...],"recvs":[...]
#pragma once

#include <span>
#include <string>

#include "lib/hspmd/communicator.h"
#include "lib/util/step_timer.h"

namespace hetu {

int64_t tensor_bytes(const Tensor& t);
// "sends":[[peer,bytes],...],"recvs":[[peer,bytes],...] in batch order.
std::string p2p_trace_args(std::span<const P2POp> ops);

}  // namespace hetu
