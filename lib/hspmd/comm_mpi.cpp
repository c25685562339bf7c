// The MPI Communicator for CPU tensors: device id = rank of MPI_COMM_WORLD. Sub-communicators
// are made with MPI_Comm_create_group (collective over the members only, ranks in group
// order) on first use and cached per ordered device list. Uneven pieces use the v-variants
// (MPI_Allgatherv, MPI_Reduce_scatter, MPI_Alltoallv); batches use Isend/Irecv + Waitall.
// bf16 travels as 16-bit words; its sums use a user-defined MPI_Op that adds in f32 and
// rounds each partial sum to bf16 (what a bf16 reduction on a GPU does).
#include <mpi.h>

#include <climits>
#include <map>
#include <numeric>

#include "lib/hspmd/comm_trace.h"
#include "lib/hspmd/communicator.h"
#include "lib/util/error.h"

namespace hetu {
namespace {

constexpr int kP2PTag = 7001;          // every point-to-point message of hetu
constexpr int kCreateGroupTag = 7002;  // MPI_Comm_create_group

MPI_Datatype mpi_type(const char* op, const Tensor& t) {
  HT_CHECK(t.defined(), "{}: undefined tensor", op);
  if (t.device().is_cpu()) {
    if (t.dtype() == DType::f32) return MPI_FLOAT;
    if (t.dtype() == DType::f64) return MPI_DOUBLE;
    if (t.dtype() == DType::bf16) return MPI_UINT16_T;
  }
  HT_THROW("op {} not implemented for device {} / dtype {}", op, t.device().str(), to_string(t.dtype()));
}

// MPI_Op body: inout[i] = bf16(f32(in[i]) + f32(inout[i])).
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

// The sum for the tensor's dtype (bf16's op is created once, freed by MPI_Finalize).
MPI_Op sum_op(const Tensor& t) {
  if (t.dtype() != DType::bf16) return MPI_SUM;
  static MPI_Op op = [] {
    MPI_Op made = MPI_OP_NULL;
    MPI_Op_create(&bf16_sum, /*commute=*/1, &made);
    return made;
  }();
  return op;
}

// The MPI datatype of a contiguous tensor the op may read or write.
MPI_Datatype checked(const char* op, const Tensor& t) {
  MPI_Datatype type = mpi_type(op, t);
  HT_CHECK(t.is_contiguous(), "{}: the tensor must be contiguous (shape {})", op, shape_str(t.shape()));
  return type;
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  HT_CHECK(a.dtype() == b.dtype(), "{}: dtypes differ: {} vs {}", op, to_string(a.dtype()), to_string(b.dtype()));
}

int to_int(const char* op, int64_t count) {
  HT_CHECK(count >= 0 && count <= INT_MAX, "{}: {} elements do not fit an MPI count", op, count);
  return static_cast<int>(count);
}

void check_mpi(const char* op, int code) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  HT_THROW("{}: MPI error: {}", op, std::string(text, static_cast<size_t>(length)));
}

// counts as ints, or `n` copies of `each` when empty; checks the count and the total.
std::vector<int> counts_of(const char* op, std::span<const int64_t> counts, int64_t n, int64_t each,
                           int64_t expected_total, const char* what) {
  std::vector<int> out;
  if (counts.empty()) {
    out.assign(static_cast<size_t>(n), to_int(op, each));
  } else {
    HT_CHECK(static_cast<int64_t>(counts.size()) == n, "{}: {} {} for a group of {}", op, counts.size(), what, n);
    for (int64_t c : counts) out.push_back(to_int(op, c));
  }
  const int64_t total = std::accumulate(out.begin(), out.end(), int64_t{0});
  HT_CHECK(total == expected_total, "{}: {} add up to {} elements, the buffer has {}", op, what, total,
           expected_total);
  return out;
}

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> out(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) out[i] = out[i - 1] + counts[i - 1];
  return out;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    HT_CHECK(initialized, "mpi communicator: MPI is not initialised (create an MpiSession first)");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (auto& [devices, comm] : comms_) MPI_Comm_free(&comm);
  }

  DeviceId rank() const override { return rank_; }
  int64_t world_size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void all_reduce(const Tensor& buffer, const DeviceGroup& group) override {
    const char* op = "all_reduce";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(buffer)}, {"ranks", group.size()}});
    MPI_Datatype type = checked(op, buffer);
    MPI_Comm comm = comm_for(op, group);
    check_mpi(op, MPI_Allreduce(MPI_IN_PLACE, buffer.raw_data(), to_int(op, buffer.numel()), type, sum_op(buffer), comm));
  }

  void all_gather(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                  std::span<const int64_t> counts) override {
    const char* op = "all_gather";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(in)}, {"ranks", group.size()}});
    MPI_Datatype type = checked(op, in);
    checked(op, out);
    check_same_dtype(op, in, out);
    MPI_Comm comm = comm_for(op, group);
    const std::vector<int> c = counts_of(op, counts, group.size(), in.numel(), out.numel(), "counts");
    const int64_t me = *group.index_of(rank_);
    HT_CHECK(c[static_cast<size_t>(me)] == in.numel(), "all_gather: member {} sends {} elements, counts say {}", me,
             in.numel(), c[static_cast<size_t>(me)]);
    const std::vector<int> displs = displacements(c);
    check_mpi(op, MPI_Allgatherv(in.raw_data(), to_int(op, in.numel()), type, out.raw_data(), c.data(),
                                 displs.data(), type, comm));
  }

  void reduce_scatter(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                      std::span<const int64_t> counts) override {
    const char* op = "reduce_scatter";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(in)}, {"ranks", group.size()}});
    MPI_Datatype type = checked(op, in);
    checked(op, out);
    check_same_dtype(op, in, out);
    MPI_Comm comm = comm_for(op, group);
    const std::vector<int> c = counts_of(op, counts, group.size(), out.numel(), in.numel(), "counts");
    const int64_t me = *group.index_of(rank_);
    HT_CHECK(c[static_cast<size_t>(me)] == out.numel(), "reduce_scatter: member {} receives {} elements, counts say {}",
             me, out.numel(), c[static_cast<size_t>(me)]);
    check_mpi(op, MPI_Reduce_scatter(in.raw_data(), out.raw_data(), c.data(), type, sum_op(in), comm));
  }

  void all_to_all(const Tensor& in, const Tensor& out, const DeviceGroup& group, std::span<const int64_t> send_counts,
                  std::span<const int64_t> recv_counts) override {
    const char* op = "all_to_all";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(in)}, {"ranks", group.size()}});
    MPI_Datatype type = checked(op, in);
    checked(op, out);
    check_same_dtype(op, in, out);
    MPI_Comm comm = comm_for(op, group);
    const int64_t n = group.size();
    const std::vector<int> sc = counts_of(op, send_counts, n, in.numel() / n, in.numel(), "send counts");
    const std::vector<int> rc = counts_of(op, recv_counts, n, out.numel() / n, out.numel(), "recv counts");
    const std::vector<int> sd = displacements(sc), rd = displacements(rc);
    check_mpi(op, MPI_Alltoallv(in.raw_data(), sc.data(), sd.data(), type, out.raw_data(), rc.data(), rd.data(), type,
                                comm));
  }

  void broadcast(const Tensor& buffer, DeviceId root, const DeviceGroup& group) override {
    const char* op = "broadcast";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(buffer)}, {"ranks", group.size()}});
    MPI_Datatype type = checked(op, buffer);
    MPI_Comm comm = comm_for(op, group);
    const std::optional<int64_t> root_index = group.index_of(root);
    HT_CHECK(root_index, "broadcast: root {} is not in group {}", root, group.to_string());
    check_mpi(op, MPI_Bcast(buffer.raw_data(), to_int(op, buffer.numel()), type, static_cast<int>(*root_index), comm));
  }

  void send(const Tensor& tensor, DeviceId peer) override {
    const char* op = "send";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(tensor)}, {"peer", peer}});
    MPI_Datatype type = checked(op, tensor);
    check_peer(op, peer);
    check_mpi(op, MPI_Send(tensor.raw_data(), to_int(op, tensor.numel()), type, peer, kP2PTag, MPI_COMM_WORLD));
  }

  void recv(const Tensor& tensor, DeviceId peer) override {
    const char* op = "recv";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(tensor)}, {"peer", peer}});
    MPI_Datatype type = checked(op, tensor);
    check_peer(op, peer);
    check_mpi(op, MPI_Recv(tensor.raw_data(), to_int(op, tensor.numel()), type, peer, kP2PTag, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
  }

  void batch_send_recv(std::span<const P2POp> ops) override {
    const char* op = "batch_send_recv";
    timing::Scope scope(timing::Phase::comm, "send_recv", timing::Track::comm);
    if (scope.traced()) scope.set_args(p2p_trace_args(ops));
    std::vector<MPI_Request> requests(ops.size(), MPI_REQUEST_NULL);
    for (size_t i = 0; i < ops.size(); ++i) {
      const P2POp& p = ops[i];
      MPI_Datatype type = checked(op, p.tensor);
      check_peer(op, p.peer);
      const int count = to_int(op, p.tensor.numel());
      if (p.kind == P2PKind::send) {
        check_mpi(op, MPI_Isend(p.tensor.raw_data(), count, type, p.peer, kP2PTag, MPI_COMM_WORLD, &requests[i]));
      } else {
        check_mpi(op, MPI_Irecv(p.tensor.raw_data(), count, type, p.peer, kP2PTag, MPI_COMM_WORLD, &requests[i]));
      }
    }
    check_mpi(op, MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  }

  void barrier(const DeviceGroup& group) override {
    const char* op = "barrier";
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm);
    check_mpi(op, MPI_Barrier(comm_for(op, group)));
  }

 private:
  void check_peer(const char* op, DeviceId peer) const {
    HT_CHECK(peer >= 0 && peer < size_ && peer != rank_, "{}: peer {} is not another rank of the {} ranks (this is {})",
             op, peer, size_, rank_);
  }

  // The cached sub-communicator of `group`; this rank must be a member.
  MPI_Comm comm_for(const char* op, const DeviceGroup& group) {
    HT_CHECK(group.contains(rank_), "{}: rank {} is not in group {}", op, rank_, group.to_string());
    for (DeviceId d : group.devices())
      HT_CHECK(d < size_, "{}: group {} names device {}, but only {} ranks run", op, group.to_string(), d, size_);
    auto it = comms_.find(group.devices());
    if (it != comms_.end()) return it->second;
    MPI_Group world_group = MPI_GROUP_NULL, sub_group = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    const std::vector<int> ranks(group.devices().begin(), group.devices().end());
    MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &sub_group);
    MPI_Comm comm = MPI_COMM_NULL;
    const int code = MPI_Comm_create_group(MPI_COMM_WORLD, sub_group, kCreateGroupTag, &comm);
    MPI_Group_free(&sub_group);
    MPI_Group_free(&world_group);
    check_mpi(op, code);
    comms_.emplace(group.devices(), comm);
    return comm;
  }

  int rank_ = 0;
  int size_ = 1;
  std::map<std::vector<DeviceId>, MPI_Comm> comms_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace hetu
