// lib/checkpoint/sharded_checkpoint in one process: read_boxes and read_info on whole-written
// (format_version 1) checkpoints, and on box-written (format_version 2) files made here by
// several CheckpointFileWriters in turn, the way save_sharded's ranks write them (the
// collective itself is tested under mpirun in tests/hspmd/mpi). Expected values come from
// index-valued tensors cut element by element (tests/checkpoint/box_test_utils.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "lib/checkpoint/checkpoint_file.h"
#include "lib/checkpoint/sharded_checkpoint.h"
#include "lib/util/error.h"
#include "tests/checkpoint/box_test_utils.h"
#include "tests/temp_dir.h"

using namespace hetu;
using namespace hetu::checkpoint;
using hetu::test::box_bytes;
using hetu::test::box_of;
using hetu::test::bytes_of;
using hetu::test::index_tensor;
using hetu::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string usage_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.message();
  }
  FAIL("expected a hetu::UsageError");
  return "";
}

Box box(Shape offset, Shape size) { return Box{std::move(offset), std::move(size)}; }

// Flips one bit of the only occurrence of `data`'s bytes in the file, at byte `at` of them.
void corrupt(const fs::path& file, const Tensor& data, size_t at) {
  std::string bytes = read_all(file);
  const std::vector<unsigned char> raw = bytes_of(data);
  const std::string needle(raw.begin(), raw.end());
  const size_t where = bytes.find(needle);
  REQUIRE(where != std::string::npos);
  REQUIRE(bytes.find(needle, where + 1) == std::string::npos);
  bytes[where + at] = static_cast<char>(bytes[where + at] ^ 0x10);
  write_all(file, bytes);
}

// A box-written checkpoint of "w" (6, 8) f32 = 1000 + i, "b" (5,) bf16 = 100 + i and "s" ()
// i64, written by three writers in turn: w in row and column pieces spread over all three,
// b whole by the second writer, s whole by the third. Returns the step folder.
std::string write_boxed(const CheckpointManager& ckpt, int64_t step, const Tensor& w, const Tensor& b,
                        const Tensor& s) {
  const std::string work = ckpt.begin_save(step);
  const std::string file = (fs::path(work) / "checkpoint.h5").string();
  const std::vector<std::vector<Box>> boxes_of_w = {
      {box({0, 0}, {2, 8}), box({4, 0}, {2, 3})},  // writer 0
      {box({2, 0}, {2, 8})},                       // writer 1
      {box({4, 3}, {2, 5})}};                      // writer 2
  for (size_t writer = 0; writer < 3; ++writer) {
    CheckpointFileWriter f = writer == 0 ? CheckpointFileWriter::create(file, kShardedFormatVersion, step,
                                                                        {{"config", "x = 1"}})
                                         : CheckpointFileWriter::open(file);
    for (const Box& piece : boxes_of_w[writer]) f.write_box("w", {6, 8}, DType::f32, piece, box_of(w, piece));
    if (writer == 1) f.write_box("b", {5}, DType::bf16, full_box({5}), b);
    if (writer == 2) f.write_box("s", {}, DType::i64, full_box({}), s);
    f.write_box("empty", {0, 3}, DType::f32, box({0, 0}, {0, 3}), Tensor());  // every writer: nothing to write
    f.close();
  }
  return ckpt.finish_save(work, step);
}

}  // namespace

TEST_CASE("copy_region copies a sub-box between two boxes like an element loop", "[sharded_checkpoint]") {
  const Tensor full = index_tensor({5, 6, 7}, DType::f64, 0);
  const Box src_box = box({1, 0, 2}, {4, 6, 5});  // inside full
  const Box dst_box = box({0, 2, 1}, {3, 4, 6});
  const Box region = intersect(src_box, dst_box);  // [1:3, 2:6, 2:7]
  const Tensor src = box_of(full, src_box);
  Tensor dst = zeros(dst_box.size, DType::f64);
  copy_region(src.raw_data(), src_box, dst.raw_data(), dst_box, region, sizeof(double));
  const Tensor region_values = box_of(dst, box({1, 0, 1}, region.size));  // region in dst coordinates
  CHECK(bytes_of(region_values) == box_bytes(full, region));
  CHECK(to_vector(dst)[0] == 0.0);  // outside the region: untouched
}

