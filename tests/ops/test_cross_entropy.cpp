// cross_entropy_sum and cross_entropy_backward against naive double loops written here:
// every logits layout, odd vocabularies, 2-d and 3-d logits, f32 and f64 logits, i32 and i64
// targets, ignore_index rows (default and a custom one); the backward also against central
// finite differences of the loss in f64; extreme logits; bad targets and other errors.
#include <cmath>
#include <functional>

#include "lib/core/rng.h"
#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

// Random targets in [0, V), about a quarter of them replaced by ignore_index.
Tensor random_targets(const Shape& shape, int64_t V, DType dtype, uint64_t seed, int64_t ignore_index) {
  CounterRng rng(seed, "targets");
  std::vector<int64_t> t(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < t.size(); ++i) {
    const int64_t index = static_cast<int64_t>(i);
    t[i] = rng.uniform(2 * index) < 0.25 ? ignore_index : static_cast<int64_t>(rng.uniform(2 * index + 1) * V);
  }
  return tensor_from(t, shape).to(dtype);
}

// loss = Σ_kept (log Σ_v exp(x_v) - x_target), straight from the definition.
double naive_loss(const std::vector<double>& x, const std::vector<double>& t, int64_t V, int64_t ignore_index,
                  int64_t* count) {
  double loss = 0;
  *count = 0;
  for (size_t n = 0; n < t.size(); ++n) {
    if (static_cast<int64_t>(t[n]) == ignore_index) continue;
    double denom = 0;
    for (int64_t v = 0; v < V; ++v) denom += std::exp(x[n * static_cast<size_t>(V) + static_cast<size_t>(v)]);
    loss += std::log(denom) - x[n * static_cast<size_t>(V) + static_cast<size_t>(t[n])];
    ++*count;
  }
  return loss;
}

// dlogits = scale · (exp(x_v) / Σ exp - [v == target]), zero for ignored rows.
std::vector<double> naive_backward(const std::vector<double>& x, const std::vector<double>& t, int64_t V,
                                   int64_t ignore_index, double scale) {
  std::vector<double> d(x.size(), 0.0);
  for (size_t n = 0; n < t.size(); ++n) {
    if (static_cast<int64_t>(t[n]) == ignore_index) continue;
    const size_t row = n * static_cast<size_t>(V);
    double denom = 0;
    for (int64_t v = 0; v < V; ++v) denom += std::exp(x[row + static_cast<size_t>(v)]);
    for (int64_t v = 0; v < V; ++v) {
      const double onehot = static_cast<int64_t>(t[n]) == v ? 1.0 : 0.0;
      d[row + static_cast<size_t>(v)] = scale * (std::exp(x[row + static_cast<size_t>(v)]) / denom - onehot);
    }
  }
  return d;
}

}  // namespace

