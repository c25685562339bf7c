// Tensor copies that involve a CUDA device (cuda::copy_tensor, cuda::fill_tensor) and the
// StridedSpace builder. Host code only (g++); kernels are in copy.cu.
//   host -> device: make the source a contiguous host tensor of dst's dtype (CPU casts and
//                   checks ranges), then one DMA (through a device temporary if dst is strided);
//   device -> host: make the source a contiguous device tensor of dst's dtype, then one DMA
//                   (through a host temporary if dst is strided or a float -> int cast);
//   device -> device: cudaMemcpyAsync when both are contiguous of one dtype, else the kernel.
// Note [Pinned staging]: DMA from pageable memory runs at a fraction of the link speed and
// blocks; transfers of at least kStagingMin bytes are cut into chunks that alternate between
// two pinned buffers, so the host memcpy of one chunk overlaps the DMA of the other.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "lib/core/cuda/copy_kernels.h"
#include "lib/core/cuda/cuda_check.h"
#include "lib/core/cuda_runtime.h"
#include "lib/core/dispatch.h"
#include "lib/core/tensor.h"

namespace hetu::cuda {
namespace {

constexpr size_t kStagingMin = size_t{1} << 20;
constexpr size_t kChunk = size_t{8} << 20;

struct Staging {
  std::mutex mutex;
  void* buffers[2] = {nullptr, nullptr};
  cudaEvent_t done[2] = {nullptr, nullptr};
  int device = -1;  // events belong to a device
};

Staging& staging() {
  static Staging* s = new Staging();
  return *s;
}

void ensure_staging(Staging& s) {
  const int device = current_device();
  if (s.buffers[0] == nullptr) {
    for (void*& b : s.buffers) HT_CUDA_CHECK(cudaHostAlloc(&b, kChunk, cudaHostAllocPortable));
  }
  if (s.device != device) {
    for (cudaEvent_t& e : s.done) {
      if (e != nullptr) cudaEventDestroy(e);
      HT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    s.device = device;
  }
}

// Host (pageable) -> device, on the current stream; returns when `src` may be reused.
void host_to_device(void* dst, const void* src, size_t nbytes) {
  cudaStream_t st = stream();
  if (nbytes < kStagingMin) {
    HT_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, st));
    HT_CUDA_CHECK(cudaStreamSynchronize(st));
    return;
  }
  Staging& s = staging();
  std::lock_guard<std::mutex> lock(s.mutex);
  ensure_staging(s);
  bool used[2] = {false, false};
  for (size_t offset = 0, i = 0; offset < nbytes; offset += kChunk, ++i) {
    const size_t b = i % 2, n = std::min(kChunk, nbytes - offset);
    if (used[b]) HT_CUDA_CHECK(cudaEventSynchronize(s.done[b]));
    std::memcpy(s.buffers[b], static_cast<const char*>(src) + offset, n);
    HT_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + offset, s.buffers[b], n, cudaMemcpyHostToDevice, st));
    HT_CUDA_CHECK(cudaEventRecord(s.done[b], st));
    used[b] = true;
  }
  HT_CUDA_CHECK(cudaStreamSynchronize(st));
}

// Device -> host (pageable), after all work queued on the current stream.
void device_to_host(void* dst, const void* src, size_t nbytes) {
  cudaStream_t st = stream();
  if (nbytes < kStagingMin) {
    HT_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, st));
    HT_CUDA_CHECK(cudaStreamSynchronize(st));
    return;
  }
  Staging& s = staging();
  std::lock_guard<std::mutex> lock(s.mutex);
  ensure_staging(s);
  const size_t chunks = (nbytes + kChunk - 1) / kChunk;
  auto enqueue = [&](size_t i) {
    const size_t b = i % 2, offset = i * kChunk, n = std::min(kChunk, nbytes - offset);
    HT_CUDA_CHECK(cudaMemcpyAsync(s.buffers[b], static_cast<const char*>(src) + offset, n, cudaMemcpyDeviceToHost, st));
    HT_CUDA_CHECK(cudaEventRecord(s.done[b], st));
  };
  enqueue(0);
  if (chunks > 1) enqueue(1);
  for (size_t i = 0; i < chunks; ++i) {
    const size_t b = i % 2, offset = i * kChunk, n = std::min(kChunk, nbytes - offset);
    HT_CUDA_CHECK(cudaEventSynchronize(s.done[b]));
    std::memcpy(static_cast<char*>(dst) + offset, s.buffers[b], n);
    if (i + 2 < chunks) enqueue(i + 2);
  }
}

size_t nbytes_of(const Tensor& t) { return static_cast<size_t>(t.numel()) * dtype_size(t.dtype()); }

bool plain(const Tensor& t, const Tensor& like) {
  return t.is_contiguous() && t.dtype() == like.dtype() && t.shape() == like.shape();
}

// dst and src on the same CUDA device, same shape.
void device_copy_same(const Tensor& dst, const Tensor& src) {
  DeviceGuard guard(dst.device());
  if (dst.numel() == 0) return;
  if (plain(src, dst) && dst.is_contiguous()) {
    HT_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), nbytes_of(dst), cudaMemcpyDeviceToDevice, stream()));
    return;
  }
  if (!device_can_cast(dst.dtype(), src.dtype())) {  // float -> int: range checks on the host
    Tensor host = empty(src.shape(), src.dtype(), Device::cpu());
    copy_tensor(host, src);
    copy_tensor(dst, host);
    return;
  }
  launch_copy(dst.dtype(), dst.raw_data(), src.dtype(), src.raw_data(), make_strided_space(dst, {&src}), stream());
}

}  // namespace

