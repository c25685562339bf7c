// The NCCL communicator under mpirun (ctest cuda_nccl_np1, cuda_nccl_np2; label cuda): every
// operation on f32 and bf16 device tensors against values computed on the host. Rank r
// holds x[i] = r + 1 + i/8 (exact in bf16 for the sizes used). Prints "HETU_SKIP: ..." and
// passes when the ranks do not each have a GPU (NCCL needs one GPU per rank). Plain main
// (no Catch2): the verdict is agreed by all ranks with MPI_Allreduce.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "lib/core/cuda_runtime.h"
#include "lib/hspmd/cuda/comm_nccl.h"

using namespace hetu;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what, int rank) {
  if (!ok) {
    ++failures;
    std::printf("rank %d FAILED: %s\n", rank, what.c_str());
  }
}

std::vector<double> values(int rank, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = rank + 1 + static_cast<double>(i % 8) / 8;
  return v;
}

void run(Communicator& comm, DType dt) {
  const int r = comm.rank(), n = static_cast<int>(comm.world_size());
  const Device dev = Device::cuda(cuda::current_device());
  const std::string tag = " (" + std::string(to_string(dt)) + ")";
  auto make = [&](const std::vector<double>& v) {
    return tensor_from(v, {static_cast<int64_t>(v.size())}).to(dt).to(dev);
  };
  const DeviceGroup world = comm.world();
  // all_reduce
  Tensor x = make(values(r, 16));
  comm.all_reduce(x, world);
  std::vector<double> sum(16, 0.0);
  for (int k = 0; k < n; ++k) {
    const std::vector<double> v = values(k, 16);
    for (size_t i = 0; i < 16; ++i) sum[i] += v[i];
  }
  expect(to_vector(x) == sum, "all_reduce" + tag, r);
  // all_gather, equal and uneven (member k sends k + 1 elements)
  Tensor gathered = empty({8 * n}, dt, dev);
  comm.all_gather(make(values(r, 8)), gathered, world);
  std::vector<double> expected;
  for (int k = 0; k < n; ++k) {
    const std::vector<double> v = values(k, 8);
    expected.insert(expected.end(), v.begin(), v.end());
  }
  expect(to_vector(gathered) == expected, "all_gather" + tag, r);
  std::vector<int64_t> counts;
  expected.clear();
  for (int k = 0; k < n; ++k) {
    counts.push_back(k + 1);
    const std::vector<double> v = values(k, k + 1);
    expected.insert(expected.end(), v.begin(), v.end());
  }
  Tensor uneven = empty({static_cast<int64_t>(expected.size())}, dt, dev);
  comm.all_gather(make(values(r, r + 1)), uneven, world, counts);
  expect(to_vector(uneven) == expected, "all_gather uneven" + tag, r);
  // reduce_scatter, equal and uneven
  Tensor piece = empty({4}, dt, dev);
  comm.reduce_scatter(make(values(r, 4 * n)), piece, world);
  std::vector<double> want(4, 0.0);
  for (int k = 0; k < n; ++k) {
    const std::vector<double> v = values(k, 4 * n);
    for (size_t i = 0; i < 4; ++i) want[i] += v[static_cast<size_t>(4 * r) + i];
  }
  expect(to_vector(piece) == want, "reduce_scatter" + tag, r);
  int64_t total = 0, offset = 0;
  for (int k = 0; k < n; ++k) total += k + 1;
  for (int k = 0; k < r; ++k) offset += k + 1;
  Tensor mine = empty({r + 1}, dt, dev);
  comm.reduce_scatter(make(values(r, total)), mine, world, counts);
  want.assign(static_cast<size_t>(r + 1), 0.0);
  for (int k = 0; k < n; ++k) {
    const std::vector<double> v = values(k, total);
    for (int64_t i = 0; i <= r; ++i) want[static_cast<size_t>(i)] += v[static_cast<size_t>(offset + i)];
  }
  expect(to_vector(mine) == want, "reduce_scatter uneven" + tag, r);
  // all_to_all: piece j of rank r is values(r, 2n) piece j
  Tensor a2a = empty({2 * n}, dt, dev);
  comm.all_to_all(make(values(r, 2 * n)), a2a, world);
  expected.clear();
  for (int k = 0; k < n; ++k) {
    const std::vector<double> v = values(k, 2 * n);
    expected.push_back(v[static_cast<size_t>(2 * r)]);
    expected.push_back(v[static_cast<size_t>(2 * r + 1)]);
  }
  expect(to_vector(a2a) == expected, "all_to_all" + tag, r);
  // broadcast from the last rank
  Tensor b = make(values(r, 5));
  comm.broadcast(b, n - 1, world);
  expect(to_vector(b) == values(n - 1, 5), "broadcast" + tag, r);
  // batch_send_recv around a ring, and a sub-group of the reversed world
  if (n > 1) {
    Tensor got = empty({6}, dt, dev);
    const std::vector<P2POp> ops = {P2POp::send(make(values(r, 6)), (r + 1) % n), P2POp::recv(got, (r + n - 1) % n)};
    comm.batch_send_recv(ops);
    expect(to_vector(got) == values((r + n - 1) % n, 6), "batch_send_recv ring" + tag, r);
  }
  std::vector<DeviceId> reversed;
  for (int k = n - 1; k >= 0; --k) reversed.push_back(k);
  Tensor y = make(values(r, 3));
  comm.all_reduce(y, DeviceGroup(reversed));
  expect(to_vector(y) == std::vector<double>(sum.begin(), sum.begin() + 3), "all_reduce on a sub-group" + tag, r);
  comm.barrier(world);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int usable = cuda::device_count() >= 1 ? 1 : 0;
  int all_usable = 0;
  MPI_Allreduce(&usable, &all_usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int local_ranks = 0;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);
  if (!all_usable || local_ranks > cuda::device_count()) {
    if (rank == 0) {
      std::printf("HETU_SKIP: NCCL test needs one GPU per rank: %d ranks on this node, %d GPU(s) visible%s%s\n",
                  local_ranks, cuda::device_count(), cuda::is_available() ? "" : ": ",
                  cuda::unavailable_reason().c_str());
    }
    MPI_Finalize();
    return 0;
  }
  try {
    std::unique_ptr<Communicator> comm = make_nccl_communicator();
    for (DType dt : {DType::f32, DType::bf16}) run(*comm, dt);
  } catch (const std::exception& e) {
    ++failures;
    std::printf("rank %d FAILED with exception: %s\n", rank, e.what());
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: NCCL communicator, %d ranks, %d failure(s)\n", total == 0 ? "PASS" : "FAIL", size, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
