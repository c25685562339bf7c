// save_sharded under mpirun: every rank writes its boxes of one layout (rows split unevenly,
// a fused qkv-like weight as 3 boxes per rank, columns, a grid dealt round-robin, a tensor
// duplicated on every rank but written by one, a scalar, an empty tensor); every rank then
// reads another layout (columns in reversed rank order, uneven rows, the whole tensor) and
// CheckpointManager::load reads the file whole. Expected values are index-valued tensors
// built on every rank (tests/checkpoint/box_test_utils.h). Also: a corrupted box is detected, and
// overlaps, holes and bad values are reported on every rank before anything is renamed.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>

#include "lib/checkpoint/sharded_checkpoint.h"
#include "lib/util/error.h"
#include "tests/checkpoint/box_test_utils.h"
#include "tests/hspmd/mpi/mpi_test_utils.h"

namespace hetu::test {
namespace {

namespace fs = std::filesystem;
using checkpoint::CheckpointManager;
using checkpoint::TensorBox;

Box box(Shape offset, Shape size) { return Box{std::move(offset), std::move(size)}; }

// Rows [offset, offset + size) of a 2-D shape.
Box rows(const Shape& shape, Range r) { return box({r.offset, 0}, {r.size, shape[1]}); }
Box cols(const Shape& shape, Range r) { return box({0, r.offset}, {shape[0], r.size}); }

// The logical tensors, built the same way on every rank.
std::map<std::string, Tensor> logical_tensors() {
  return {{"h.0.attn.c_attn.weight", index_tensor({12, 5}, DType::f32, 2000)},  // fused q, k, v: 4 rows each
          {"h.0.mlp.weight", index_tensor({7, 6}, DType::f32, 1000)},
          {"optim.m/h.0.mlp.weight", index_tensor({7, 6}, DType::f64, 3000)},
          {"ln.weight", index_tensor({9}, DType::bf16, 10)},
          {"grid", index_tensor({5, 7}, DType::u8, 0)},
          {"step.scalar", index_tensor({}, DType::i64, 123456789)},
          {"empty", index_tensor({0, 3}, DType::f32, 0)}};
}

// Layout A: what rank r of n saves.
std::vector<TensorBox> layout_a(const std::map<std::string, Tensor>& all, int64_t r, int64_t n) {
  std::vector<TensorBox> out;
  auto add = [&](const std::string& name, const Box& b) {
    const Tensor& t = all.at(name);
    out.push_back({name, t.shape(), t.dtype(), b, box_of(t, b)});
  };
  add("h.0.mlp.weight", rows({7, 6}, even_part(7, n, r)));
  for (int64_t block = 0; block < 3; ++block) {  // this rank's rows of each of q, k and v
    const Range part = even_part(4, n, r);
    add("h.0.attn.c_attn.weight", rows({12, 5}, Range{4 * block + part.offset, part.size}));
  }
  add("optim.m/h.0.mlp.weight", cols({7, 6}, even_part(6, n, r)));
  if (r == n - 1) add("ln.weight", full_box({9}));  // duplicated on every rank, written by one
  if (r == 0) add("step.scalar", full_box({}));
  add("empty", box({0, 0}, {0, 3}));
  // A grid of 3 x 2 cells (rows cut at 2, columns at 3 and 4), cell i to rank i % n.
  const std::vector<Box> cells = refine({box({0, 0}, {2, 3}), box({2, 4}, {3, 3}), box({0, 0}, {5, 7})});
  for (size_t i = 0; i < cells.size(); ++i)
    if (static_cast<int64_t>(i) % n == r) add("grid", cells[i]);
  return out;
}

// Layout B: what rank r of n reads back.
std::vector<TensorBox> layout_b(const std::map<std::string, Tensor>& all, int64_t r, int64_t n) {
  std::vector<TensorBox> out;
  auto want = [&](const std::string& name, const Box& b) {
    const Tensor& t = all.at(name);
    out.push_back({name, t.shape(), t.dtype(), b, {}});
  };
  want("h.0.mlp.weight", cols({7, 6}, even_part(6, n, n - 1 - r)));
  want("h.0.attn.c_attn.weight", full_box({12, 5}));
  want("optim.m/h.0.mlp.weight", rows({7, 6}, Range{0, std::min<int64_t>(r + 1, 7)}));
  want("ln.weight", box({r % 9}, {9 - r % 9}));
  want("grid", box({1, 2}, {3, 4}));
  want("step.scalar", full_box({}));
  want("empty", full_box({0, 3}));
  return out;
}

bool boxes_match(const std::map<std::string, Tensor>& all, const std::vector<TensorBox>& read) {
  bool ok = true;
  for (const TensorBox& t : read) {
    if (bytes_of(t.values) != box_bytes(all.at(t.name), t.box)) {
      UNSCOPED_INFO("rank " << world().rank() << ": " << t.name << " " << t.box.to_string() << " differs");
      ok = false;
    }
  }
  return ok;
}

// The message of the hetu::Error (or UsageError) fn throws; "" when it throws none.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("mpi sharded checkpoint: save one layout, read another, load whole", "[mpi]") {
  Communicator& comm = world();
  const int64_t n = comm.world_size(), r = comm.rank();
  SharedDir dir("sharded_ckpt");
  CheckpointManager ckpt(dir.str("checkpoints"), 2);
  const std::map<std::string, Tensor> all = logical_tensors();
  const std::map<std::string, std::string> metadata = {{"config", "[model]\nlayers = 1\n"}, {"rank", "0"}};
  std::map<std::string, std::string> my_metadata = metadata;
  my_metadata["rank"] = std::to_string(r);  // only rank 0's metadata is stored

