// Workspace: scratch device memory from the caching allocator, freed (to the cache) at scope
// end; safe with kernels still queued: see Note [One stream per device] in
// lib/core/cuda/context.cpp. A plain header, for .cu kernels and host-side launchers alike.
//
//   Workspace partial(blocks * sizeof(float));
//   kernel<<<blocks, threads, 0, stream>>>(partial.as<float>(), ...);
#pragma once

#include <cstddef>

#include "lib/core/cuda/cuda_check.h"

namespace hetu::ops::cuda {

class Workspace {
 public:
  explicit Workspace(size_t bytes) : bytes_(bytes), ptr_(hetu::cuda::scratch_allocate(bytes)) {}
  ~Workspace() { hetu::cuda::scratch_free(ptr_, bytes_); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  template <typename T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  size_t bytes_;
  void* ptr_;
};

}  // namespace hetu::ops::cuda
