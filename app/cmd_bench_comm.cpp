// `hetu bench comm` (run under mpirun): nccl-tests style table of the communicator over all
// ranks, per message size from 1 KiB to 16 MiB (f32): all_reduce, all_gather,
// reduce_scatter, and the generic repartition (plan_repartition + execute of S(0) -> S(1)
// over every rank, an all-to-all of boxes). Time is the slowest rank's mean over
// `iterations`; algbw = size / time; busbw = algbw x the ring factor of nccl-tests
// (all_reduce 2(n-1)/n; the others (n-1)/n). size is the full tensor: the all_reduce buffer,
// the all_gather output, the reduce_scatter input, the repartitioned global tensor.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <functional>

#include "app/commands.h"
#include "lib/dist/communicator.h"
#include "lib/dist/mpi_session.h"
#include "lib/dist/plan_executor.h"
#include "lib/dist/planner.h"

namespace hetu::app {
namespace {

constexpr int64_t kMinBytes = int64_t{1} << 10;  // 1 KiB
constexpr int64_t kMaxBytes = int64_t{1} << 24;  // 16 MiB
constexpr int64_t kSizeFactor = 4;               // 1K, 4K, 16K, ... 16M
constexpr int64_t kColumns = 64;                 // the repartitioned tensor is (count / 64, 64)
constexpr double kBytesPerGB = 1e9;
constexpr double kMicrosPerSecond = 1e6;

// Seconds per call, the slowest rank's mean after one warm-up call.
double time_op(int iterations, const std::function<void()>& op) {
  op();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) op();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

void print_row(bool rank0, const char* name, int64_t bytes, int64_t count, double seconds, double bus_factor) {
  if (!rank0) return;
  const double algbw = static_cast<double>(bytes) / seconds / kBytesPerGB;
  std::printf("%-16s %12lld %12lld  float %10.1f %8.3f %8.3f\n", name, static_cast<long long>(bytes),
              static_cast<long long>(count), seconds * kMicrosPerSecond, algbw, algbw * bus_factor);
}

}  // namespace

int run_bench_comm(int iterations) {
  HT_USAGE_CHECK(iterations >= 1, "bench comm: --iterations must be >= 1, got {}", iterations);
  MpiSession mpi(nullptr, nullptr);
  std::unique_ptr<Communicator> comm = make_mpi_communicator();
  const int64_t n = comm->world_size();
  const DeviceGroup all = comm->world();
  const bool rank0 = comm->rank() == 0;
  const double nd = static_cast<double>(n);
  const double ring = (nd - 1) / nd;
  if (rank0) {
    std::printf("# hetu bench comm: %s, %lld rank(s), %d iteration(s) per size, f32\n", comm->backend().c_str(),
                static_cast<long long>(n), iterations);
    std::printf("%-16s %12s %12s  %5s %10s %8s %8s\n", "# op", "size(B)", "count", "type", "time(us)", "algbw",
                "busbw");
    std::printf("%-16s %12s %12s  %5s %10s %8s %8s\n", "#", "", "(elements)", "", "", "(GB/s)", "(GB/s)");
  }
  for (int64_t bytes = kMinBytes; bytes <= kMaxBytes; bytes *= kSizeFactor) {
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float)) / n * n;  // divisible by n
    const int64_t actual = count * static_cast<int64_t>(sizeof(float));
    Tensor buffer = ones({count});
    Tensor piece = ones({count / n});
    print_row(rank0, "all_reduce", actual, count, time_op(iterations, [&] { comm->all_reduce(buffer, all); }),
              2 * ring);
    print_row(rank0, "all_gather", actual, count, time_op(iterations, [&] { comm->all_gather(piece, buffer, all); }),
              ring);
    print_row(rank0, "reduce_scatter", actual, count,
              time_op(iterations, [&] { comm->reduce_scatter(buffer, piece, all); }), ring);
    const Shape shape{count / kColumns, kColumns};
    if (shape[0] < n || n > kColumns) continue;  // too small to split n ways on both dims
    const Union src = Union::single(all, DistState::split(0, n));
    const Union dst = Union::single(all, DistState::split(1, n));
    const CommPlan plan = plan_repartition(src, dst, shape);
    const Tensor local = ones(shard_of(src, shape, comm->rank()).box.size);
    print_row(rank0, "repartition", shape_numel(shape) * static_cast<int64_t>(sizeof(float)), shape_numel(shape),
              time_op(iterations, [&] { execute(plan, src, local, *comm); }), ring);
  }
  return 0;
}

}  // namespace hetu::app