StridedSpace make_strided_space(const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  const size_t operands = inputs.size() + 1;
  HT_CHECK(operands <= static_cast<size_t>(kMaxOperands), "strided space: {} operands, at most {}", operands,
           kMaxOperands);
  std::vector<const Tensor*> all{&out};
  all.insert(all.end(), inputs.begin(), inputs.end());
  for (const Tensor* t : all) {
    HT_CHECK(t->shape() == out.shape(), "strided space: shape {} differs from {}", shape_str(t->shape()),
             shape_str(out.shape()));
  }
  // Drop size-1 dims, then merge dim d into d+1 when every operand steps contiguously.
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides(operands);
  for (size_t d = 0; d < out.shape().size(); ++d) {
    if (out.shape()[d] == 1) continue;
    sizes.push_back(out.shape()[d]);
    for (size_t k = 0; k < operands; ++k) strides[k].push_back(all[k]->strides()[d]);
  }
  std::vector<int64_t> msizes;
  std::vector<std::vector<int64_t>> mstrides(operands);
  for (size_t d = 0; d < sizes.size(); ++d) {
    bool merge = !msizes.empty();
    for (size_t k = 0; merge && k < operands; ++k) merge = mstrides[k].back() == strides[k][d] * sizes[d];
    if (merge) {
      msizes.back() *= sizes[d];
      for (size_t k = 0; k < operands; ++k) mstrides[k].back() = strides[k][d];
    } else {
      msizes.push_back(sizes[d]);
      for (size_t k = 0; k < operands; ++k) mstrides[k].push_back(strides[k][d]);
    }
  }
  HT_CHECK(msizes.size() <= static_cast<size_t>(kMaxDims), "strided space: shape {} needs {} dims after merging, the "
           "CUDA kernels take at most {}", shape_str(out.shape()), msizes.size(), kMaxDims);
  StridedSpace s;
  s.ndim = static_cast<int>(msizes.size());
  s.numel = out.numel();
  for (size_t d = 0; d < msizes.size(); ++d) {
    s.sizes[d] = msizes[d];
    for (size_t k = 0; k < operands; ++k) s.strides[k][d] = mstrides[k][d];
  }
  return s;
}

void copy_tensor(const Tensor& dst, const Tensor& src) {
  HT_CHECK(dst.shape() == src.shape(), "copy: shapes differ: {} vs {}", shape_str(dst.shape()), shape_str(src.shape()));
  const Device dd = dst.device(), sd = src.device();
  if (dd.is_cuda() && sd.is_cuda()) {
    if (dd == sd) return device_copy_same(dst, src);
    // Across GPUs: a contiguous copy of dst's dtype on the source GPU, then a peer copy.
    Tensor packed = plain(src, dst) ? src : empty(dst.shape(), dst.dtype(), sd);
    if (!packed.same(src)) device_copy_same(packed, src);
    Tensor landing = dst.is_contiguous() ? dst : empty(dst.shape(), dst.dtype(), dd);
    {
      DeviceGuard guard(sd);
      synchronize(sd.index);
    }
    DeviceGuard guard(dd);
    HT_CUDA_CHECK(cudaMemcpyPeerAsync(landing.raw_data(), dd.index, packed.raw_data(), sd.index, nbytes_of(dst),
                                      stream()));
    if (!landing.same(dst)) device_copy_same(dst, landing);
    return;
  }
  if (dd.is_cuda()) {  // host -> device
    Tensor host = src;
    if (!plain(src, dst)) {
      host = empty(dst.shape(), dst.dtype(), Device::cpu());
      host.copy_from(src);
    }
    DeviceGuard guard(dd);
    Tensor landing = dst.is_contiguous() ? dst : empty(dst.shape(), dst.dtype(), dd);
    if (dst.numel() > 0) host_to_device(landing.raw_data(), host.raw_data(), nbytes_of(dst));
    if (!landing.same(dst)) device_copy_same(dst, landing);
    return;
  }
  // device -> host
  DeviceGuard guard(sd);
  const bool device_cast = device_can_cast(dst.dtype(), src.dtype());
  Tensor packed = src;
  if (!src.is_contiguous() || src.shape() != dst.shape() || (device_cast && src.dtype() != dst.dtype())) {
    packed = empty(dst.shape(), device_cast ? dst.dtype() : src.dtype(), sd);
    device_copy_same(packed, src);
  }
  if (packed.dtype() == dst.dtype() && dst.is_contiguous()) {
    if (dst.numel() > 0) device_to_host(dst.raw_data(), packed.raw_data(), nbytes_of(dst));
    return;
  }
  Tensor host = empty(packed.shape(), packed.dtype(), Device::cpu());
  if (host.numel() > 0) device_to_host(host.raw_data(), packed.raw_data(), nbytes_of(host));
  dst.copy_from(host);
}

void fill_tensor(const Tensor& dst, double value) {
  HT_CHECK(dst.device().is_cuda(), "cuda::fill_tensor: tensor is on {}", dst.device().str());
  DeviceGuard guard(dst.device());
  if (dst.numel() == 0) return;
  uint64_t bits = 0;
  HT_DISPATCH_ALL(dst.dtype(), [&] {
    const scalar_t v = from_double<scalar_t>(value);
    std::memcpy(&bits, &v, sizeof(v));
  });
  if (bits == 0 && dst.is_contiguous()) {
    HT_CUDA_CHECK(cudaMemsetAsync(dst.raw_data(), 0, nbytes_of(dst), stream()));
    return;
  }
  launch_fill(dst.dtype(), dst.raw_data(), make_strided_space(dst, {}), bits, stream());
}

}  // namespace hetu::cuda
