// The CUDA device runtime (lib/core/cuda_runtime.h): device queries, the current device,
// one stream per device, and the error helpers of cuda_check.h. Host code only (g++).
//
// Note [One stream per device]: every hetu kernel, copy and NCCL collective on a device is
// enqueued on that device's current stream, so work is ordered without events, and the
// caching allocator may hand a freed block to the next allocation at once (the next user is
// ordered after the last). A caller that switches streams (set_current_stream) makes the old
// stream finish first, which keeps that invariant.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <mutex>

#include "lib/core/cuda/cuda_check.h"
#include "lib/core/cuda_runtime.h"
#include "lib/util/error.h"

namespace hetu::cuda {
namespace {

constexpr int kMaxDevices = 64;

struct Runtime {
  int count = 0;
  std::string reason;
  std::mutex mutex;
  std::array<cudaStream_t, kMaxDevices> streams{};
  std::array<bool, kMaxDevices> stream_made{};
};

Runtime& runtime() {
  static Runtime* r = [] {
    auto* rt = new Runtime();  // never destroyed: streams may be used during static destruction
    const cudaError_t status = cudaGetDeviceCount(&rt->count);
    if (status != cudaSuccess) {
      rt->count = 0;
      rt->reason = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
      cudaGetLastError();
    } else if (rt->count == 0) {
      rt->reason = "no CUDA device visible";
    }
    return rt;
  }();
  return *r;
}

void check_index(int index) {
  const Runtime& rt = runtime();
  HT_CHECK(index >= 0 && index < rt.count, "cuda:{} does not exist: {} CUDA device(s) visible{}{}", index, rt.count,
           rt.reason.empty() ? "" : " — ", rt.reason);
}

}  // namespace

void throw_cuda_error(const char* file, int line, const char* call, const char* detail) {
  throw Error(fmt::format("CUDA error in {}: {}", call, detail), file, line);
}

void check_cuda(cudaError_t status, const char* file, int line, const char* call) {
  if (status == cudaSuccess) [[likely]] return;
  cudaGetLastError();  // clear non-sticky errors
  throw_cuda_error(file, line, call,
                   (std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")").c_str());
}

void check_cublas(int status, const char* file, int line, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) [[likely]] return;
  throw_cuda_error(file, line, call, cublasGetStatusString(static_cast<cublasStatus_t>(status)));
}

bool is_available() { return runtime().count > 0; }
int device_count() { return runtime().count; }
std::string unavailable_reason() { return runtime().reason; }

void set_device(int index) {
  check_index(index);
  HT_CUDA_CHECK(cudaSetDevice(index));
}

int current_device() {
  if (runtime().count == 0) return -1;
  int index = 0;
  HT_CUDA_CHECK(cudaGetDevice(&index));
  return index;
}

void* current_stream(int device) {
  check_index(device);
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  const size_t d = static_cast<size_t>(device);
  if (!rt.stream_made[d]) {
    int previous = 0;
    HT_CUDA_CHECK(cudaGetDevice(&previous));
    HT_CUDA_CHECK(cudaSetDevice(device));
    HT_CUDA_CHECK(cudaStreamCreateWithFlags(&rt.streams[d], cudaStreamNonBlocking));
    HT_CUDA_CHECK(cudaSetDevice(previous));
    rt.stream_made[d] = true;
  }
  return rt.streams[d];
}

void set_current_stream(int device, void* stream) {
  cudaStream_t old = static_cast<cudaStream_t>(current_stream(device));
  HT_CUDA_CHECK(cudaStreamSynchronize(old));
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  rt.streams[static_cast<size_t>(device)] = static_cast<cudaStream_t>(stream);
}

void synchronize(int device) { HT_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(current_stream(device)))); }

cudaStream_t stream() { return static_cast<cudaStream_t>(current_stream(current_device())); }

DeviceGuard::DeviceGuard(Device device) {
  if (!device.is_cuda()) return;
  check_index(device.index);
  int current = 0;
  HT_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device.index) {
    HT_CUDA_CHECK(cudaSetDevice(device.index));
    previous_ = current;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

}  // namespace hetu::cuda