TEST_CASE("cross_entropy_sum and its backward match the definition", "[cross_entropy]") {
  uint64_t seed = 13000;
  const std::vector<Shape> row_shapes = {{1}, {5}, {33}, {2, 3}};
  for (DType dtype : {DType::f32, DType::f64}) {
    for (DType index_dtype : {DType::i32, DType::i64}) {
      for (int64_t ignore_index : {int64_t{-100}, int64_t{0}}) {
        for (int64_t V : {1, 7, 33, 129}) {
          for (const Shape& rows : row_shapes) {
            for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
              Shape shape = rows;
              shape.push_back(V);
              INFO(shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype) << " "
                                    << to_string(index_dtype) << " ignore " << ignore_index);
              const Tensor logits = with_layout(random_tensor(shape, dtype, seed++, -4.0, 4.0), layout);
              const Tensor targets =
                  with_layout(random_targets(rows, V, index_dtype, seed++, ignore_index), Layout::strided);
              const std::vector<double> x = to_vector(logits), t = to_vector(targets);
              int64_t count = -1, ref_count = 0;
              const double ref = naive_loss(x, t, V, ignore_index, &ref_count);
              const Tensor loss = ops::cross_entropy_sum(logits, targets, ignore_index, &count);
              REQUIRE(loss.shape() == Shape{});
              CHECK(loss.dtype() == dtype);
              CHECK(count == ref_count);
              CHECK(std::fabs(loss.item() - ref) <= tolerance(dtype, 8 * static_cast<double>(t.size())));
              const double scale = 0.37;
              const Tensor d = ops::cross_entropy_backward(logits, targets, scale, ignore_index);
              REQUIRE(d.shape() == shape);
              CHECK(max_abs_diff(d, naive_backward(x, t, V, ignore_index, scale)) <= tolerance(dtype));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("cross_entropy_backward matches finite differences in f64", "[cross_entropy]") {
  uint64_t seed = 14000;
  for (int64_t V : {2, 7, 33}) {
    INFO("V " << V);
    const Tensor logits = random_tensor({6, V}, DType::f64, seed++, -3.0, 3.0);
    const Tensor targets = random_targets({6}, V, DType::i64, seed++, -100);
    const double scale = 1.7;
    const auto loss = [&] { return scale * ops::cross_entropy_sum(logits, targets).item(); };
    std::vector<double> numeric(static_cast<size_t>(logits.numel()));
    double* p = logits.data<double>();
    const double h = 1e-6;
    for (size_t i = 0; i < numeric.size(); ++i) {
      const double saved = p[i];
      p[i] = saved + h;
      const double up = loss();
      p[i] = saved - h;
      const double down = loss();
      p[i] = saved;
      numeric[i] = (up - down) / (2 * h);
    }
    CHECK(max_abs_diff(ops::cross_entropy_backward(logits, targets, scale), numeric) <= 1e-7);
  }
}

TEST_CASE("cross_entropy stays finite on extreme logits", "[cross_entropy]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(to_string(dtype));
    const Tensor logits = tensor_from(std::vector<double>{1000, 0, -1000, 1e30, 1e30, -1e30}, {2, 3}).to(dtype);
    const Tensor targets = tensor_from(std::vector<int64_t>{2, 1}, {2});
    int64_t count = 0;
    const double loss = ops::cross_entropy_sum(logits, targets, -100, &count).item();
    CHECK(count == 2);
    CHECK(std::fabs(loss - (2000 + std::log(2.0))) <= tolerance(dtype, 2000));
    CHECK(max_abs_diff(ops::cross_entropy_backward(logits, targets, 1.0), {1, 0, -1, 0.5, -0.5, 0}) <=
          tolerance(dtype));
  }
}

TEST_CASE("cross_entropy with every row ignored or no rows", "[cross_entropy]") {
  const Tensor logits = random_tensor({3, 5}, DType::f32, 1);
  const Tensor targets = tensor_from(std::vector<int32_t>{-1, -1, -1}, {3});
  int64_t count = -1;
  CHECK(ops::cross_entropy_sum(logits, targets, -1, &count).item() == 0);
  CHECK(count == 0);
  CHECK(max_abs_diff(ops::cross_entropy_backward(logits, targets, 1.0, -1), std::vector<double>(15, 0.0)) == 0);
  CHECK(ops::cross_entropy_sum(zeros({0, 5}), zeros({0}, DType::i64), -100, &count).item() == 0);
  CHECK(count == 0);
  CHECK(ops::cross_entropy_sum(logits, targets, -1).item() == 0);  // count is optional
}

TEST_CASE("cross_entropy argument errors", "[cross_entropy]") {
  const Tensor logits = random_tensor({4, 5}, DType::f32, 1);
  const Tensor bad = tensor_from(std::vector<int64_t>{0, 4, 9, 1}, {4});
  CHECK_THROWS_WITH(ops::cross_entropy_sum(logits, bad),
                    Catch::Equals("cross_entropy_sum: target 9 at row 2 is outside [0, 5) and is not ignore_index "
                                  "(-100)"));
  CHECK_THROWS_WITH(ops::cross_entropy_backward(logits, tensor_from(std::vector<int32_t>{0, -1, 0, 0}, {4}), 1.0),
                    Catch::StartsWith("cross_entropy_backward: target -1 at row 1 is outside [0, 5)"));
  CHECK_THROWS_WITH(ops::cross_entropy_sum(logits, zeros({4})),
                    Catch::Equals("op cross_entropy_sum not implemented for device cpu / dtype f32"));
  CHECK_THROWS_WITH(ops::cross_entropy_sum(zeros({4, 5}, DType::i32), zeros({4}, DType::i64)),
                    Catch::Equals("op cross_entropy_sum not implemented for device cpu / dtype i32"));
  CHECK_THROWS_WITH(ops::cross_entropy_sum(logits, zeros({5}, DType::i64)),
                    Catch::StartsWith("cross_entropy_sum: targets shape (5,) does not match logits (4, 5)"));
  CHECK_THROWS_WITH(ops::cross_entropy_backward(logits, zeros({4, 1}, DType::i64), 1.0),
                    Catch::StartsWith("cross_entropy_backward: targets shape (4, 1) does not match"));
  CHECK_THROWS_WITH(ops::cross_entropy_sum(zeros({}), zeros({}, DType::i64)),
                    Catch::StartsWith("cross_entropy_sum: expected logits with at least 1 dim"));
}

// ---- one shard of a column-split vocabulary: cross_entropy_shard_stats / _backward ----
namespace {

// The full (N, V) logits cut into shards of C columns: shard r holds classes [rC, rC + C),
// those at or past V are padding, filled with 50 so that counting them would show.
Tensor shard_of(const Tensor& full, int64_t r, int64_t C) {
  const int64_t N = full.size(0), V = full.size(1);
  const std::vector<double> x = to_vector(full);
  std::vector<double> s(static_cast<size_t>(N * C), 50.0);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C && r * C + c < V; ++c) {
      s[static_cast<size_t>(n * C + c)] = x[static_cast<size_t>(n * V + r * C + c)];
    }
  }
  return tensor_from(s, {N, C}).to(full.dtype());
}

// Per row of the full logits: max and Σ exp(x - max) over every class (the global statistics).
struct RowStats {
  std::vector<double> max, sum_exp;
};
RowStats full_row_stats(const std::vector<double>& x, int64_t N, int64_t V) {
  RowStats s{std::vector<double>(static_cast<size_t>(N), -INFINITY), std::vector<double>(static_cast<size_t>(N), 0)};
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t v = 0; v < V; ++v) s.max[n] = std::max(s.max[n], x[static_cast<size_t>(n * V + v)]);
    for (int64_t v = 0; v < V; ++v) s.sum_exp[n] += std::exp(x[static_cast<size_t>(n * V + v)] - s.max[n]);
  }
  return s;
}

// Σ_n w_n · (log Σ_v exp(x_v) - x_target), kept rows only: the loss whose gradient the
// shard backward gives with grad = w.
double weighted_loss(const std::vector<double>& x, const std::vector<double>& t, const std::vector<double>& w,
                     int64_t V, int64_t ignore_index) {
  double loss = 0;
  for (size_t n = 0; n < t.size(); ++n) {
    if (static_cast<int64_t>(t[n]) == ignore_index) continue;
    double denom = 0;
    for (int64_t v = 0; v < V; ++v) denom += std::exp(x[n * static_cast<size_t>(V) + static_cast<size_t>(v)]);
    loss += w[n] * (std::log(denom) - x[n * static_cast<size_t>(V) + static_cast<size_t>(t[n])]);
  }
  return loss;
}

}  // namespace

