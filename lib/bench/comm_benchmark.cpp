// The table of `hetu bench comm` (comm_benchmark.h).
#include "lib/bench/comm_benchmark.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <fmt/core.h>

#include "lib/config/compute_device.h"
#include "lib/core/cuda_runtime.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/mpi_session.h"
#include "lib/hspmd/plan_executor.h"
#include "lib/hspmd/planner.h"

#include "lib/util/error.h"

namespace hetu::bench {
namespace {

constexpr int64_t kMinBytes = int64_t{1} << 10;  // 1 KiB
constexpr int64_t kMaxBytes = int64_t{1} << 24;  // 16 MiB
constexpr int64_t kSizeFactor = 4;               // 1K, 4K, 16K, ... 16M
constexpr int64_t kColumns = 64;                 // the repartitioned tensor is (count / 64, 64)
constexpr double kBytesPerGB = 1e9;
constexpr double kMicrosPerSecond = 1e6;

// Seconds per call, the slowest rank's mean after one warm-up call; `sync` waits for the
// device's queued work (collectives on a GPU return before the data has moved).
double time_op(int iterations, const std::function<void()>& sync, const std::function<void()>& op) {
  op();
  sync();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) op();
  sync();
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

// This rank's index among the ranks of its node, and how many there are.
std::pair<int, int> local_rank_and_size() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int rank = 0, size = 1;
  MPI_Comm_rank(node, &rank);
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return {rank, size};
}

// The GPU this rank drives for --device `requested` (a CUDA device), checked on every rank
// before any work: when a rank cannot use its GPU, every rank throws the same UsageError
// (the first such rank's reason), so none is left waiting in a collective.
Device rank_gpu(Device requested, int world_size) {
  const auto [local_rank, local_size] = local_rank_and_size();
  const Device mine = world_size == 1 ? requested : Device::cuda(local_rank);
  std::string problem = config::cuda_device_problem(mine);
  if (problem.empty() && world_size > 1 && local_size > cuda::device_count()) {
    problem = fmt::format("{} ranks on this node but {} visible GPU(s) (NCCL needs one GPU per rank)", local_size,
                          cuda::device_count());
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int first_bad = problem.empty() ? world_size : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first_bad == world_size) return mine;
  int length = static_cast<int>(problem.size());
  MPI_Bcast(&length, 1, MPI_INT, first_bad, MPI_COMM_WORLD);
  problem.resize(static_cast<size_t>(length));
  MPI_Bcast(problem.data(), length, MPI_CHAR, first_bad, MPI_COMM_WORLD);
  HT_USAGE_ERROR("bench comm: --device {}: no usable CUDA device: {} (rank {}, {})", requested.str(), problem,
                 first_bad, mine.str());
}

}  // namespace

int run_comm_benchmark(const CommBenchOptions& options) {
  HT_USAGE_CHECK(options.iterations >= 1, "bench comm: --iterations must be >= 1, got {}", options.iterations);
  const Device requested = Device::parse(options.device);
  if (requested.is_cuda()) {  // the same answer on every rank: no need to start MPI to say it
    HT_USAGE_CHECK(cuda::kBuilt, "bench comm: --device {}: no usable CUDA device: {}", requested.str(),
                   cuda::unavailable_reason());
  }
  MpiSession mpi(nullptr, nullptr);
  if (requested.is_cuda()) {
    HT_USAGE_CHECK(mpi.world_size() == 1 || requested.index == 0,
                   "bench comm: --device {}: with {} ranks each rank uses the GPU of its local rank; give --device "
                   "cuda (or run one rank to pick GPU {})",
                   requested.str(), mpi.world_size(), requested.index);
  }
  const Device device = requested.is_cuda() ? rank_gpu(requested, mpi.world_size()) : requested;
  std::unique_ptr<Communicator> comm =
      device.is_cuda() ? make_nccl_communicator(device.index) : make_mpi_communicator();
  const std::function<void()> sync = [device] {
    if (device.is_cuda()) cuda::synchronize(device.index);
  };
  const int64_t n = comm->world_size();
  const DeviceGroup all = comm->world();
  const bool rank0 = comm->rank() == 0;
  const double nd = static_cast<double>(n);
  const double ring = (nd - 1) / nd;
  if (rank0) {
    std::printf("# hetu bench comm: %s on %s, %lld rank(s), %d iteration(s) per size, f32\n", comm->backend().c_str(),
                device.is_cuda() ? (n == 1 ? device.str().c_str() : "cuda:<local rank>") : "cpu",
                static_cast<long long>(n), options.iterations);
    std::printf("%-16s %12s %12s  %5s %10s %8s %8s\n", "# op", "size(B)", "count", "type", "time(us)", "algbw",
                "busbw");
    std::printf("%-16s %12s %12s  %5s %10s %8s %8s\n", "#", "", "(elements)", "", "", "(GB/s)", "(GB/s)");
  }
  const int iterations = options.iterations;
  for (int64_t bytes = kMinBytes; bytes <= kMaxBytes; bytes *= kSizeFactor) {
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float)) / n * n;  // divisible by n
    const int64_t actual = count * static_cast<int64_t>(sizeof(float));
    Tensor buffer = ones({count}, DType::f32, device);
    Tensor piece = ones({count / n}, DType::f32, device);
    print_row(rank0, "all_reduce", actual, count, time_op(iterations, sync, [&] { comm->all_reduce(buffer, all); }),
              2 * ring);
    if (!device.is_cuda()) {  // the peer: a blocking MPI_Allreduce, without the deadline's polling
      print_row(rank0, "MPI_Allreduce", actual, count, time_op(iterations, sync, [&] {
        MPI_Allreduce(MPI_IN_PLACE, buffer.raw_data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }), 2 * ring);
    }
    print_row(rank0, "all_gather", actual, count,
              time_op(iterations, sync, [&] { comm->all_gather(piece, buffer, all); }), ring);
    print_row(rank0, "reduce_scatter", actual, count,
              time_op(iterations, sync, [&] { comm->reduce_scatter(buffer, piece, all); }), ring);
    const Shape shape{count / kColumns, kColumns};
    if (shape[0] < n || n > kColumns) continue;  // too small to split n ways on both dims
    const Union src = Union::single(all, DistState::split(0, n));
    const Union dst = Union::single(all, DistState::split(1, n));
    const CommPlan plan = plan_repartition(src, dst, shape);
    const Tensor local = ones(shard_of(src, shape, comm->rank()).box.size, DType::f32, device);
    print_row(rank0, "repartition", shape_numel(shape) * static_cast<int64_t>(sizeof(float)), shape_numel(shape),
              time_op(iterations, sync, [&] { execute(plan, src, local, *comm); }), ring);
  }
  return 0;
}

}  // namespace hetu::bench