  const std::string path = checkpoint::save_sharded(ckpt, 7, layout_a(all, r, n), my_metadata, comm);
  CHECK(agree(path == dir.str("checkpoints/step-0000007")));
  CHECK(agree(ckpt.latest() == path));

  std::vector<TensorBox> wanted = layout_b(all, r, n);
  checkpoint::read_boxes(path, wanted);
  CHECK(agree(boxes_match(all, wanted)));

  const checkpoint::CheckpointData back = ckpt.load(path);
  bool whole_ok = back.step == 7 && back.metadata == metadata && back.tensors.size() == all.size();
  for (const auto& [name, t] : all) {
    whole_ok = whole_ok && back.tensors.count(name) && back.tensors.at(name).shape() == t.shape() &&
               back.tensors.at(name).dtype() == t.dtype() && bytes_of(back.tensors.at(name)) == bytes_of(t);
  }
  CHECK(agree(whole_ok));
  const checkpoint::CheckpointInfo info = checkpoint::read_info(path);
  CHECK(agree(info.sharded && info.step == 7 && info.tensors.size() == all.size() &&
              info.tensors.at("h.0.attn.c_attn.weight").shape == Shape{12, 5}));

  // Step 9, each rank saving the boxes rank n - 1 - r saved above; keep = 2 holds both steps.
  const std::string path9 = checkpoint::save_sharded(ckpt, 9, layout_a(all, n - 1 - r, n), metadata, comm);
  CHECK(agree(ckpt.latest() == path9 && ckpt.list() == std::vector<std::string>{path, path9}));
  std::vector<TensorBox> whole;
  for (const auto& [name, t] : all) whole.push_back({name, t.shape(), t.dtype(), full_box(t.shape()), {}});
  checkpoint::read_boxes(path9, whole);
  CHECK(agree(boxes_match(all, whole)));