TEST_CASE("cross_entropy_shard_stats: each shard's pieces, and their combination is the loss", "[cross_entropy]") {
  uint64_t seed = 15000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (DType index_dtype : {DType::i32, DType::i64}) {
      for (int64_t ignore_index : {int64_t{-100}, int64_t{0}}) {
        // (V, C): one shard, even shards, a last shard with padding, a shard of padding only.
        for (auto [V, C] : {std::pair<int64_t, int64_t>{7, 7}, {12, 4}, {33, 8}, {5, 3}, {4, 3}}) {
          const int64_t N = 9, shards = (V + C - 1) / C;
          INFO("V " << V << " C " << C << " " << to_string(dtype) << " " << to_string(index_dtype) << " ignore "
                    << ignore_index);
          const Tensor full = random_tensor({N, V}, DType::f64, seed++, -4.0, 4.0).to(dtype);
          const Tensor targets = random_targets({N}, V, index_dtype, seed++, ignore_index);
          const std::vector<double> x = to_vector(full), t = to_vector(targets);
          const RowStats global = full_row_stats(x, N, V);
          std::vector<double> M(static_cast<size_t>(N), -INFINITY), S(static_cast<size_t>(N), 0), T(static_cast<size_t>(N), 0);
          std::vector<ops::CrossEntropyShardStats> pieces;
          for (int64_t r = 0; r < shards + 1; ++r) {  // one more shard: only padding (max -inf, sum 0)
            INFO("shard " << r);
            const Tensor z = with_layout(shard_of(full, r, C), r % 2 == 0 ? Layout::contiguous : Layout::strided);
            int64_t count = -1;
            const ops::CrossEntropyShardStats s = ops::cross_entropy_shard_stats(z, targets, r * C, V, ignore_index, &count);
            for (const Tensor* out : {&s.max, &s.sum_exp, &s.target_logit, &s.kept}) {
              REQUIRE(out->shape() == Shape{N});
              CHECK(out->dtype() == dtype);
            }
            const std::vector<double> m = to_vector(s.max), se = to_vector(s.sum_exp), tl = to_vector(s.target_logit),
                                      kept = to_vector(s.kept);
            int64_t ref_count = 0;
            for (int64_t n = 0; n < N; ++n) {
              const size_t i = static_cast<size_t>(n);
              const int64_t target = static_cast<int64_t>(t[i]);
              const bool ignored = target == ignore_index;
              ref_count += ignored ? 0 : 1;
              double ref_max = -INFINITY, ref_sum = 0, ref_target = 0;
              for (int64_t v = r * C; v < std::min(V, r * C + C); ++v) ref_max = std::max(ref_max, x[static_cast<size_t>(n * V + v)]);
              for (int64_t v = r * C; v < std::min(V, r * C + C); ++v) ref_sum += std::exp(x[static_cast<size_t>(n * V + v)] - ref_max);
              if (!ignored && target >= r * C && target < r * C + C) ref_target = x[static_cast<size_t>(n * V + target)];
              CHECK(m[i] == ref_max);
              CHECK(std::fabs(se[i] - ref_sum) <= tolerance(dtype, static_cast<double>(C)));
              CHECK(tl[i] == ref_target);
              CHECK(kept[i] == (ignored ? 0.0 : 1.0));
              if (ref_max > -INFINITY) {  // the combination the nn layer does, in double
                const double new_max = std::max(M[i], ref_max);
                S[i] = S[i] * std::exp(M[i] - new_max) + se[i] * std::exp(ref_max - new_max);
                M[i] = new_max;
              }
              T[i] += tl[i];
            }
            CHECK(count == ref_count);
          }
          int64_t ref_count = 0;
          const double ref = naive_loss(x, t, V, ignore_index, &ref_count);
          double loss = 0;
          for (int64_t n = 0; n < N; ++n) {
            const size_t i = static_cast<size_t>(n);
            CHECK(M[i] == global.max[i]);
            if (static_cast<int64_t>(t[i]) != ignore_index) loss += std::log(S[i]) - (T[i] - M[i]);
          }
          CHECK(std::fabs(loss - ref) <= tolerance(dtype, 8 * static_cast<double>(N)));
        }
      }
    }
  }
}

