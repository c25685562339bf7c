// Tensor core: views share storage and index the right elements (checked against index
// arithmetic written here), reshape copies only when it must, copies cast and broadcast,
// factories, from_blob ownership, and misuse errors.
#include <catch2/catch.hpp>

#include "lib/core/tensor.h"

using namespace hetu;

namespace {

// The value of element (i, j, k) of arange(0, 24).view({2, 3, 4}).
double at(int64_t i, int64_t j, int64_t k) { return static_cast<double>(i * 12 + j * 4 + k); }

}  // namespace

TEST_CASE("factories fill, arange counts, storage is 64-byte aligned", "[tensor]") {
  const Tensor z = zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.strides() == Shape{3, 1});
  CHECK(to_vector(z) == std::vector<double>(6, 0.0));
  CHECK(to_vector(ones({2}, DType::i32)) == std::vector<double>{1, 1});
  CHECK(to_vector(full({3}, 2.5, DType::f64)) == std::vector<double>{2.5, 2.5, 2.5});
  CHECK(to_vector(arange(0, 5)) == std::vector<double>{0, 1, 2, 3, 4});
  CHECK(to_vector(arange(1, 2, 0.25, DType::f64)) == std::vector<double>{1, 1.25, 1.5, 1.75});
  CHECK(to_vector(full({2}, 1.0, DType::bf16)) == std::vector<double>{1, 1});
  CHECK(reinterpret_cast<uintptr_t>(empty({7}, DType::u8).raw_data()) % kCpuAlignment == 0);
  CHECK(empty({0, 3}).numel() == 0);
  CHECK_THROWS_WITH(empty({-1}), Catch::Contains("negative size"));
}

TEST_CASE("transpose, permute, narrow, slice, select index the right elements", "[tensor]") {
  const Tensor x = arange(0, 24).view({2, 3, 4});
  const Tensor t = x.transpose(0, 2);  // (4, 3, 2)
  CHECK(t.shape() == Shape{4, 3, 2});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.storage() == x.storage());
  const std::vector<double> tv = to_vector(t);
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t i = 0; i < 2; ++i) CHECK(tv[static_cast<size_t>(k * 6 + j * 2 + i)] == at(i, j, k));

  const Tensor p = x.permute({1, 2, 0});  // (3, 4, 2)
  const std::vector<double> pv = to_vector(p);
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t i = 0; i < 2; ++i) CHECK(pv[static_cast<size_t>(j * 8 + k * 2 + i)] == at(i, j, k));

  const Tensor n = x.narrow(2, 1, 2);  // k in {1, 2}
  CHECK(to_vector(n) == std::vector<double>{1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22});
  const Tensor s = x.slice(2, 0, 4, 3);  // k in {0, 3}
  CHECK(to_vector(s) == std::vector<double>{0, 3, 4, 7, 8, 11, 12, 15, 16, 19, 20, 23});
  CHECK(to_vector(x.slice(1, -2, 3)) == to_vector(x.narrow(1, 1, 2)));
  CHECK(to_vector(x.select(1, 2)) == std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23});
  CHECK_THROWS_WITH(x.narrow(2, 3, 2), Catch::Contains("narrow: [3, 5) is outside dim 2 of size 4"));
  CHECK_THROWS_WITH(x.permute({0, 0, 1}), Catch::Contains("repeated"));
  CHECK_THROWS_WITH(x.transpose(0, 3), Catch::Contains("dim 3 out of range"));
}

TEST_CASE("view works on compatible strides, reshape copies otherwise", "[tensor]") {
  const Tensor x = arange(0, 24).view({2, 3, 4});
  const Tensor merged = x.view({6, -1});
  CHECK(merged.shape() == Shape{6, 4});
  CHECK(merged.storage() == x.storage());
  // Merging the first two dims of a narrowed tensor keeps a view (its rows stay evenly spaced).
  const Tensor rows = x.narrow(2, 0, 2).view({6, 2});
  CHECK(rows.storage() == x.storage());
  CHECK(to_vector(rows) == to_vector(x.narrow(2, 0, 2)));
  // A transpose cannot be flattened without copying: view refuses, reshape copies.
  const Tensor t = x.transpose(1, 2);
  CHECK_THROWS_WITH(t.view({24}), Catch::Contains("use reshape"));
  const Tensor flat = t.reshape({24});
  CHECK(flat.storage() != x.storage());
  CHECK(to_vector(flat) == to_vector(t));
  CHECK(x.view({2, 1, 3, 4, 1}).view({24}).storage() == x.storage());
  CHECK_THROWS_WITH(x.view({5, -1}), Catch::Contains("cannot infer -1"));
  CHECK_THROWS_WITH(x.view({-1, -1}), Catch::Contains("only one dimension may be -1"));
}