TEST_CASE("read_boxes reads any box of a whole-written checkpoint, every dtype bitwise", "[sharded_checkpoint]") {
  TempDir tmp("sharded_whole");
  CheckpointManager ckpt(tmp.str(), 1);
  CheckpointData data;
  data.step = 12;
  int64_t base = 0;
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8}) {
    const bool small = dtype_size(d) <= 2;  // 120 distinct integers from 0 are exact in bf16, f16, u8
    data.tensors["t." + std::string(to_string(d))] = index_tensor({4, 5, 6}, d, small ? 0 : base += 1000);
  }
  data.tensors["scalar"] = index_tensor({}, DType::i64, 77);
  data.tensors["optim.m/w"] = index_tensor({6, 8}, DType::f32, 5000);
  const std::string path = ckpt.save(data);

  const std::vector<Box> boxes = {box({0, 0, 0}, {2, 5, 6}), box({0, 0, 3}, {4, 5, 3}), box({1, 2, 1}, {3, 2, 4}),
                                  box({3, 4, 5}, {1, 1, 1}), box({2, 0, 0}, {0, 5, 6}), full_box({4, 5, 6})};
  std::vector<TensorBox> wanted;
  for (const auto& [name, t] : data.tensors) {
    if (t.dim() != 3) continue;
    for (const Box& b : boxes) wanted.push_back({name, t.shape(), t.dtype(), b, {}});
  }
  wanted.push_back({"scalar", {}, DType::i64, full_box({}), {}});
  // A preallocated destination is filled in place.
  const Tensor into = zeros({3, 2}, DType::f32);
  wanted.push_back({"optim.m/w", {6, 8}, DType::f32, box({2, 5}, {3, 2}), into});
  read_boxes(path, wanted);
  for (const TensorBox& w : wanted) {
    INFO(w.name << " " << w.box.to_string());
    CHECK(w.values.shape() == w.box.size);
    CHECK(w.values.dtype() == w.dtype);
    CHECK(bytes_of(w.values) == box_bytes(data.tensors.at(w.name), w.box));
  }
  CHECK(wanted.back().values.same(into));
  CHECK(to_vector(into) == std::vector<double>{5021, 5022, 5029, 5030, 5037, 5038});

  const CheckpointInfo info = read_info(path);
  CHECK(info.step == 12);
  CHECK_FALSE(info.sharded);
  CHECK(info.metadata.empty());
  REQUIRE(info.tensors.size() == data.tensors.size());
  CHECK(info.tensors.at("t.bf16").shape == Shape{4, 5, 6});
  CHECK(info.tensors.at("t.bf16").dtype == DType::bf16);
  CHECK(info.tensors.at("scalar").shape.empty());
}

TEST_CASE("read_boxes lists every problem naming the file and the tensor", "[sharded_checkpoint]") {
  TempDir tmp("sharded_problems");
  CheckpointManager ckpt(tmp.str(), 1);
  const std::string path = ckpt.save(CheckpointData{3, {{"w", zeros({4, 6})}, {"b", zeros({6}, DType::bf16)}}, {}});
  const std::string file = path + "/checkpoint.h5";
  std::vector<TensorBox> wanted = {
      {"missing", {4}, DType::f32, box({0}, {4}), {}},
      {"w", {6, 4}, DType::f32, box({0, 0}, {6, 4}), {}},
      {"b", {6}, DType::f32, box({0}, {6}), {}},
      {"w", {4, 6}, DType::f32, box({2, 0}, {3, 6}), {}},
      {"w", {4, 6}, DType::f32, box({0}, {4}), {}},
      {"b", {6}, DType::bf16, box({0}, {3}), zeros({4}, DType::bf16)},
      {"w", {4, 6}, DType::f32, box({0, 0}, {4, 6}), {}}};  // fine, but nothing is read
  const std::string message = usage_error_of([&] { read_boxes(path, wanted); });
  CHECK_THAT(message, Catch::Contains(file + ": tensor missing: missing from the checkpoint"));
  CHECK_THAT(message, Catch::Contains(file + ": tensor w: shape (4, 6) in the checkpoint, wanted (6, 4)"));
  CHECK_THAT(message, Catch::Contains(file + ": tensor b: dtype bf16 in the checkpoint, wanted f32"));
  CHECK_THAT(message, Catch::Contains(file + ": tensor w: box [2:5, 0:6] lies outside shape (4, 6)"));
  CHECK_THAT(message, Catch::Contains(file + ": tensor w: box [0:4] lies outside shape (4, 6)"));
  CHECK_THAT(message, Catch::Contains(file + ": tensor b: box [0:3] needs contiguous CPU values of shape (3,) bf16"));
  CHECK_FALSE(wanted.back().values.defined());
  CHECK_THAT(usage_error_of([&] { (void)read_info(tmp.str("nothing")); }), Catch::Contains("no such checkpoint file"));
}