  // A flipped byte in the rows the last rank wrote: found by load and by reads overlapping
  // them; reads of other rows still succeed. Each rank works on its own copy of the file.
  const fs::path copy = dir.path / fmt::format("copy-{}.h5", r);
  fs::copy_file(fs::path(path) / "checkpoint.h5", copy);
  const Range last = even_part(7, n, n - 1);
  const std::vector<unsigned char> raw = box_bytes(all.at("h.0.mlp.weight"), rows({7, 6}, last));
  std::string bytes;
  {
    std::ifstream in(copy, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t at = bytes.find(std::string(raw.begin(), raw.end()));
  bool found = at != std::string::npos;
  if (found) {
    bytes[at + raw.size() / 2] = static_cast<char>(bytes[at + raw.size() / 2] ^ 0x01);
    std::ofstream(copy, std::ios::binary | std::ios::trunc) << bytes;
  }
  CHECK(agree(found));
  const std::string mismatch = n == 1 ? std::string("tensor h.0.mlp.weight: checksum mismatch (file corrupted?)")
                                      : fmt::format("tensor h.0.mlp.weight: checksum mismatch in box {}",
                                                    rows({7, 6}, last).to_string());
  CHECK(agree(contains(error_of([&] { ckpt.load(copy.string()); }), mismatch)));
  std::vector<TensorBox> overlapping = {{"h.0.mlp.weight", {7, 6}, DType::f32, box({6, 0}, {1, 1}), {}}};
  CHECK(agree(contains(error_of([&] { checkpoint::read_boxes(copy.string(), overlapping); }), mismatch)));
  if (last.offset > 0) {
    std::vector<TensorBox> apart = {{"h.0.mlp.weight", {7, 6}, DType::f32, box({0, 0}, {last.offset, 6}), {}}};
    checkpoint::read_boxes(copy.string(), apart);
    CHECK(agree(boxes_match(all, apart)));
  }
}

TEST_CASE("mpi sharded checkpoint: overlaps, holes and bad values fail on every rank before any rename", "[mpi]") {
  Communicator& comm = world();
  const int64_t n = comm.world_size(), r = comm.rank();
  SharedDir dir("sharded_ckpt_errors");
  CheckpointManager ckpt(dir.str("checkpoints"), 3);
  const std::map<std::string, Tensor> all = logical_tensors();
  const std::string first = checkpoint::save_sharded(ckpt, 1, layout_a(all, r, n), {}, comm);
  const auto unchanged = [&] {
    std::vector<std::string> entries;
    for (const auto& e : fs::directory_iterator(dir.path / "checkpoints")) {
      entries.push_back(e.path().filename().string());
    }
    std::sort(entries.begin(), entries.end());
    return ckpt.latest() == first && entries == std::vector<std::string>{"latest", "step-0000001"};
  };

  // Overlap: the last rank also writes the first row of the mlp weight (with one rank: twice).
  std::vector<TensorBox> overlap = layout_a(all, r, n);
  if (r == n - 1) {
    const Tensor& t = all.at("h.0.mlp.weight");
    overlap.push_back({"h.0.mlp.weight", {7, 6}, DType::f32, box({0, 0}, {1, 6}), box_of(t, box({0, 0}, {1, 6}))});
  }
  std::string message = error_of([&] { checkpoint::save_sharded(ckpt, 2, overlap, {}, comm); });
  CHECK(agree(contains(message, "save_sharded step 2: nothing was written") &&
              contains(message, "tensor h.0.mlp.weight: box [0:") && contains(message, "overlaps box [0:1, 0:6]")));
  CHECK(agree(unchanged()));

  // Hole: rank 0 leaves out its rows of k (the second of its three qkv boxes).
  std::vector<TensorBox> hole = layout_a(all, r, n);
  if (r == 0) hole.erase(hole.begin() + 2);
  message = error_of([&] { checkpoint::save_sharded(ckpt, 2, hole, {}, comm); });
  const int64_t missing = even_part(4, n, 0).size;
  CHECK(agree(contains(message, fmt::format("tensor h.0.attn.c_attn.weight: the boxes cover {} of its 60 elements; "
                                            "no rank writes [4:{}, 0:5]",
                                            60 - 5 * missing, 4 + missing))));
  CHECK(agree(unchanged()));

  // Values of the wrong shape on one rank, and a shape that ranks disagree on.
  std::vector<TensorBox> bad = layout_a(all, r, n);
  if (r == n - 1) bad.front().values = zeros({1, 1});
  message = error_of([&] { checkpoint::save_sharded(ckpt, 2, bad, {}, comm); });
  CHECK(agree(contains(message, fmt::format("rank {}: tensor h.0.mlp.weight: box ", n - 1)) &&
              contains(message, "needs CPU values of shape")));
  bad = layout_a(all, r, n);
  for (TensorBox& t : bad) {
    if (t.name == "empty" && r == 0) {
      t.shape = {0, 4};
      t.box = box({0, 0}, {0, 4});
      t.values = Tensor();  // an empty box needs no values
    }
  }
  message = error_of([&] { checkpoint::save_sharded(ckpt, 2, bad, {}, comm); });
  CHECK(agree(n == 1 || contains(message, "tensor empty: rank 0 saves it as (0, 4) f32, rank 1 as (0, 3) f32")));
  CHECK(agree(n == 1 || unchanged()));  // one rank cannot disagree with itself: that save succeeds

  // Rank 0 cannot make the work folder (the checkpoint folder is a file): every rank says so.
  if (r == 0) std::ofstream(dir.path / "a-file") << "x";
  comm.barrier(comm.world());
  const CheckpointManager in_a_file(dir.str("a-file"), 1);
  message = error_of([&] { checkpoint::save_sharded(in_a_file, 3, layout_a(all, r, n), {}, comm); });
  CHECK(agree(contains(message, "save_sharded step 3: rank 0: checkpoint: cannot create " + dir.str("a-file"))));
}

}  // namespace hetu::test
