// The enumerated check on the launched ranks: every placement on 1-D and 2-D groups that
// fit the world, the same on other groups (pipeline edges), and heterogeneous unions
// (replica, partial, uneven splits on dim 0 and dim 1). For every ordered pair, each rank
// builds its source shard of a random global tensor and runs
//   - redistribute (plan_comm + execute), and plan_repartition + execute: each rank's result
//     must equal the reference executor's buffer for it bit for bit, the reference must lay
//     out the global tensor as dst says (partials summing to it), and the two plans agree;
//   - the backward: the gradient of a random global tensor laid out as dual(dst) must come
//     back laid out as dual(src) (through autograd where the rank holds both sides, through
//     redistribute_backward elsewhere), and sum <y, g> == sum <x, dx> over ranks (adjoint).
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>

#include "lib/autograd/engine.h"
#include "lib/hspmd/plan_executor.h"
#include "lib/hspmd/plan_simulator.h"
#include "lib/hspmd/planner.h"
#include "lib/hspmd/redistribute.h"
#include "tests/hspmd/hspmd_test_utils.h"
#include "tests/hspmd/mpi/mpi_test_utils.h"

namespace hetu::test {
namespace {

const Shape kShape{7, 6};  // uneven for 2, 3 and 4 ways on dim 0; 4 ways on dim 1
constexpr int64_t kFirstRows = 3;  // union split on dim 0: 3:4
constexpr int64_t kFirstCols = 4;  // union split on dim 1: 4:2

void add_if_valid(std::vector<Union>& out, Union u) {
  if (!annotation_error(u, kShape)) out.push_back(std::move(u));
}

// Annotations over ranks 0..n-1.
std::vector<Union> annotations(int64_t n) {
  std::vector<std::vector<DeviceId>> groups = {{0}, {static_cast<DeviceId>(n - 1)}, {0, 1}, {1, 0}};
  if (n == 3) groups.insert(groups.end(), {{1, 2}, {0, 1, 2}});
  if (n == 4) groups.insert(groups.end(), {{2, 3}, {0, 1, 2}, {1, 2, 3}, {0, 1, 2, 3}});
  std::vector<Union> out;
  for (const auto& g : groups)
    for (const DistState& s : placements(static_cast<int64_t>(g.size()))) add_if_valid(out, on(g, s));
  const std::vector<UnionRelation> relations = {
      UnionRelation::replica(), UnionRelation::partial(),
      UnionRelation::split(0, {kFirstRows, kShape[0] - kFirstRows}),
      UnionRelation::split(1, {kFirstCols, kShape[1] - kFirstCols})};
  for (const UnionRelation& rel : relations) {
    if (n == 2) add_if_valid(out, Union({member({0}, DistState()), member({1}, DistState())}, rel));
    if (n >= 3)
      for (const DistState& s : placements(2)) {
        add_if_valid(out, Union({member({0, 1}, s), member({2}, DistState())}, rel));
        add_if_valid(out, Union({member({0}, DistState()), member({1, 2}, s)}, rel));
      }
    if (n == 4) {
      for (const DistState& s : placements(3)) add_if_valid(out, Union({member({0}, DistState()), member({1, 2, 3}, s)}, rel));
      for (const DistState& a : placements(2))
        for (const DistState& b : placements(2))
          if (!(a == b)) add_if_valid(out, Union({member({0, 1}, a), member({2, 3}, b)}, rel));
    }
  }
  if (n == 4)
    for (const UnionRelation& rel : {UnionRelation::replica(), UnionRelation::partial()})
      add_if_valid(out, Union({member({0, 1}, DistState::duplicate(2)), member({2}, DistState()), member({3}, DistState())},
                              rel));
  return out;
}

// This rank's buffer of `buffers` as a tensor, or undefined.
Tensor local_tensor(const DeviceBuffers& buffers, DeviceId rank, DType dtype) {
  auto it = buffers.find(rank);
  if (it == buffers.end()) return Tensor();
  return tensor_from(it->second.values, it->second.shard.box.size).to(dtype);
}

// "" when `got` (this rank's result) is exactly the reference buffer of this rank.
std::string compare(const char* what, const Tensor& got, const DeviceBuffers& reference, DeviceId rank) {
  auto it = reference.find(rank);
  if (it == reference.end()) return got.defined() ? fmt::format("{}: rank {} holds a result, expected none", what, rank) : "";
  if (!got.defined()) return fmt::format("{}: rank {} holds nothing, expected {}", what, rank, it->second.shard.to_string());
  if (got.shape() != it->second.shard.box.size || to_vector(got) != it->second.values)
    return fmt::format("{}: rank {} differs from the reference executor on {}", what, rank, it->second.shard.to_string());
  return "";
}

double dot(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return 0;
  const std::vector<double> x = to_vector(a), y = to_vector(b);
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += x[i] * y[i];
  return sum;
}

struct PairResult {
  std::string transition;  // the planner's choice
  std::string problem;  // this rank's first problem, "" when none
  double forward_dot = 0;   // <y, g> on this rank
  double backward_dot = 0;  // <x, dx> on this rank
};

PairResult run_pair(const Union& src, const Union& dst, uint64_t seed, DType dtype, Communicator& comm) {
  PairResult out;
  const DeviceId rank = comm.rank();
  auto note = [&](std::string problem) {
    if (out.problem.empty()) out.problem = std::move(problem);
  };
  // Every rank computes the same plans and reference buffers (pure functions).
  const std::vector<double> global = random_integers(shape_numel(kShape), seed);
  const std::vector<double> grad_global = random_integers(shape_numel(kShape), seed + 1);
  const Union grad_src = dual_annotation(dst), grad_dst = dual_annotation(src);
  const CommPlan plan = plan_comm(src, dst, kShape);
  out.transition = plan.transition;
  const CommPlan generic = plan_repartition(src, dst, kShape);
  const CommPlan dual = plan_comm(grad_src, grad_dst, kShape);
  const DeviceBuffers x_all = make_buffers(src, kShape, global, seed + 2);
  const DeviceBuffers g_all = make_buffers(grad_src, kShape, grad_global, seed + 3);
  const DeviceBuffers y_ref = execute(plan, x_all);
  const DeviceBuffers dx_ref = execute(dual, g_all);
  note(check_buffers(dst, kShape, global, y_ref));
  note(check_buffers(grad_dst, kShape, grad_global, dx_ref));

  // Forward: the planner's plan through redistribute, and the generic repartition.
  Tensor x = local_tensor(x_all, rank, dtype);
  const bool both_sides = x.defined() && dst.member_of(rank).has_value();
  if (both_sides) x.set_requires_grad(true);
  const Tensor y = redistribute(x, src, dst, kShape, comm, dtype);
  const Tensor y_generic = execute(generic, src, x.defined() ? x.detach() : x, comm, dtype);
  note(compare("forward", y, y_ref, rank));
  note(compare("repartition", y_generic, y_ref, rank));

  // Backward: the dual transition.
  const Tensor g = local_tensor(g_all, rank, dtype);
  Tensor dx;
  if (both_sides) {
    autograd::backward(y, g);
    dx = x.grad();
  } else {
    dx = redistribute_backward(g, src, dst, kShape, comm, dtype);
  }
  note(compare("backward", dx, dx_ref, rank));
  out.forward_dot = dot(y, g);
  out.backward_dot = dot(x, dx);
  return out;
}

}  // namespace

TEST_CASE("mpi redistribute: every annotation pair on the launched ranks, forward and backward", "[mpi]") {
  Communicator& comm = world();
  const std::vector<Union> all = annotations(comm.world_size());
  std::vector<std::string> failures;
  std::map<std::string, int64_t> chosen;
  int64_t pairs = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < all.size(); ++j) {
      const DType dtype = (i + j) % 2 == 0 ? DType::f64 : DType::f32;
      PairResult r;
      try {
        r = run_pair(all[i], all[j], 1000 * i + j, dtype, comm);
      } catch (const Error& e) {
        r.problem = "threw " + e.message() + " at " + e.where();
      }
      // One collective per pair: the verdict and the adjoint identity, summed over ranks.
      double local[3] = {r.problem.empty() ? 0.0 : 1.0, r.forward_dot, r.backward_dot};
      double sum[3] = {};
      MPI_Allreduce(local, sum, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      ++pairs;
      ++chosen[r.transition];
      if (sum[0] == 0 && sum[1] == sum[2]) continue;
      failures.push_back(fmt::format("{}  ->  {} ({}): {}{}", all[i].to_string(), all[j].to_string(),
                                     to_string(dtype), r.problem.empty() ? "fails on another rank" : r.problem,
                                     sum[1] == sum[2] ? "" : fmt::format("; <y,g> {} != <x,dx> {}", sum[1], sum[2])));
    }
  }
  std::string summary;
  for (const auto& [transition, count] : chosen) summary += " " + transition + "=" + std::to_string(count);
  if (comm.rank() == 0)
    std::printf("mpi redistribute: %lld ranks, %zu annotations, %lld annotation pairs checked (forward, "
                "repartition, backward);%s\n",
                static_cast<long long>(comm.world_size()), all.size(), static_cast<long long>(pairs), summary.c_str());
  INFO(failures.size() << " failures; first: " << (failures.empty() ? "" : failures[0]));
  CHECK(failures.empty());
}

