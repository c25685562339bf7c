// The MPI Communicator for CPU tensors: device id = rank of MPI_COMM_WORLD. Each group's
// communicator is made on first use and cached per ordered device list: the all-ranks group in
// world order is an MPI_Comm_idup of MPI_COMM_WORLD (every rank is a member; waited for under
// the deadline), any other group comes from MPI_Comm_create_group (collective over the members
// only, ranks in group order) after a barrier of the members, both under tags of that group
// (Note [Group creation]). Uneven pieces use the v-variants
// (MPI_Iallgatherv, MPI_Ireduce_scatter, MPI_Ialltoallv). Every operation is posted
// non-blocking and waited for by mpi_wait_all(), under the deadline of comm_deadline.h.
// bf16 and f16 travel as 16-bit words; their sums use user-defined MPI_Ops that add in f32
// and round each partial sum to the 16-bit type (what a bf16/f16 reduction on a GPU does).
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>

#include "lib/hspmd/comm_deadline.h"
#include "lib/hspmd/comm_trace.h"
#include "lib/hspmd/communicator.h"
#include "lib/util/error.h"

namespace hetu {
namespace {

constexpr int kP2PTag = 7001;  // every point-to-point message of hetu (7003: comm_nccl.cpp,
                               // 7010-7013: comm_deadline.cpp)
// Note [Group creation]: a sub-group's communicator is made in two steps, a dissemination
// barrier of the members (point to point, polled under the deadline, so a member that never
// comes ends the job with a message instead of a hang) and then MPI_Comm_create_group, which
// blocks. Both run on MPI_COMM_WORLD, whose tags every group shares, so each group creation
// has tags of its own: kGroupTagBase + 2 h (barrier) and + 1 (MPI_Comm_create_group, whose
// internal messages use it), h a hash of the ordered member list. With one shared tag, a rank
// creating group A and a peer creating group B at that moment (two groups created in a
// different order on different ranks) would take each other's barrier messages as their own:
// both would pass their barriers and block in MPI_Comm_create_group of different groups, out
// of the deadline's reach, and the ranks still in a barrier would name them as stopped. With
// tags per group the barriers do not match, every rank waits under the deadline, and it says
// the ranks wait for each other. The all-ranks group in world order needs neither step: it is
// an MPI_Comm_idup of MPI_COMM_WORLD, a non-blocking collective like every other operation.
constexpr int kGroupTagBase = 8192;    // above every fixed tag of hetu
constexpr int kGroupTagPairs = 12287;  // the tags stay below 32767, the least MPI_TAG_UB allowed

MPI_Datatype mpi_type(const char* op, const Tensor& t) {
  HT_CHECK(t.defined(), "{}: undefined tensor", op);
  if (t.device().is_cpu()) {
    if (t.dtype() == DType::f32) return MPI_FLOAT;
    if (t.dtype() == DType::f64) return MPI_DOUBLE;
    if (t.dtype() == DType::bf16 || t.dtype() == DType::f16) return MPI_UINT16_T;
  }
  HT_THROW("op {} not implemented for device {} / dtype {}", op, t.device().str(), to_string(t.dtype()));
}

// MPI_Op body: inout[i] = bf16(f32(in[i]) + f32(inout[i])).
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

// MPI_Op body: inout[i] = f16(f32(in[i]) + f32(inout[i])).
void f16_sum(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_f16(f16_to_float(a[i]) + f16_to_float(b[i]));
}

MPI_Op make_sum_op(MPI_User_function* body) {
  MPI_Op made = MPI_OP_NULL;
  MPI_Op_create(body, /*commute=*/1, &made);
  return made;
}

// The sum for the tensor's dtype (the 16-bit types' ops are created once, freed by MPI_Finalize).
MPI_Op sum_op(const Tensor& t) {
  if (t.dtype() == DType::bf16) {
    static MPI_Op op = make_sum_op(&bf16_sum);
    return op;
  }
  if (t.dtype() == DType::f16) {
    static MPI_Op op = make_sum_op(&f16_sum);
    return op;
  }
  return MPI_SUM;
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
    read_fault_injection();
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
    maybe_fail(op);
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(buffer)}, {"ranks", group.size()}});
    MPI_Datatype type = checked(op, buffer);
    MPI_Comm comm = comm_for(op, group);
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(op, MPI_Iallreduce(MPI_IN_PLACE, buffer.raw_data(), to_int(op, buffer.numel()), type, sum_op(buffer),
                                 comm, &request));
    wait(op, request, group);
  }

  void all_gather(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                  std::span<const int64_t> counts) override {
    const char* op = "all_gather";
    maybe_fail(op);
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
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(op, MPI_Iallgatherv(in.raw_data(), to_int(op, in.numel()), type, out.raw_data(), c.data(),
                                  displs.data(), type, comm, &request));
    wait(op, request, group);
  }

  void reduce_scatter(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                      std::span<const int64_t> counts) override {
    const char* op = "reduce_scatter";
    maybe_fail(op);
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
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(op, MPI_Ireduce_scatter(in.raw_data(), out.raw_data(), c.data(), type, sum_op(in), comm, &request));
    wait(op, request, group);
  }

  void all_to_all(const Tensor& in, const Tensor& out, const DeviceGroup& group, std::span<const int64_t> send_counts,
                  std::span<const int64_t> recv_counts) override {
    const char* op = "all_to_all";
    maybe_fail(op);
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
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(op, MPI_Ialltoallv(in.raw_data(), sc.data(), sd.data(), type, out.raw_data(), rc.data(), rd.data(),
                                 type, comm, &request));
    wait(op, request, group);
  }

  void broadcast(const Tensor& buffer, DeviceId root, const DeviceGroup& group) override {
    const char* op = "broadcast";
    maybe_fail(op);
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(buffer)}, {"ranks", group.size()}});
    MPI_Datatype type = checked(op, buffer);
    MPI_Comm comm = comm_for(op, group);
    const std::optional<int64_t> root_index = group.index_of(root);
    HT_CHECK(root_index, "broadcast: root {} is not in group {}", root, group.to_string());
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(op, MPI_Ibcast(buffer.raw_data(), to_int(op, buffer.numel()), type, static_cast<int>(*root_index), comm,
                             &request));
    wait(op, request, group);
  }

  void send(const Tensor& tensor, DeviceId peer) override {
    const char* op = "send";
    maybe_fail(op);
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(tensor)}, {"peer", peer}});
    MPI_Datatype type = checked(op, tensor);
    check_peer(op, peer);
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(op, MPI_Isend(tensor.raw_data(), to_int(op, tensor.numel()), type, peer, kP2PTag, MPI_COMM_WORLD,
                            &request));
    wait_peer(op, request, peer);
  }

  void recv(const Tensor& tensor, DeviceId peer) override {
    const char* op = "recv";
    maybe_fail(op);
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm,
                        {{"bytes", tensor_bytes(tensor)}, {"peer", peer}});
    MPI_Datatype type = checked(op, tensor);
    check_peer(op, peer);
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(op, MPI_Irecv(tensor.raw_data(), to_int(op, tensor.numel()), type, peer, kP2PTag, MPI_COMM_WORLD,
                            &request));
    wait_peer(op, request, peer);
  }

  void batch_send_recv(std::span<const P2POp> ops) override {
    const char* op = "batch_send_recv";
    maybe_fail(op);
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
    mpi_wait_all(op, requests, [&](std::span<const MPI_Request> pending) {
      std::vector<int> peers;  // of the ops not done, once each
      for (size_t i = 0; i < ops.size(); ++i) {
        const int peer = static_cast<int>(ops[i].peer);
        if (pending[i] != MPI_REQUEST_NULL && std::find(peers.begin(), peers.end(), peer) == peers.end())
          peers.push_back(peer);
      }
      return peers;
    });
  }

  void barrier(const DeviceGroup& group) override {
    const char* op = "barrier";
    maybe_fail(op);
    timing::Scope scope(timing::Phase::comm, op, timing::Track::comm);
    MPI_Comm comm = comm_for(op, group);
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(op, MPI_Ibarrier(comm, &request));
    wait(op, request, group);
  }

 private:
  void check_peer(const char* op, DeviceId peer) const {
    HT_CHECK(peer >= 0 && peer < size_ && peer != rank_, "{}: peer {} is not another rank of the {} ranks (this is {})",
             op, peer, size_, rank_);
  }

  // For tests of the abort path: HETU_TEST_FAIL_AT="RANK:STEP" makes rank RANK throw in its
  // first communication of step STEP (steps from 1).
  void read_fault_injection() {
    const char* text = std::getenv("HETU_TEST_FAIL_AT");
    if (text == nullptr) return;
    int rank = -1;
    long long step = 0;
    HT_CHECK(std::sscanf(text, "%d:%lld", &rank, &step) == 2 && step > 0,
             "HETU_TEST_FAIL_AT: expected RANK:STEP, got \"{}\"", text);
    if (rank == rank_) fail_at_step_ = step;
  }
  void maybe_fail(const char* op) const {
    if (fail_at_step_ > 0 && timing::current_step() >= fail_at_step_)
      HT_THROW("{} at step {}: a fault injected by HETU_TEST_FAIL_AT", op, timing::current_step());
  }

  // Waits (under the deadline) for the one operation of `group`.
  void wait(const char* op, MPI_Request& request, const DeviceGroup& group) {
    mpi_wait_all(op, {&request, 1}, [&](std::span<const MPI_Request>) { return others_in(group); });
  }
  void wait_peer(const char* op, MPI_Request& request, DeviceId peer) {
    mpi_wait_all(op, {&request, 1}, [&](std::span<const MPI_Request>) { return std::vector<int>{static_cast<int>(peer)}; });
  }
  std::vector<int> others_in(const DeviceGroup& group) const {
    std::vector<int> out;
    for (DeviceId d : group.devices()) {
      if (d != rank_) out.push_back(static_cast<int>(d));
    }
    return out;
  }

  // The group's pair of tags (Note [Group creation]): FNV-1a over the member list.
  static int group_tag(const DeviceGroup& group) {
    uint64_t h = 14695981039346656037ull;
    for (DeviceId d : group.devices()) {
      h ^= static_cast<uint64_t>(d) + 1;
      h *= 1099511628211ull;
    }
    return kGroupTagBase + 2 * static_cast<int>(h % kGroupTagPairs);
  }

  // A dissemination barrier over the members, point to point on MPI_COMM_WORLD under `tag`: in
  // round k member i signals member i + 2^k and waits for member i - 2^k (mod n).
  // A wait past the deadline names the group being created.
  void members_barrier(const char* op, const DeviceGroup& group, int tag) {
    const std::string what = fmt::format("{} (creating the communicator of group {})", op, group.to_string());
    const auto n = static_cast<int64_t>(group.size());
    const int64_t me = *group.index_of(rank_);
    for (int64_t step = 1; step < n; step *= 2) {
      const int to = static_cast<int>(group.devices()[static_cast<size_t>((me + step) % n)]);
      const int from = static_cast<int>(group.devices()[static_cast<size_t>((me - step + n) % n)]);
      int out = 0, in = 0;
      MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      check_mpi(op, MPI_Isend(&out, 1, MPI_INT, to, tag, MPI_COMM_WORLD, &requests[0]));
      check_mpi(op, MPI_Irecv(&in, 1, MPI_INT, from, tag, MPI_COMM_WORLD, &requests[1]));
      mpi_wait_all(what.c_str(), requests, [&](std::span<const MPI_Request>) { return std::vector<int>{from}; });
    }
  }

  bool is_world_in_order(const DeviceGroup& group) const {
    if (group.size() != size_) return false;
    for (int64_t i = 0; i < size_; ++i) {
      if (group.devices()[static_cast<size_t>(i)] != i) return false;
    }
    return true;
  }

  // The cached sub-communicator of `group`; this rank must be a member.
  MPI_Comm comm_for(const char* op, const DeviceGroup& group) {
    HT_CHECK(group.contains(rank_), "{}: rank {} is not in group {}", op, rank_, group.to_string());
    for (DeviceId d : group.devices())
      HT_CHECK(d < size_, "{}: group {} names device {}, but only {} ranks run", op, group.to_string(), d, size_);
    auto it = comms_.find(group.devices());
    if (it != comms_.end()) return it->second;
    MPI_Comm comm = MPI_COMM_NULL;
    if (is_world_in_order(group)) {
      const std::string what = fmt::format("{} (creating the communicator of all ranks)", op);
      MPI_Request request = MPI_REQUEST_NULL;
      check_mpi(op, MPI_Comm_idup(MPI_COMM_WORLD, &comm, &request));
      wait(what.c_str(), request, group);
    } else {
      const int tag = group_tag(group);
      members_barrier(op, group, tag);  // MPI_Comm_create_group blocks: it starts once every member is here
      MPI_Group world_group = MPI_GROUP_NULL, sub_group = MPI_GROUP_NULL;
      MPI_Comm_group(MPI_COMM_WORLD, &world_group);
      const std::vector<int> ranks(group.devices().begin(), group.devices().end());
      MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &sub_group);
      const int code = MPI_Comm_create_group(MPI_COMM_WORLD, sub_group, tag + 1, &comm);
      MPI_Group_free(&sub_group);
      MPI_Group_free(&world_group);
      check_mpi(op, code);
    }
    comms_.emplace(group.devices(), comm);
    return comm;
  }

  int rank_ = 0;
  int size_ = 1;
  int64_t fail_at_step_ = 0;  // HETU_TEST_FAIL_AT
  std::map<std::vector<DeviceId>, MPI_Comm> comms_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace hetu