TEST_CASE("read_boxes verifies the checksum of a whole-written tensor it reads a box of", "[sharded_checkpoint]") {
  TempDir tmp("sharded_whole_corrupt");
  CheckpointManager ckpt(tmp.str(), 1);
  const Tensor w = index_tensor({32, 32}, DType::i32, 0x5EED0000);
  const std::string path = ckpt.save(CheckpointData{1, {{"w", w}, {"other", full({8}, 1.0f)}}, {}});
  corrupt(fs::path(path) / "checkpoint.h5", w, 3001);
  std::vector<TensorBox> wanted = {{"w", {32, 32}, DType::i32, box({0, 0}, {1, 1}), {}}};
  CHECK(usage_error_of([&] { read_boxes(path, wanted); }) ==
        path + "/checkpoint.h5: tensor w: checksum mismatch (file corrupted?)");
  std::vector<TensorBox> other = {{"other", {8}, DType::f32, box({2}, {3}), {}}};
  read_boxes(path, other);
  CHECK(to_vector(other[0].values) == std::vector<double>{1, 1, 1});
}

TEST_CASE("box-written checkpoints load whole and reshard into any boxes", "[sharded_checkpoint]") {
  TempDir tmp("sharded_boxed");
  CheckpointManager ckpt(tmp.str("ckpt"), 2);
  const Tensor w = index_tensor({6, 8}, DType::f32, 1000);
  const Tensor b = index_tensor({5}, DType::bf16, 100);
  const Tensor s = index_tensor({}, DType::i64, -5);
  const std::string path = write_boxed(ckpt, 40, w, b, s);
  CHECK(path == tmp.str("ckpt/step-0000040"));
  CHECK(ckpt.latest() == path);

  const CheckpointData back = ckpt.load(path);
  CHECK(back.step == 40);
  CHECK(back.metadata == std::map<std::string, std::string>{{"config", "x = 1"}});
  REQUIRE(back.tensors.size() == 4);
  CHECK(bytes_of(back.tensors.at("w")) == bytes_of(w));
  CHECK(bytes_of(back.tensors.at("b")) == bytes_of(b));
  CHECK(bytes_of(back.tensors.at("s")) == bytes_of(s));
  CHECK(back.tensors.at("empty").shape() == Shape{0, 3});

  std::vector<TensorBox> wanted;
  for (const Box& piece : {box({0, 0}, {6, 3}), box({1, 2}, {4, 5}), box({3, 7}, {3, 1}), full_box({6, 8})})
    wanted.push_back({"w", {6, 8}, DType::f32, piece, {}});
  wanted.push_back({"b", {5}, DType::bf16, box({1}, {3}), {}});
  wanted.push_back({"s", {}, DType::i64, full_box({}), {}});
  wanted.push_back({"empty", {0, 3}, DType::f32, box({0, 1}, {0, 2}), {}});
  read_boxes(path, wanted);
  for (const TensorBox& t : wanted) {
    INFO(t.name << " " << t.box.to_string());
    const Tensor& whole = t.name == "w" ? w : t.name == "b" ? b : t.name == "s" ? s : back.tensors.at("empty");
    CHECK(bytes_of(t.values) == box_bytes(whole, t.box));
  }

  const CheckpointInfo info = read_info(path);
  CHECK(info.sharded);
  CHECK(info.step == 40);
  CHECK(info.tensors.at("w").shape == Shape{6, 8});
  CHECK(info.tensors.at("s").dtype == DType::i64);
  CHECK(ckpt.names(path) == std::vector<std::string>{"b", "empty", "s", "w"});
}

TEST_CASE("a corrupted box is detected by load and by read_boxes of boxes overlapping it", "[sharded_checkpoint]") {
  TempDir tmp("sharded_boxed_corrupt");
  CheckpointManager ckpt(tmp.str(), 1);
  const Tensor w = index_tensor({6, 8}, DType::f32, 1000);
  const std::string path =
      write_boxed(ckpt, 1, w, index_tensor({5}, DType::bf16, 100), index_tensor({}, DType::i64, 0));
  const fs::path file = fs::path(path) / "checkpoint.h5";
  corrupt(file, box_of(w, box({2, 0}, {2, 8})), 37);  // rows 2:4, written as one contiguous box

  CHECK(usage_error_of([&] { ckpt.load(path); }) ==
        file.string() + ": tensor w: checksum mismatch in box [2:4, 0:8] (file corrupted?)");
  std::vector<TensorBox> overlapping = {{"w", {6, 8}, DType::f32, box({3, 6}, {2, 2}), {}}};
  CHECK_THAT(usage_error_of([&] { read_boxes(path, overlapping); }),
             Catch::Contains("checksum mismatch in box [2:4, 0:8]"));
  // Boxes that do not overlap it read only the intact stored boxes.
  std::vector<TensorBox> apart = {{"w", {6, 8}, DType::f32, box({0, 0}, {2, 8}), {}},
                                  {"w", {6, 8}, DType::f32, box({4, 1}, {2, 6}), {}}};
  read_boxes(path, apart);
  CHECK(bytes_of(apart[0].values) == box_bytes(w, apart[0].box));
  CHECK(bytes_of(apart[1].values) == box_bytes(w, apart[1].box));
}

