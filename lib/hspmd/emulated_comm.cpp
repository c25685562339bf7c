// The emulating Communicator decorator. See Note [Emulated devices].
#include "lib/hspmd/emulated_comm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <thread>

#include "lib/util/error.h"

namespace hetu {
namespace {

// Sleeps shorter than this wait until more is owed: a sleep overshoots by tens of
// microseconds, and what was overslept is credited (owed_s_ goes negative).
constexpr double kMinSleep = 200e-6;

double bytes_of(const Tensor& t) { return static_cast<double>(t.numel()) * static_cast<double>(dtype_size(t.dtype())); }

double max_piece_bytes(std::span<const int64_t> counts, double total_bytes, int64_t members, const Tensor& t) {
  if (counts.empty()) return total_bytes / static_cast<double>(members);
  const int64_t largest = *std::max_element(counts.begin(), counts.end());
  return static_cast<double>(largest) * static_cast<double>(dtype_size(t.dtype()));
}

int64_t tree_depth(int64_t members) {
  int64_t depth = 0;
  while ((int64_t{1} << depth) < members) ++depth;
  return depth;
}

}  // namespace

// Note [Emulated devices]: one machine rehearses a cluster of unlike devices and links.
// - Compute. The time between two communications of a rank is its compute (a pipeline
//   stage's forward or backward of one micro-batch, the layers between two tp collectives,
//   the optimizer step before the next step's first message), so before each communication
//   the rank sleeps (F - 1) x the compute since its previous communication returned. What a
//   rank of a device F times slower would send at time F*t it sends at t + (F-1)*t. The
//   compute is the wall time between the two; with EmulationSpec::cpu_time, the thread's
//   CPU time: a rank that waits for a core (more ranks than cores, as rehearsals on one
//   machine have) is not computing, and the wait is not multiplied by F (it still delays the
//   rank once, as it would any device), so layouts whose ranks compute at the same time are
//   not penalised for sharing the cores. Waiting inside a communication is not compute and is
//   not slowed. A run without communication (one device) has nothing to pace and runs at
//   full speed. emulated_compute_s counts the emulated compute in CPU time either way.
// - Links. A message between ranks of different nodes pays latency + bytes / bandwidth of
//   the slower of the two nodes' links; the sender sleeps it before sending (a rank's
//   messages go out one after another, each paying its latency). A ring collective
//   (all_reduce: 2(p-1) steps of n/p bytes; all_gather, reduce_scatter: p-1 steps of the
//   largest piece) pays per step the slowest hop between consecutive members on different
//   nodes, every member sleeping the same time, so the collective ends that much later; a
//   broadcast or barrier pays ceil(log2 p) such steps (a binomial tree), an all_to_all the
//   larger of this rank's messages out and in. Members on one node pay nothing.
// - Pacing. Both delays are paid on average exactly: a sleep that overruns (a busy machine
//   wakes a sleeper late) is taken off the next sleeps of its kind, so the emulated device
//   and link are not slower than stated by the scheduler's lateness, which a cost model
//   cannot know (scripts/bench/plan_accuracy.sh measures on such machines).
EmulationClock EmulationClock::real() {
  return {[] {
            return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
          },
          [](double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); },
          [] {
            timespec t{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
            return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
          }};
}

EmulatedLink slower_link(const EmulatedLink& a, const EmulatedLink& b) {
  const double gbps = a.gbps > 0 && b.gbps > 0 ? std::min(a.gbps, b.gbps) : std::max(a.gbps, b.gbps);
  return {gbps, std::max(a.latency_us, b.latency_us)};
}

double link_delay_s(const EmulationSpec& spec, int64_t node_a, int64_t node_b, double bytes) {
  if (node_a == node_b) return 0;
  const EmulatedLink link = slower_link(spec.links.at(static_cast<size_t>(node_a)), spec.links.at(static_cast<size_t>(node_b)));
  return link.latency_us * 1e-6 + (link.gbps > 0 ? bytes * 8 / (link.gbps * 1e9) : 0.0);
}

EmulatedCommunicator::EmulatedCommunicator(std::unique_ptr<Communicator> inner, EmulationSpec spec,
                                           EmulationClock clock)
    : inner_(std::move(inner)), spec_(std::move(spec)), clock_(std::move(clock)) {
  HT_CHECK(inner_ != nullptr, "emulated communicator: no communicator to wrap");
  HT_CHECK(spec_.slowdown >= 1, "emulated communicator: slowdown must be >= 1, got {}", spec_.slowdown);
  HT_CHECK(static_cast<int64_t>(spec_.node_of_rank.size()) == inner_->world_size(),
           "emulated communicator: {} node entries for {} ranks", spec_.node_of_rank.size(), inner_->world_size());
  for (int64_t node : spec_.node_of_rank) {
    HT_CHECK(node >= 0 && node < static_cast<int64_t>(spec_.links.size()),
             "emulated communicator: node {} has no link entry ({} nodes)", node, spec_.links.size());
  }
  if (!clock_.cpu_now) clock_.cpu_now = clock_.now;
  restart_compute();
}

void EmulatedCommunicator::restart_compute() {
  last_return_ = clock_.now();
  cpu_last_return_ = clock_.cpu_now();
}

void EmulatedCommunicator::count_compute() {
  const double now = clock_.now(), cpu = clock_.cpu_now();
  const double compute = spec_.cpu_time ? cpu - cpu_last_return_ : now - last_return_;
  stats_.compute_s += compute;
  owed_s_ += (spec_.slowdown - 1) * compute;
  emulated_compute_s_ += spec_.slowdown * (cpu - cpu_last_return_);
  last_return_ = now;
  cpu_last_return_ = cpu;
}

void EmulatedCommunicator::pay_slowdown(double min_sleep_s) {
  count_compute();
  if (owed_s_ > 0 && owed_s_ >= min_sleep_s) {
    const double start = clock_.now();
    clock_.sleep(owed_s_);
    const double slept = clock_.now() - start;
    stats_.slowdown_sleep_s += slept;
    owed_s_ -= slept;
  }
}

void EmulatedCommunicator::set_slowdown(double slowdown) {
  HT_CHECK(slowdown >= 1, "emulated communicator: slowdown must be >= 1, got {}", slowdown);
  count_compute();  // owed at the old factor
  spec_.slowdown = slowdown;
}

double EmulatedCommunicator::emulated_compute_s() const {
  return emulated_compute_s_ + spec_.slowdown * (clock_.cpu_now() - cpu_last_return_);
}

void EmulatedCommunicator::settle_compute() {
  pay_slowdown(0);
  restart_compute();
}

void EmulatedCommunicator::communicate(double link_s, const std::function<void()>& op) {
  pay_slowdown(kMinSleep);
  if (link_s > 0) {
    link_owed_s_ += link_s;
    if (link_owed_s_ > 0) {
      const double start = clock_.now();
      clock_.sleep(link_owed_s_);
      const double slept = clock_.now() - start;
      stats_.link_sleep_s += slept;
      link_owed_s_ -= slept;
    }
  }
  op();
  restart_compute();
}

double EmulatedCommunicator::ring_delay_s(const DeviceGroup& group, int64_t steps, double step_bytes) const {
  const int64_t p = group.size();
  double slowest = 0;
  for (int64_t i = 0; i < p && p > 1; ++i) {
    const DeviceId a = group.devices()[static_cast<size_t>(i)];
    const DeviceId b = group.devices()[static_cast<size_t>((i + 1) % p)];
    slowest = std::max(slowest, link_delay_s(spec_, spec_.node_of_rank.at(static_cast<size_t>(a)),
                                             spec_.node_of_rank.at(static_cast<size_t>(b)), step_bytes));
  }
  return static_cast<double>(steps) * slowest;
}

double EmulatedCommunicator::p2p_delay_s(DeviceId peer, double bytes) const {
  return link_delay_s(spec_, spec_.node_of_rank.at(static_cast<size_t>(rank())),
                      spec_.node_of_rank.at(static_cast<size_t>(peer)), bytes);
}

void EmulatedCommunicator::all_reduce(const Tensor& buffer, const DeviceGroup& group) {
  const int64_t p = group.size();
  const double delay = ring_delay_s(group, 2 * (p - 1), bytes_of(buffer) / static_cast<double>(p));
  communicate(delay, [&] { inner_->all_reduce(buffer, group); });
}

void EmulatedCommunicator::all_gather(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                                      std::span<const int64_t> counts) {
  const int64_t p = group.size();
  const double delay = ring_delay_s(group, p - 1, max_piece_bytes(counts, bytes_of(out), p, out));
  communicate(delay, [&] { inner_->all_gather(in, out, group, counts); });
}

void EmulatedCommunicator::reduce_scatter(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                                          std::span<const int64_t> counts) {
  const int64_t p = group.size();
  const double delay = ring_delay_s(group, p - 1, max_piece_bytes(counts, bytes_of(in), p, in));
  communicate(delay, [&] { inner_->reduce_scatter(in, out, group, counts); });
}

void EmulatedCommunicator::all_to_all(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                                      std::span<const int64_t> send_counts, std::span<const int64_t> recv_counts) {
  const int64_t p = group.size();
  double out_s = 0, in_s = 0;
  for (int64_t j = 0; j < p; ++j) {
    const DeviceId peer = group.devices()[static_cast<size_t>(j)];
    if (peer == rank()) continue;
    const double send_elems = send_counts.empty() ? static_cast<double>(in.numel() / p)
                                                  : static_cast<double>(send_counts[static_cast<size_t>(j)]);
    const double recv_elems = recv_counts.empty() ? static_cast<double>(out.numel() / p)
                                                  : static_cast<double>(recv_counts[static_cast<size_t>(j)]);
    out_s += p2p_delay_s(peer, send_elems * static_cast<double>(dtype_size(in.dtype())));
    in_s += p2p_delay_s(peer, recv_elems * static_cast<double>(dtype_size(out.dtype())));
  }
  communicate(std::max(out_s, in_s), [&] { inner_->all_to_all(in, out, group, send_counts, recv_counts); });
}

void EmulatedCommunicator::broadcast(const Tensor& buffer, DeviceId root, const DeviceGroup& group) {
  const double delay = ring_delay_s(group, tree_depth(group.size()), bytes_of(buffer));
  communicate(delay, [&] { inner_->broadcast(buffer, root, group); });
}

void EmulatedCommunicator::send(const Tensor& tensor, DeviceId peer) {
  communicate(p2p_delay_s(peer, bytes_of(tensor)), [&] { inner_->send(tensor, peer); });
}

void EmulatedCommunicator::recv(const Tensor& tensor, DeviceId peer) {
  communicate(0, [&] { inner_->recv(tensor, peer); });
}

void EmulatedCommunicator::batch_send_recv(std::span<const P2POp> ops) {
  double delay = 0;
  for (const P2POp& op : ops) {
    if (op.kind == P2PKind::send) delay += p2p_delay_s(op.peer, bytes_of(op.tensor));
  }
  communicate(delay, [&] { inner_->batch_send_recv(ops); });
}

void EmulatedCommunicator::barrier(const DeviceGroup& group) {
  communicate(ring_delay_s(group, tree_depth(group.size()), 0), [&] { inner_->barrier(group); });
}

}  // namespace hetu
