// lib/core/cuda_runtime.h for builds without the CUDA backend: no devices; actions throw.
#include "lib/core/cuda_runtime.h"

#include "lib/util/error.h"

namespace hetu::cuda {
namespace {
[[noreturn]] void no_backend(const char* what) {
  HT_THROW("{}: hetu was built without the CUDA backend (HETU_CUDA=OFF or no toolkit found)", what);
}
}  // namespace

bool is_available() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() { return "hetu was built without the CUDA backend"; }
void set_device(int) { no_backend("cuda::set_device"); }
int current_device() { return -1; }
void* current_stream(int) { no_backend("cuda::current_stream"); }
void set_current_stream(int, void*) { no_backend("cuda::set_current_stream"); }
void synchronize(int) { no_backend("cuda::synchronize"); }
DeviceGuard::DeviceGuard(Device device) {
  if (device.is_cuda()) no_backend("cuda::DeviceGuard");
}
DeviceGuard::~DeviceGuard() = default;
MemoryStats memory_stats(int) { return {}; }
void reset_peak_memory_stats(int) {}
void empty_cache(int) {}
void copy_tensor(const Tensor&, const Tensor&) { no_backend("copy to or from a CUDA tensor"); }
void fill_tensor(const Tensor&, double) { no_backend("fill of a CUDA tensor"); }

}  // namespace hetu::cuda
