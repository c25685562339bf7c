// P2PExchange: the point-to-point parts of several send/recv plans, posted as ONE batch.
// A pipeline stage sends its output for one micro-batch and receives the input of its next
// action in the same batch (Megatron's send_forward_recv_backward), which is what makes
// blocking transfers deadlock-free under GPipe and 1F1B. Plans come from plan_comm between
// disjoint device groups (a pipeline edge: p2p, or the generic repartition when the two
// stages are sharded differently), i.e. one send_recv step; anything else is refused.
//
//   P2PExchange x(comm);
//   x.send(edge_plan, edge_src, my_activation);            // to the next stage
//   Tensor g = x.recv(grad_plan, DType::f32);              // from the next stage
//   x.run();                                               // g now holds this rank's shard
#pragma once

#include <vector>

#include "lib/core/tensor.h"
#include "lib/hspmd/comm_plan.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/dist_union.h"

namespace hetu {

class P2PExchange {
 public:
  explicit P2PExchange(Communicator& comm) : comm_(comm) {}

  // This rank's sends of `plan`, read from its shard `local` of the plan's source `src`.
  void send(const CommPlan& plan, const Union& src, const Tensor& local);
  // This rank's receives of `plan`: returns its destination shard (zeros where nothing
  // arrives) on the communicator's device, complete once run() returns; undefined when it
  // holds no destination shard.
  Tensor recv(const CommPlan& plan, DType dtype);
  // Posts everything added as one batch_send_recv, waits, and fills the receive buffers.
  void run();
  bool empty() const { return batch_.empty() && arrivals_.empty(); }

 private:
  struct Arrival {
    Tensor buffer;   // this rank's destination shard
    Box shard_box;   // its box
    Box box;         // the box this transfer fills
    Tensor staging;  // flat, what the peer sends
    bool accumulate;
  };
  Communicator& comm_;
  std::vector<P2POp> batch_;
  std::vector<Arrival> arrivals_;
};

}  // namespace hetu