TEST_CASE("cross_entropy_shard_backward matches the definition", "[cross_entropy]") {
  uint64_t seed = 16000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (DType index_dtype : {DType::i32, DType::i64}) {
      for (int64_t ignore_index : {int64_t{-100}, int64_t{0}}) {
        for (auto [V, C] : {std::pair<int64_t, int64_t>{7, 7}, {12, 4}, {33, 8}, {5, 3}, {4, 3}}) {
          const int64_t N = 9, shards = (V + C - 1) / C;
          INFO("V " << V << " C " << C << " " << to_string(dtype) << " " << to_string(index_dtype) << " ignore "
                    << ignore_index);
          const Tensor full = random_tensor({N, V}, DType::f64, seed++, -4.0, 4.0).to(dtype);
          const Tensor targets = random_targets({N}, V, index_dtype, seed++, ignore_index);
          const Tensor grad = random_tensor({N}, dtype, seed++, 0.1, 2.0);
          const std::vector<double> x = to_vector(full), t = to_vector(targets), g = to_vector(grad);
          const RowStats global = full_row_stats(x, N, V);
          const Tensor max = tensor_from(global.max, {N}).to(dtype), sum_exp = tensor_from(global.sum_exp, {N}).to(dtype);
          for (int64_t r = 0; r < shards + 1; ++r) {
            INFO("shard " << r);
            const Tensor z = with_layout(shard_of(full, r, C), r % 2 == 0 ? Layout::strided : Layout::contiguous);
            const Tensor d = ops::cross_entropy_shard_backward(grad, z, targets, max, sum_exp, r * C, V, ignore_index);
            REQUIRE(d.shape() == Shape{N, C});
            CHECK(d.dtype() == dtype);
            std::vector<double> ref(static_cast<size_t>(N * C), 0.0);
            for (int64_t n = 0; n < N; ++n) {
              const size_t i = static_cast<size_t>(n);
              const int64_t target = static_cast<int64_t>(t[i]);
              if (target == ignore_index) continue;
              for (int64_t c = 0; c < C && r * C + c < V; ++c) {
                const double p = std::exp(x[static_cast<size_t>(n * V + r * C + c)] - global.max[i]) / global.sum_exp[i];
                ref[static_cast<size_t>(n * C + c)] = g[i] * (p - (target == r * C + c ? 1.0 : 0.0));
              }
            }
            CHECK(max_abs_diff(d, ref) <= tolerance(dtype, 2));
          }
        }
      }
    }
  }
}

