// A helper program for tests/e2e/checkpoint_crash.sh, which kills it with SIGKILL while it
// saves, then checks that `latest` still loads (see Note [Crash safety] in checkpoint.cpp).
//   checkpoint_crash_child save DIR MB       save a small step 1, print "saving", save step 2
//                                            (MB megabytes of f32), print "saved"
//   checkpoint_crash_child verify DIR MB [STEP]  load latest (step 1 or 2, or exactly STEP)
//                                            and every step folder; check contents; "ok step N"
//   checkpoint_crash_child bench DIR MB      save/load throughput next to raw write+fsync/read
//                                            of the same bytes (best of 3 rounds)
// tests/CMakeLists.txt globs tests/checkpoint/*.cpp into test_checkpoint, so this file compiles to nothing
// unless HETU_CHECKPOINT_CRASH_CHILD is defined (only the checkpoint_crash_child target does).
#ifdef HETU_CHECKPOINT_CRASH_CHILD

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "lib/checkpoint/checkpoint.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::checkpoint;

namespace {

constexpr int64_t kCols = 1024;
constexpr int64_t kParts = 4;

// The value of element i of tensor k at a step: exact small integers in f32.
float pattern(int64_t step, int64_t k, int64_t i) {
  return static_cast<float>((step * 1000003 + k * 7919 + i) % 65536);
}

// Step 1: 4 x (2, 1024); later steps: 4 tensors of MB/4 megabytes each, shape (rows, 1024).
std::map<std::string, ExpectedTensor> layout(int64_t step, int64_t mb) {
  const int64_t rows = step == 1 ? 2 : std::max<int64_t>(1, mb * (1 << 20) / 4 / kParts / kCols);
  std::map<std::string, ExpectedTensor> out;
  for (int64_t k = 0; k < kParts; ++k) {
    out[k % 2 == 0 ? fmt::format("transformer.h.{}.weight", k) : fmt::format("optim.m/transformer.h.{}.weight", k)] =
        ExpectedTensor{{rows, kCols}, DType::f32};
  }
  return out;
}

CheckpointData make(int64_t step, int64_t mb) {
  CheckpointData data;
  data.step = step;
  data.metadata["mb"] = std::to_string(mb);
  int64_t k = 0;
  for (const auto& [name, want] : layout(step, mb)) {
    Tensor t = empty(want.shape, DType::f32);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = pattern(step, k, i);
    data.tensors[name] = t;
    ++k;
  }
  return data;
}

// The step a folder holds, from its name ("step-0000002", or ".old-step-0000002-<pid>").
int64_t step_of(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  const size_t at = name.find("step-");
  HT_CHECK(at != std::string::npos, "{}: not a step folder", path);
  return std::stoll(name.substr(at + 5));
}

// Loads with the expected layout of its step and compares every element with `pattern`.
void check_contents(const CheckpointManager& ckpt, const std::string& path, int64_t mb) {
  const int64_t step = step_of(path);
  const std::map<std::string, ExpectedTensor> expected = layout(step, mb);
  const CheckpointData data = ckpt.load(path, &expected);
  HT_CHECK(data.step == step, "{}: holds step {}", path, data.step);
  HT_CHECK(data.metadata.at("mb") == std::to_string(mb), "{}: metadata mb = {}", path, data.metadata.at("mb"));
  int64_t k = 0;
  for (const auto& [name, t] : data.tensors) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      HT_CHECK(p[i] == pattern(step, k, i), "{}: tensor {}: element {} is {}, expected {}", path, name, i, p[i],
               pattern(step, k, i));
    }
    ++k;
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The peer for `bench`: the same bytes with one write() + fsync, and one read().
std::pair<double, double> raw_write_read(const std::string& path, const std::vector<Tensor>& tensors) {
  auto start = std::chrono::steady_clock::now();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  HT_CHECK(fd >= 0, "cannot create {}", path);
  for (const Tensor& t : tensors) {
    const auto* p = static_cast<const char*>(t.raw_data());
    size_t left = static_cast<size_t>(t.numel()) * 4;
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      HT_CHECK(n > 0, "write {}", path);
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  HT_CHECK(::fsync(fd) == 0 && ::close(fd) == 0, "fsync {}", path);
  const double write_s = seconds_since(start);
  start = std::chrono::steady_clock::now();
  fd = ::open(path.c_str(), O_RDONLY);
  for (const Tensor& t : tensors) {
    Tensor out = empty(t.shape(), DType::f32);
    auto* p = static_cast<char*>(out.raw_data());
    size_t left = static_cast<size_t>(t.numel()) * 4;
    while (left > 0) {
      const ssize_t n = ::read(fd, p, left);
      HT_CHECK(n > 0, "read {}", path);
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  ::close(fd);
  ::unlink(path.c_str());
  return {write_s, seconds_since(start)};
}

int run(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (argc < 4 || (mode != "save" && mode != "verify" && mode != "bench")) {
    std::cerr << "usage: checkpoint_crash_child save|bench DIR MB | verify DIR MB [STEP]\n";
    return 2;
  }
  CheckpointManager ckpt(argv[2], 2);
  if (mode == "save") {
    const int64_t mb = std::stoll(argv[3]);
    ckpt.save(make(1, mb));
    const CheckpointData big = make(2, mb);
    std::cout << "saving" << std::endl;
    ckpt.save(big);
    std::cout << "saved" << std::endl;
    return 0;
  }
  if (mode == "verify") {
    const int64_t mb = std::stoll(argv[3]);
    const int64_t want_step = argc > 4 ? std::stoll(argv[4]) : 0;
    const std::optional<std::string> latest = ckpt.latest();
    HT_CHECK(latest.has_value(), "{}: no checkpoint", argv[2]);
    const int64_t step = step_of(*latest);
    HT_CHECK(want_step == 0 ? (step == 1 || step == 2) : step == want_step, "{}: step {}, expected {}", *latest, step,
             want_step == 0 ? "1 or 2" : std::to_string(want_step));
    check_contents(ckpt, *latest, mb);
    const std::vector<std::string> steps = ckpt.list();
    for (const std::string& path : steps) {
      if (path != *latest) check_contents(ckpt, path, mb);  // every step folder is complete
    }
    std::cout << "ok step " << step << " (" << steps.size() << " step folders)\n";
    return 0;
  }
  // bench: three rounds of (raw write+fsync, raw read, save, load); the best time of each.
  const int64_t mb = std::stoll(argv[3]);
  CheckpointData data = make(2, mb);
  std::vector<Tensor> tensors;
  for (const auto& [name, t] : data.tensors) tensors.push_back(t);
  const double bytes_mb = static_cast<double>(tensors.size() * static_cast<size_t>(tensors[0].numel()) * 4) / 1e6;
  double raw_write_s = 1e30, raw_read_s = 1e30, save_s = 1e30, load_s = 1e30;
  for (int round = 0; round < 3; ++round) {
    const auto [w, r] = raw_write_read(std::string(argv[2]) + "/raw.bin", tensors);
    raw_write_s = std::min(raw_write_s, w);
    raw_read_s = std::min(raw_read_s, r);
    data.step = 10 + round;
    auto start = std::chrono::steady_clock::now();
    const std::string path = ckpt.save(data);
    save_s = std::min(save_s, seconds_since(start));
    start = std::chrono::steady_clock::now();
    const CheckpointData back = ckpt.load(path);
    load_s = std::min(load_s, seconds_since(start));
  }
  std::printf("%.0f MB of f32: save %.2f s (%.0f MB/s), raw write+fsync %.2f s (%.0f MB/s), ratio %.2f\n", bytes_mb,
              save_s, bytes_mb / save_s, raw_write_s, bytes_mb / raw_write_s, raw_write_s / save_s);
  std::printf("%.0f MB of f32: load+verify %.2f s (%.0f MB/s), raw read %.2f s (%.0f MB/s), ratio %.2f\n", bytes_mb,
              load_s, bytes_mb / load_s, raw_read_s, bytes_mb / raw_read_s, raw_read_s / load_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

#endif  // HETU_CHECKPOINT_CRASH_CHILD
