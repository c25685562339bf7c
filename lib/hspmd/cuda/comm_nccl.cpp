// The NCCL Communicator (see comm_nccl.h). Equal pieces use ncclAllGather/ncclReduceScatter;
// uneven pieces a group of ncclBroadcast / ncclReduce calls, one per member; all_to_all and
// batches are ncclSend/ncclRecv inside ncclGroupStart/End (a member's own piece of an
// all_to_all is a device copy). barrier is a one-element all_reduce followed by a stream
// synchronisation. Tensors must be contiguous and on this rank's GPU. Every operation is
// watched against the communication deadline by an NcclWatchdog (nccl_watchdog.h); the
// ncclUniqueId exchanges over MPI wait under it too (mpi_wait_all, comm_deadline.h).
#include "lib/hspmd/cuda/comm_nccl.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "lib/core/cuda/cuda_check.h"
#include "lib/core/cuda_runtime.h"
#include "lib/hspmd/comm_deadline.h"
#include "lib/hspmd/cuda/nccl_watchdog.h"
#include "lib/hspmd/comm_trace.h"
#include "lib/util/error.h"

namespace hetu {
namespace {

constexpr int kNcclIdTag = 7003;

void check_nccl(const char* op, ncclResult_t r) {
  if (r != ncclSuccess) HT_THROW("{}: NCCL error: {} ({})", op, ncclGetErrorString(r), ncclGetLastError(nullptr));
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::bf16: return ncclBfloat16;
    case DType::f16: return ncclFloat16;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::u8: return ncclUint8;
  }
  HT_THROW("nccl: unknown dtype");
}

std::vector<int64_t> counts_of(const char* op, std::span<const int64_t> counts, int64_t n, int64_t each,
                               int64_t expected_total, const char* what) {
  std::vector<int64_t> out;
  if (counts.empty()) {
    out.assign(static_cast<size_t>(n), each);
  } else {
    HT_CHECK(static_cast<int64_t>(counts.size()) == n, "{}: {} {} for a group of {}", op, counts.size(), what, n);
    out.assign(counts.begin(), counts.end());
  }
  const int64_t total = std::accumulate(out.begin(), out.end(), int64_t{0});
  HT_CHECK(total == expected_total, "{}: {} add up to {} elements, the buffer has {}", op, what, total,
           expected_total);
  return out;
}

std::vector<int64_t> displacements(const std::vector<int64_t>& counts) {
  std::vector<int64_t> out(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) out[i] = out[i - 1] + counts[i - 1];
  return out;
}

bool all_equal(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [&](int64_t c) { return c == v.front(); });
}

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(int device) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    HT_CHECK(initialized, "nccl communicator: MPI is not initialised (create an MpiSession first)");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    HT_CHECK(cuda::is_available(), "nccl communicator: no usable CUDA device on rank {}: {}", rank_,
             cuda::unavailable_reason());
    if (device < 0) {
      MPI_Comm node = MPI_COMM_NULL;
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
      int local = 0;
      MPI_Comm_rank(node, &local);
      MPI_Comm_free(&node);
      device = local % cuda::device_count();
    }
    device_ = device;
    cuda::set_device(device_);
    ncclUniqueId id{};
    if (rank_ == 0) check_nccl("nccl communicator", ncclGetUniqueId(&id));
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD, &request);
    mpi_wait_all("nccl communicator: the ncclUniqueId broadcast", {&request, 1}, [](auto) { return other_ranks(); });
    check_nccl("nccl communicator", ncclCommInitRank(&world_, size_, id, rank_));
    comms_.emplace(world().devices(), world_);
    watchdog_ = std::make_unique<NcclWatchdog>(device_, rank_);
  }

  ~NcclCommunicator() override {
    watchdog_.reset();  // its thread stops before the communicators go
    for (auto& [devices, comm] : comms_) ncclCommDestroy(comm);
  }

  DeviceId rank() const override { return rank_; }
  int64_t world_size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  Device device() const override { return Device::cuda(device_); }

  void all_reduce(const Tensor& buffer, const DeviceGroup& group) override {
    const char* op = "all_reduce";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm, {{"bytes", tensor_bytes(buffer)}, {"ranks", group.size()}});
    check(op, buffer);
    ncclComm_t comm = comm_for(op, group);
    check_nccl(op, ncclAllReduce(buffer.raw_data(), buffer.raw_data(), count(buffer), nccl_type(buffer.dtype()),
                                 ncclSum, comm, stream()));
    watch(op, comm, group);
  }

  void all_gather(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                  std::span<const int64_t> counts) override {
    const char* op = "all_gather";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm, {{"bytes", tensor_bytes(in)}, {"ranks", group.size()}});
    check_pair(op, in, out);
    ncclComm_t comm = comm_for(op, group);
    const std::vector<int64_t> c = counts_of(op, counts, group.size(), in.numel(), out.numel(), "counts");
    const int64_t me = *group.index_of(rank_);
    HT_CHECK(c[static_cast<size_t>(me)] == in.numel(), "all_gather: member {} sends {} elements, counts say {}", me,
             in.numel(), c[static_cast<size_t>(me)]);
    const ncclDataType_t type = nccl_type(in.dtype());
    if (all_equal(c)) {
      check_nccl(op, ncclAllGather(in.raw_data(), out.raw_data(), count(in), type, comm, stream()));
      watch(op, comm, group);
      return;
    }
    const std::vector<int64_t> d = displacements(c);
    check_nccl(op, ncclGroupStart());
    for (size_t i = 0; i < c.size(); ++i) {
      check_nccl(op, ncclBroadcast(in.raw_data(), at(out, d[i]), static_cast<size_t>(c[i]), type, static_cast<int>(i),
                                   comm, stream()));
    }
    check_nccl(op, ncclGroupEnd());
    watch(op, comm, group);
  }

  void reduce_scatter(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                      std::span<const int64_t> counts) override {
    const char* op = "reduce_scatter";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm, {{"bytes", tensor_bytes(in)}, {"ranks", group.size()}});
    check_pair(op, in, out);
    ncclComm_t comm = comm_for(op, group);
    const std::vector<int64_t> c = counts_of(op, counts, group.size(), out.numel(), in.numel(), "counts");
    const int64_t me = *group.index_of(rank_);
    HT_CHECK(c[static_cast<size_t>(me)] == out.numel(), "reduce_scatter: member {} receives {} elements, counts say {}",
             me, out.numel(), c[static_cast<size_t>(me)]);
    const ncclDataType_t type = nccl_type(in.dtype());
    if (all_equal(c)) {
      check_nccl(op, ncclReduceScatter(in.raw_data(), out.raw_data(), count(out), type, ncclSum, comm, stream()));
      watch(op, comm, group);
      return;
    }
    const std::vector<int64_t> d = displacements(c);
    check_nccl(op, ncclGroupStart());
    for (size_t i = 0; i < c.size(); ++i) {
      check_nccl(op, ncclReduce(at(in, d[i]), out.raw_data(), static_cast<size_t>(c[i]), type, ncclSum,
                                static_cast<int>(i), comm, stream()));
    }
    check_nccl(op, ncclGroupEnd());
    watch(op, comm, group);
  }

  void all_to_all(const Tensor& in, const Tensor& out, const DeviceGroup& group, std::span<const int64_t> send_counts,
                  std::span<const int64_t> recv_counts) override {
    const char* op = "all_to_all";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm, {{"bytes", tensor_bytes(in)}, {"ranks", group.size()}});
    check_pair(op, in, out);
    ncclComm_t comm = comm_for(op, group);
    const int64_t n = group.size();
    const std::vector<int64_t> sc = counts_of(op, send_counts, n, in.numel() / n, in.numel(), "send counts");
    const std::vector<int64_t> rc = counts_of(op, recv_counts, n, out.numel() / n, out.numel(), "recv counts");
    const std::vector<int64_t> sd = displacements(sc), rd = displacements(rc);
    const size_t me = static_cast<size_t>(*group.index_of(rank_));
    HT_CHECK(sc[me] == rc[me], "all_to_all: member {} sends itself {} elements but receives {}", me, sc[me], rc[me]);
    const ncclDataType_t type = nccl_type(in.dtype());
    HT_CUDA_CHECK(cudaMemcpyAsync(at(out, rd[me]), at(in, sd[me]), static_cast<size_t>(sc[me]) * dtype_size(in.dtype()),
                                  cudaMemcpyDeviceToDevice, stream()));
    check_nccl(op, ncclGroupStart());
    for (size_t j = 0; j < static_cast<size_t>(n); ++j) {
      if (j == me) continue;
      if (sc[j] > 0) check_nccl(op, ncclSend(at(in, sd[j]), static_cast<size_t>(sc[j]), type, static_cast<int>(j), comm,
                                             stream()));
      if (rc[j] > 0) check_nccl(op, ncclRecv(at(out, rd[j]), static_cast<size_t>(rc[j]), type, static_cast<int>(j), comm,
                                             stream()));
    }
    check_nccl(op, ncclGroupEnd());
    watch(op, comm, group);
  }

  void broadcast(const Tensor& buffer, DeviceId root, const DeviceGroup& group) override {
    const char* op = "broadcast";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm, {{"bytes", tensor_bytes(buffer)}, {"ranks", group.size()}});
    check(op, buffer);
    ncclComm_t comm = comm_for(op, group);
    const std::optional<int64_t> root_index = group.index_of(root);
    HT_CHECK(root_index, "broadcast: root {} is not in group {}", root, group.to_string());
    check_nccl(op, ncclBroadcast(buffer.raw_data(), buffer.raw_data(), count(buffer), nccl_type(buffer.dtype()),
                                 static_cast<int>(*root_index), comm, stream()));
    watch(op, comm, group);
  }

  void send(const Tensor& tensor, DeviceId peer) override {
    const P2POp ops[] = {P2POp::send(tensor, peer)};
    batch_send_recv(ops);
  }

  void recv(const Tensor& tensor, DeviceId peer) override {
    const P2POp ops[] = {P2POp::recv(tensor, peer)};
    batch_send_recv(ops);
  }

  void batch_send_recv(std::span<const P2POp> ops) override {
    const char* op = "batch_send_recv";
    timing::Scope scope(timing::Phase::comm, "send_recv", timing::Track::comm);
    if (scope.traced()) scope.set_args(p2p_trace_args(ops));
    for (const P2POp& p : ops) {
      check(op, p.tensor);
      HT_CHECK(p.peer >= 0 && p.peer < size_ && p.peer != rank_,
               "{}: peer {} is not another rank of the {} ranks (this is {})", op, p.peer, size_, rank_);
    }
    check_nccl(op, ncclGroupStart());
    for (const P2POp& p : ops) {
      const ncclDataType_t type = nccl_type(p.tensor.dtype());
      if (p.kind == P2PKind::send) {
        check_nccl(op, ncclSend(p.tensor.raw_data(), count(p.tensor), type, p.peer, world_, stream()));
      } else {
        check_nccl(op, ncclRecv(p.tensor.raw_data(), count(p.tensor), type, p.peer, world_, stream()));
      }
    }
    check_nccl(op, ncclGroupEnd());
    std::vector<int> peers;
    for (const P2POp& p : ops) {
      if (std::find(peers.begin(), peers.end(), static_cast<int>(p.peer)) == peers.end()) peers.push_back(static_cast<int>(p.peer));
    }
    watchdog_->watch(op, stream(), world_, std::move(peers));
  }

  void barrier(const DeviceGroup& group) override {
    const char* op = "barrier";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm);
    ncclComm_t comm = comm_for(op, group);
    if (!flag_.defined()) flag_ = zeros({1}, DType::f32, Device::cuda(device_));
    check_nccl(op, ncclAllReduce(flag_.raw_data(), flag_.raw_data(), 1, ncclFloat32, ncclSum, comm, stream()));
    watch(op, comm, group);
    HT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  }

 private:
  cudaStream_t stream() const { return static_cast<cudaStream_t>(cuda::current_stream(device_)); }
  static size_t count(const Tensor& t) { return static_cast<size_t>(t.numel()); }
  static void* at(const Tensor& t, int64_t offset) {
    return static_cast<char*>(t.raw_data()) + static_cast<size_t>(offset) * dtype_size(t.dtype());
  }

  // The operation just enqueued over `group`'s communicator, under the deadline.
  void watch(const char* op, ncclComm_t comm, const DeviceGroup& group) {
    std::vector<int> peers;
    for (DeviceId d : group.devices()) {
      if (d != rank_) peers.push_back(static_cast<int>(d));
    }
    watchdog_->watch(op, stream(), comm, std::move(peers));
  }

  void check(const char* op, const Tensor& t) const {
    HT_CHECK(t.defined(), "{}: undefined tensor", op);
    HT_CHECK(t.device() == Device::cuda(device_), "{}: tensor on {}, but this rank's NCCL communicator drives cuda:{}",
             op, t.device().str(), device_);
    HT_CHECK(t.is_contiguous(), "{}: the tensor must be contiguous (shape {})", op, shape_str(t.shape()));
    cuda::set_device(device_);
  }
  void check_pair(const char* op, const Tensor& in, const Tensor& out) const {
    check(op, in);
    check(op, out);
    HT_CHECK(in.dtype() == out.dtype(), "{}: dtypes differ: {} vs {}", op, to_string(in.dtype()),
             to_string(out.dtype()));
  }

  // The cached communicator of `group`; this rank must be a member. A new one is made by the
  // group's members only: the first member sends them a fresh ncclUniqueId over MPI.
  ncclComm_t comm_for(const char* op, const DeviceGroup& group) {
    HT_CHECK(group.contains(rank_), "{}: rank {} is not in group {}", op, rank_, group.to_string());
    for (DeviceId d : group.devices())
      HT_CHECK(d < size_, "{}: group {} names device {}, but only {} ranks run", op, group.to_string(), d, size_);
    auto it = comms_.find(group.devices());
    if (it != comms_.end()) return it->second;
    ncclUniqueId id{};
    const DeviceId leader = group.devices().front();
    if (rank_ == leader) {
      check_nccl(op, ncclGetUniqueId(&id));
      std::vector<MPI_Request> sends;
      for (DeviceId d : group.devices()) {
        if (d == leader) continue;
        sends.push_back(MPI_REQUEST_NULL);
        MPI_Isend(&id, sizeof(id), MPI_BYTE, static_cast<int>(d), kNcclIdTag, MPI_COMM_WORLD, &sends.back());
      }
      mpi_wait_all(op, sends, [&](auto) {
        std::vector<int> members;
        for (DeviceId d : group.devices()) {
          if (d != leader) members.push_back(static_cast<int>(d));
        }
        return members;
      });
    } else {
      MPI_Request request = MPI_REQUEST_NULL;
      MPI_Irecv(&id, sizeof(id), MPI_BYTE, static_cast<int>(leader), kNcclIdTag, MPI_COMM_WORLD, &request);
      mpi_wait_all(op, {&request, 1}, [&](auto) { return std::vector<int>{static_cast<int>(leader)}; });
    }
    ncclComm_t comm = nullptr;
    check_nccl(op, ncclCommInitRank(&comm, static_cast<int>(group.size()), id, static_cast<int>(*group.index_of(rank_))));
    comms_.emplace(group.devices(), comm);
    return comm;
  }

  int rank_ = 0, size_ = 1, device_ = 0;
  ncclComm_t world_ = nullptr;
  std::map<std::vector<DeviceId>, ncclComm_t> comms_;
  Tensor flag_;
  std::unique_ptr<NcclWatchdog> watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(int device) { return std::make_unique<NcclCommunicator>(device); }

}  // namespace hetu