TEST_CASE("mpi redistribute with a plan cache: the same values, each plan and its dual planned once", "[mpi]") {
  Communicator& comm = world();
  const DeviceId r = comm.rank();
  if (comm.world_size() < 2) return;
  const DeviceGroup pair({0, 1});
  const Union rows = Union::single(pair, DistState::split(0, 2));
  const Union whole = Union::single(pair, DistState::duplicate(2));
  PlanCache plans;
  bool ok = true;
  for (int round = 0; round < 2 && r < 2; ++round) {
    // Rank r holds row r, all r + 1: gathered, rows 1 and 2. The gradient on rank r is 10 (r + 1)
    // everywhere (a partial of the duplicate's): each row's gradient sums to 30.
    Tensor x = full({1, 3}, r + 1.0);
    x.set_requires_grad(true);
    const Tensor y = redistribute(x, rows, whole, {2, 3}, comm, std::nullopt, &plans);
    autograd::backward(y, full({2, 3}, 10.0 * (r + 1)));
    ok = ok && to_vector(y) == std::vector<double>{1, 1, 1, 2, 2, 2} &&
         to_vector(x.grad()) == std::vector<double>(3, 30.0) && plans.size() == 2;  // all_gather, reduce_scatter
  }
  CHECK(agree(ok));
}

}  // namespace hetu::test