TEST_CASE("expand broadcasts with stride 0, unsqueeze and squeeze", "[tensor]") {
  const Tensor row = arange(0, 3).view({1, 3});
  const Tensor e = row.expand({4, 3});
  CHECK(e.strides() == Shape{0, 1});
  CHECK(to_vector(e) == std::vector<double>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2});
  CHECK(row.expand({2, -1, 3}).shape() == Shape{2, 1, 3});
  CHECK_THROWS_WITH(row.expand({4, 2}), Catch::Contains("does not broadcast"));
  const Tensor u = arange(0, 3).unsqueeze(0).unsqueeze(-1);
  CHECK(u.shape() == Shape{1, 3, 1});
  CHECK(u.squeeze(0).squeeze(-1).shape() == Shape{3});
  CHECK_THROWS_WITH(u.squeeze(1), Catch::Contains("dim 1 has size 3"));
}

TEST_CASE("copies are contiguous, cast between dtypes and broadcast", "[tensor]") {
  const Tensor x = arange(0, 6).view({2, 3}).transpose(0, 1);
  const Tensor c = x.contiguous();
  CHECK(c.is_contiguous());
  CHECK(to_vector(c) == std::vector<double>{0, 3, 1, 4, 2, 5});
  CHECK(x.contiguous().storage() != x.storage());
  const Tensor already = arange(0, 4);
  CHECK(already.contiguous().same(already));
  CHECK(already.clone().storage() != already.storage());
  // Casts: f32 -> i64 truncates toward zero; f64 -> bf16 rounds to 8 significant bits.
  CHECK(to_vector(tensor_from<float>({1.9f, -1.9f}, {2}).to(DType::i64)) == std::vector<double>{1, -1});
  CHECK(to_vector(tensor_from<double>({1.0 + 1.0 / 256}, {1}).to(DType::bf16)) == std::vector<double>{1.0});
  CHECK(to_vector(tensor_from<double>({1.0 + 3.0 / 256}, {1}).to(DType::bf16)) == std::vector<double>{1.0 + 1.0 / 64});
  CHECK(to_vector(tensor_from<double>({65504.0, 1e-8}, {2}).to(DType::f16)) == std::vector<double>{65504.0, 0.0});
  // copy_from broadcasts the source.
  Tensor dst = zeros({2, 3}, DType::f64);
  dst.narrow(1, 1, 2).copy_from(tensor_from<int32_t>({7, 8}, {2}));
  CHECK(to_vector(dst) == std::vector<double>{0, 7, 8, 0, 7, 8});
  CHECK_THROWS_WITH(zeros({2}).to(Device::cuda(0)), Catch::Contains("no backend"));
  CHECK_THROWS_WITH(tensor_from<float>({NAN}, {1}).to(DType::i32), Catch::Contains("does not fit the integer dtype i32"));
  CHECK_THROWS_WITH(tensor_from<double>({300.0}, {1}).to(DType::u8), Catch::Contains("does not fit the integer dtype u8"));
  CHECK(to_vector(tensor_from<double>({255.9, -0.9}, {2}).to(DType::u8)) == std::vector<double>{255, 0});
}

TEST_CASE("from_blob wraps caller memory and releases it with the last view", "[tensor]") {
  std::vector<float> buffer = {1, 2, 3, 4, 5, 6};
  int released = 0;
  {
    Tensor t = from_blob(buffer.data(), {2, 3}, DType::f32, Device::cpu(), [&](void*) { ++released; });
    Tensor view = t.transpose(0, 1);
    t = Tensor();
    CHECK(released == 0);
    CHECK(to_vector(view) == std::vector<double>{1, 4, 2, 5, 3, 6});
    view.data<float>()[0] = 9;  // writes through to the buffer
  }
  CHECK(released == 1);
  CHECK(buffer[0] == 9);
}

TEST_CASE("misuse is reported", "[tensor]") {
  CHECK_THROWS_WITH(Tensor().shape(), Catch::Contains("undefined tensor"));
  CHECK_THROWS_WITH(zeros({2}).item(), Catch::Contains("has 2 elements, expected 1"));
  CHECK_THROWS_WITH(zeros({2}).data<double>(), Catch::Contains("does not match dtype f32"));
  CHECK_THROWS_WITH(zeros({2}, DType::i64).set_requires_grad(true), Catch::Contains("floating dtype"));
  CHECK(Device::parse("cuda:3") == Device::cuda(3));
  CHECK(Device::parse("cpu").str() == "cpu");
  CHECK_THROWS_WITH(Device::parse("tpu"), Catch::Contains("bad device"));
  CHECK(shape_str({3}) == "(3,)");
  CHECK(broadcast_shapes({4, 1, 3}, {5, 1}) == Shape{4, 5, 3});
}
