// Communicator: the one interface for moving tensors between devices. A device id is a rank
// of the world (DeviceId i is MPI rank i on CPU; GPU i of the job under NCCL). Collectives
// run over a sub-group given as a DeviceGroup: member i of the group is index i of every
// per-member list (counts, blocks), and the sub-communicator behind a group is created on
// its first use, collectively over its members only, and cached. Every member must call a
// collective on the same group in the same order; non-members never call it.
// Tensors are contiguous; the CPU/MPI implementation (comm_mpi.cpp) moves f32, f64, bf16 and f16 and
// fails with "op X not implemented for device Y / dtype Z" otherwise. Sums are in dtype.
//
// Worked example, 2 ranks, group {0,1}, rank r holds x = [r + 1] (f32, shape {1}):
//   comm.all_reduce(x, group);                  // x == [3] on both ranks
//   comm.all_gather(x, out /* shape {2} */, group);  // out == [1, 2]   (before the all_reduce)
//   comm.batch_send_recv({P2POp::send(x, 1 - r), P2POp::recv(y, 1 - r)});  // swap, no deadlock
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/hspmd/device_group.h"

namespace hetu {

enum class P2PKind : uint8_t { send, recv };

// One point-to-point transfer of a batch; `peer` is a world rank.
struct P2POp {
  P2PKind kind = P2PKind::send;
  Tensor tensor;  // read for send, written for recv
  DeviceId peer = 0;

  static P2POp send(Tensor tensor, DeviceId peer) { return {P2PKind::send, std::move(tensor), peer}; }
  static P2POp recv(Tensor tensor, DeviceId peer) { return {P2PKind::recv, std::move(tensor), peer}; }
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual DeviceId rank() const = 0;
  virtual int64_t world_size() const = 0;
  virtual std::string backend() const = 0;  // "mpi", "nccl", "local"
  // Where this communicator's tensors live: the CPU for MPI, the rank's GPU for NCCL. Buffers
  // a plan or a pipeline edge allocates for communication go there.
  virtual Device device() const { return Device::cpu(); }

  // In place: every member gets the elementwise sum over the group.
  virtual void all_reduce(const Tensor& buffer, const DeviceGroup& group) = 0;
  // `out` is the concatenation (flat) of every member's `in`, member order; member i sends
  // counts[i] elements. Empty counts: every member sends in.numel().
  virtual void all_gather(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                          std::span<const int64_t> counts = {}) = 0;
  // `in` (flat) is cut into consecutive pieces of counts[0], counts[1], ... elements; member i
  // gets in `out` the sum over members of piece i. Empty counts: equal pieces of out.numel().
  virtual void reduce_scatter(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                              std::span<const int64_t> counts = {}) = 0;
  // Member i sends the j-th consecutive piece of `in` (send_counts[j] elements) to member j,
  // and receives from member j recv_counts[j] elements into the j-th piece of `out`.
  // Empty counts: equal pieces.
  virtual void all_to_all(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                          std::span<const int64_t> send_counts = {}, std::span<const int64_t> recv_counts = {}) = 0;
  // In place: every member gets the buffer of `root` (a world rank in the group).
  virtual void broadcast(const Tensor& buffer, DeviceId root, const DeviceGroup& group) = 0;
  // Blocking point-to-point with a world rank.
  virtual void send(const Tensor& tensor, DeviceId peer) = 0;
  virtual void recv(const Tensor& tensor, DeviceId peer) = 0;
  // Posts every op of the batch at once and waits for all of them, so any pattern of sends
  // and receives that matches across ranks completes. Messages between two ranks match in
  // the order they appear in each rank's batch.
  virtual void batch_send_recv(std::span<const P2POp> ops) = 0;
  virtual void barrier(const DeviceGroup& group) = 0;

  // Every rank of the world, in order.
  DeviceGroup world() const { return DeviceGroup::range(0, world_size()); }
};

// The communicator of a world of one device (rank 0 on `device`, backend "local"): every
// collective over the group {0} leaves the data as it is (out = in); point-to-point has no peer
// and throws. A single-device run is the one-device case of every parallel layout.
std::unique_ptr<Communicator> make_local_communicator(Device device = Device::cpu());

// The MPI communicator over MPI_COMM_WORLD (MPI must be initialised: see mpi_session.h).
std::unique_ptr<Communicator> make_mpi_communicator();

// The NCCL communicator for CUDA tensors (lib/hspmd/cuda/comm_nccl.cpp), collective over every
// rank; `device` < 0: the rank's index among the ranks of its node, modulo the visible GPUs.
// Throws in a build without the CUDA backend (comm_nccl_none.cpp).
std::unique_ptr<Communicator> make_nccl_communicator(int device = -1);

}  // namespace hetu