TEST_CASE("a box-written tensor whose boxes leave a hole is refused", "[sharded_checkpoint]") {
  TempDir tmp("sharded_hole");
  CheckpointManager ckpt(tmp.str(), 1);
  const std::string work = ckpt.begin_save(5);
  const std::string file = (fs::path(work) / "checkpoint.h5").string();
  const Tensor w = index_tensor({4, 4}, DType::f32, 0);
  CheckpointFileWriter f = CheckpointFileWriter::create(file, kShardedFormatVersion, 5, {});
  f.write_box("w", {4, 4}, DType::f32, box({0, 0}, {3, 4}), box_of(w, box({0, 0}, {3, 4})));
  f.close();
  const std::string path = ckpt.finish_save(work, 5);
  const std::string expected = path + "/checkpoint.h5: tensor w: its 1 stored boxes do not cover shape (4, 4) exactly";
  CHECK_THAT(usage_error_of([&] { ckpt.load(path); }), Catch::StartsWith(expected));
  CHECK_THAT(usage_error_of([&] { (void)read_info(path); }), Catch::StartsWith(expected));
}

TEST_CASE("begin_save and abandon_save leave no step folder behind", "[sharded_checkpoint]") {
  TempDir tmp("sharded_abandon");
  CheckpointManager ckpt(tmp.str("ckpt"), 1);
  const std::string work = ckpt.begin_save(3);
  CHECK(fs::is_directory(work));
  CHECK(fs::path(work).filename().string().rfind(".tmp-step-0000003-", 0) == 0);
  CHECK_THROWS_AS(ckpt.finish_save(work, 4), Error);  // not the work folder of step 4
  ckpt.abandon_save(work);
  CHECK_FALSE(fs::exists(work));
  CHECK(ckpt.list().empty());
  CHECK_FALSE(ckpt.latest().has_value());
}

// As for whole-written files (test_checkpoint.cpp): every byte of a small box-written file
// flipped in turn; each load either refuses with a UsageError naming the file or returns
// exactly the saved contents.
TEST_CASE("box-written checkpoints never load wrong data after any single-byte corruption", "[sharded_checkpoint]") {
  TempDir tmp("sharded_every_byte");
  CheckpointManager ckpt(tmp.str(), 1);
  const Tensor w = index_tensor({6, 8}, DType::f32, 1000);
  const Tensor b = index_tensor({5}, DType::bf16, 100);
  const Tensor s = index_tensor({}, DType::i64, 9);
  const std::string path = write_boxed(ckpt, 2, w, b, s);
  const fs::path file = fs::path(path) / "checkpoint.h5";
  const std::string bytes = read_all(file);
  int64_t refused = 0;
  auto put_byte = [&](size_t at, char value) {
    std::fstream out(file, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(static_cast<std::streamoff>(at));
    out.put(value);
  };
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i > 0) put_byte(i - 1, bytes[i - 1]);
    put_byte(i, static_cast<char>(bytes[i] ^ 0x5A));
    try {
      const CheckpointData back = ckpt.load(path);
      INFO("byte " << i << " of " << bytes.size() << " flipped and the file still loaded");
      REQUIRE(back.step == 2);
      REQUIRE(back.tensors.size() == 4);
      REQUIRE(bytes_of(back.tensors.at("w")) == bytes_of(w));
      REQUIRE(bytes_of(back.tensors.at("b")) == bytes_of(b));
      REQUIRE(bytes_of(back.tensors.at("s")) == bytes_of(s));
    } catch (const UsageError& e) {
      CHECK_THAT(e.message(), Catch::StartsWith(file.string() + ": "));
      ++refused;
    }
  }
  // Fewer than half are refused: each writer reopened the file and rewrote the box
  // attributes, which leaves unused space no reader looks at (h5stat: 3752 of its 6359 bytes
  // unaccounted, against 2080 of 4380 for the same tensors saved whole).
  CHECK(refused > static_cast<int64_t>(bytes.size()) / 3);
}