TEST_CASE("cross_entropy_shard_backward is the gradient of the whole loss (finite differences, f64)", "[cross_entropy]") {
  uint64_t seed = 17000;
  const int64_t N = 5, V = 10, C = 4;  // shards [0, 4), [4, 8), [8, 10) + 2 padding columns
  const Tensor full = random_tensor({N, V}, DType::f64, seed++, -3.0, 3.0);
  const Tensor targets = tensor_from(std::vector<int64_t>{0, 9, -100, 5, 3}, {N});
  const Tensor grad = random_tensor({N}, DType::f64, seed++, 0.5, 1.5);
  const std::vector<double> t = to_vector(targets), g = to_vector(grad);
  const RowStats global = full_row_stats(to_vector(full), N, V);
  const Tensor max = tensor_from(global.max, {N}), sum_exp = tensor_from(global.sum_exp, {N});
  for (int64_t r = 0; r < 3; ++r) {
    INFO("shard " << r);
    const int64_t real = std::min(C, V - r * C);
    const Tensor piece = full.narrow(1, r * C, real).contiguous();  // perturbed; written back into `full`
    const auto loss = [&] {
      Tensor x = full.clone();
      x.narrow(1, r * C, real).copy_from(piece);
      return weighted_loss(to_vector(x), t, g, V, -100);
    };
    const std::vector<double> numeric = numeric_grad(piece, loss);
    const Tensor d = ops::cross_entropy_shard_backward(grad, shard_of(full, r, C), targets, max, sum_exp, r * C, V);
    CHECK(max_abs_diff(d.narrow(1, 0, real), numeric) <= 1e-7);
    if (real < C) CHECK(max_abs_diff(d.narrow(1, real, C - real), std::vector<double>(static_cast<size_t>(N * (C - real)), 0.0)) == 0);
  }
}

TEST_CASE("cross_entropy_shard argument errors", "[cross_entropy]") {
  const Tensor logits = random_tensor({4, 3}, DType::f32, 1);
  const Tensor targets = tensor_from(std::vector<int64_t>{0, 4, 9, 1}, {4});
  CHECK_THROWS_WITH(ops::cross_entropy_shard_stats(logits, targets, 3, 8),
                    Catch::Equals("cross_entropy_shard_stats: target 9 at row 2 is outside [0, 8) and is not "
                                  "ignore_index (-100)"));
  const Tensor ok = tensor_from(std::vector<int64_t>{0, 4, 7, 1}, {4});
  const Tensor row = zeros({4});
  CHECK_THROWS_WITH(ops::cross_entropy_shard_backward(zeros({4}, DType::f64), logits, ok, row, row, 3, 8),
                    Catch::Equals("cross_entropy_shard_backward: grad is f64, expected f32 for f32 logits on cpu"));
  CHECK_THROWS_WITH(ops::cross_entropy_shard_backward(row, logits, ok, zeros({3}), row, 3, 8),
                    Catch::Equals("cross_entropy_shard_backward: max has shape (3,), expected (4,)"));
  CHECK_THROWS_WITH(ops::cross_entropy_shard_stats(zeros({2, 2, 3}), zeros({2, 2}, DType::i64), 0, 8),
                    Catch::StartsWith("cross_entropy_shard_stats: logits (N, C) and targets (N) expected"));
  CHECK_THROWS_WITH(ops::cross_entropy_shard_stats(logits, ok, -1, 8),
                    Catch::StartsWith("cross_entropy_shard_stats: vocab_offset -1 and vocab 8"));
  CHECK_THROWS_WITH(ops::cross_entropy_shard_stats(logits, zeros({4}), 0, 8),
                    Catch::Equals("op cross_entropy_shard_stats not implemented for device cpu / dtype f32"));
}
