// The MPI Communicator on the launched ranks: every collective on the world and on
// sub-groups (reversed order, uneven counts, empty pieces), point-to-point and batched
// exchanges in a ring, and the error for an unsupported dtype. Values are small integers,
// so sums are exact in f32, f64, bf16 and f16 (integers up to 256 are exact in bf16, up to
// 2048 in f16).
#include <catch2/catch.hpp>

#include <numeric>

#include "tests/hspmd/mpi/mpi_test_utils.h"

namespace hetu::test {
namespace {

// Rank r, element i -> 10r + i.
Tensor ramp(int64_t rank, int64_t count, DType dtype) {
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = static_cast<double>(10 * rank + i);
  return tensor_from(v, {count}).to(dtype);
}

bool equals(const Tensor& t, const std::vector<double>& expected) { return to_vector(t) == expected; }

}  // namespace

TEST_CASE("mpi communicator: all_reduce, broadcast and barrier on the world and a reversed group", "[mpi]") {
  Communicator& comm = world();
  const int64_t n = comm.world_size(), r = comm.rank();
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
    Tensor x = ramp(r, 3, dtype);
    comm.all_reduce(x, comm.world());
    std::vector<double> sum(3);
    for (int64_t i = 0; i < 3; ++i) sum[static_cast<size_t>(i)] = static_cast<double>(10 * n * (n - 1) / 2 + n * i);
    CHECK(agree(equals(x, sum)));

    std::vector<DeviceId> reversed(static_cast<size_t>(n));
    std::iota(reversed.rbegin(), reversed.rend(), 0);
    Tensor b = ramp(r, 2, dtype);
    comm.broadcast(b, static_cast<DeviceId>(n - 1), DeviceGroup(reversed));
    CHECK(agree(equals(b, {static_cast<double>(10 * (n - 1)), static_cast<double>(10 * (n - 1) + 1)})));
    comm.barrier(DeviceGroup(reversed));
  }
}

TEST_CASE("mpi communicator: uneven all_gather, reduce_scatter and all_to_all", "[mpi]") {
  Communicator& comm = world();
  const int64_t n = comm.world_size(), r = comm.rank();
  // Member i owns i elements (member 0 an empty piece).
  std::vector<int64_t> counts(static_cast<size_t>(n));
  std::iota(counts.begin(), counts.end(), 0);
  const int64_t total = n * (n - 1) / 2;

  Tensor gathered = empty({total}, DType::f64);
  comm.all_gather(ramp(r, r, DType::f64), gathered, comm.world(), counts);
  std::vector<double> expected;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) expected.push_back(static_cast<double>(10 * i + j));
  CHECK(agree(equals(gathered, expected)));

  Tensor mine = empty({r}, DType::f32);
  comm.reduce_scatter(ramp(r, total, DType::f32), mine, comm.world(), counts);
  Tensor mine_bf16 = empty({r}, DType::bf16);  // the user-defined bf16 sum
  comm.reduce_scatter(ramp(r, total, DType::bf16), mine_bf16, comm.world(), counts);
  CHECK(agree(to_vector(mine_bf16) == to_vector(mine)));
  Tensor mine_f16 = empty({r}, DType::f16);  // the user-defined f16 sum
  comm.reduce_scatter(ramp(r, total, DType::f16), mine_f16, comm.world(), counts);
  CHECK(agree(to_vector(mine_f16) == to_vector(mine)));
  const int64_t start = r * (r - 1) / 2;
  std::vector<double> sums;
  for (int64_t j = 0; j < r; ++j) sums.push_back(static_cast<double>(10 * n * (n - 1) / 2 + n * (start + j)));
  CHECK(agree(equals(mine, sums)));

  // Rank r sends (r + j) % 2 + 1 elements to rank j, all equal to 100r + j.
  std::vector<int64_t> send_counts, recv_counts;
  std::vector<double> send, expect_recv;
  for (int64_t j = 0; j < n; ++j) {
    send_counts.push_back((r + j) % 2 + 1);
    recv_counts.push_back((j + r) % 2 + 1);
    for (int64_t k = 0; k < send_counts.back(); ++k) send.push_back(static_cast<double>(100 * r + j));
    for (int64_t k = 0; k < recv_counts.back(); ++k) expect_recv.push_back(static_cast<double>(100 * j + r));
  }
  Tensor received = empty({static_cast<int64_t>(expect_recv.size())}, DType::f64);
  comm.all_to_all(tensor_from(send, {static_cast<int64_t>(send.size())}), received, comm.world(), send_counts,
                  recv_counts);
  CHECK(agree(equals(received, expect_recv)));
}

TEST_CASE("mpi communicator: sub-groups are created lazily for members only", "[mpi]") {
  Communicator& comm = world();
  const int64_t n = comm.world_size(), r = comm.rank();
  // Pairs {0,1}, {2,3}, ...; a lone last rank forms a group of one.
  const DeviceId first = static_cast<DeviceId>(r - r % 2);
  const DeviceGroup pair = first + 1 < n ? DeviceGroup({first + 1, first}) : DeviceGroup({first});
  Tensor x = ramp(r, 2, DType::f32);
  comm.all_reduce(x, pair);
  double base = 0;
  for (DeviceId d : pair.devices()) base += 10.0 * d;
  const double k = static_cast<double>(pair.size());
  CHECK(agree(equals(x, {base, base + k})));
}

TEST_CASE("mpi communicator: send/recv and a batched ring exchange without deadlock", "[mpi]") {
  Communicator& comm = world();
  const int64_t n = comm.world_size(), r = comm.rank();
  const DeviceId next = static_cast<DeviceId>((r + 1) % n), prev = static_cast<DeviceId>((r + n - 1) % n);
  // Every rank sends first and receives second: fine only because the batch posts both.
  Tensor from_prev = empty({2}, DType::f64), from_next = empty({3}, DType::f64);
  std::vector<P2POp> batch = {P2POp::send(ramp(r, 2, DType::f64), next), P2POp::send(ramp(r, 3, DType::f64), prev),
                              P2POp::recv(from_prev, prev), P2POp::recv(from_next, next)};
  comm.batch_send_recv(batch);
  CHECK(agree(equals(from_prev, to_vector(ramp(prev, 2, DType::f64))) &&
              equals(from_next, to_vector(ramp(next, 3, DType::f64)))));
  // Blocking send/recv between ranks 0 and 1.
  Tensor y = empty({2}, DType::f32);
  if (r == 0) comm.send(ramp(0, 2, DType::f32), 1);
  if (r == 1) comm.recv(y, 0);
  CHECK(agree(r != 1 || equals(y, {0, 1})));
}

TEST_CASE("mpi communicator: unsupported dtypes name the op, device and dtype", "[mpi]") {
  Communicator& comm = world();
  Tensor ids = zeros({2}, DType::i64);
  CHECK_THROWS_WITH(comm.all_reduce(ids, comm.world()),
                    Catch::Contains("op all_reduce not implemented for device cpu / dtype i64"));
  CHECK_THROWS_WITH(comm.all_reduce(zeros({2, 2}).transpose(0, 1), comm.world()), Catch::Contains("contiguous"));
}

}  // namespace hetu::test
