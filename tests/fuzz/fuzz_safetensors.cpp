// libFuzzer target for the safetensors reader (lib/checkpoint/safetensors.cpp), which treats files as
// untrusted input: any bytes must either parse into tensors that lie inside the input or be
// rejected with a hetu::UsageError. Anything else (a crash, a sanitizer report, another
// exception type) is a bug. Built with clang -fsanitize=fuzzer,address,undefined by
// tests/CMakeLists.txt; tests/fuzz/run_fuzz.sh runs it (a short smoke run is a ctest).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lib/checkpoint/safetensors.h"
#include "lib/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const hetu::checkpoint::SafetensorsHeader header = hetu::checkpoint::parse_safetensors(bytes, "fuzz.safetensors");
    uint64_t total = 0;
    for (const hetu::checkpoint::SafetensorsEntry& entry : header.entries) {
      const hetu::Tensor t = hetu::checkpoint::safetensors_tensor(bytes, header, entry);
      total += static_cast<uint64_t>(t.numel()) * hetu::dtype_size(t.dtype());
    }
    // Accepted files are tiled exactly by their tensors.
    if (header.data_start + total != size) __builtin_trap();
  } catch (const hetu::UsageError&) {
    return 0;  // a clear rejection is the expected outcome for most inputs
  }
  return 0;
}
