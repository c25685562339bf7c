// The CPU allocator's memory cap (a device's memory_gib, enforced on CPUs): tensors within it
// allocate; one that would pass it is refused with an out-of-memory error naming the device;
// freeing makes room again; usage and peak are counted in 64-byte-aligned bytes.
#include <catch2/catch.hpp>

#include "lib/core/storage.h"
#include "lib/core/tensor.h"

using namespace hetu;

TEST_CASE("cpu memory limit: an allocation past the cap is refused, naming the device", "[storage]") {
  const size_t base = cpu_memory_usage().in_use;
  const size_t mib = size_t{1} << 20;
  set_cpu_memory_limit(base + mib, "device slow:0 (cpu-slow, memory_gib = 0.001)");
  {
    Tensor a = zeros({96 * 1024});  // 384 KiB
    Tensor b = zeros({96 * 1024});  // 768 KiB in use
    CHECK(cpu_memory_usage().in_use == base + 2 * 384 * 1024);
    CHECK_THROWS_WITH(zeros({96 * 1024}), Catch::Contains("out of memory on device slow:0 (cpu-slow") &&
                                              Catch::Contains("limit"));
    CHECK(cpu_memory_usage().in_use == base + 2 * 384 * 1024);  // the refused block is not counted
    b = Tensor();
    Tensor c = zeros({96 * 1024});  // fits again once b is freed
    CHECK(cpu_memory_usage().peak == base + 2 * 384 * 1024);
    CHECK(cpu_memory_usage().limit == base + mib);
  }
  CHECK(cpu_memory_usage().in_use == base);
  set_cpu_memory_limit(0, "");
  Tensor big = zeros({1024 * 1024});  // 4 MiB: no cap
  CHECK(cpu_memory_usage().in_use == base + 4 * mib);
}

TEST_CASE("cpu memory accounting rounds every block up to the alignment", "[storage]") {
  const size_t base = cpu_memory_usage().in_use;
  Tensor t = zeros({3});  // 12 bytes -> one 64-byte block
  CHECK(cpu_memory_usage().in_use == base + kCpuAlignment);
}
