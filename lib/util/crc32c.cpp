// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): slicing-by-8 tables, and the SSE4.2
// crc32 instruction where the CPU has it. The checksum of every checkpoint dataset.
#include "lib/util/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace hetu {
namespace {

using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr CrcTables make_crc_tables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    t[0][i] = crc;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (size_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFFu];
  }
  return t;
}

constexpr CrcTables kCrcTables = make_crc_tables();

}  // namespace

namespace detail {

uint32_t crc32c_portable(const void* data, size_t nbytes, uint32_t crc) {
  const auto& t = kCrcTables;
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  while (nbytes >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    const uint32_t lo = static_cast<uint32_t>(word) ^ crc;
    const auto hi = static_cast<uint32_t>(word >> 32);
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][hi & 0xFF] ^
          t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    nbytes -= 8;
  }
  while (nbytes-- > 0) crc = t[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

}  // namespace detail

#if defined(__x86_64__)
namespace {
// The SSE4.2 crc32 instruction computes CRC-32C: about 8x the table-driven speed.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const void* data, size_t nbytes, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  for (; nbytes >= 8; p += 8, nbytes -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; nbytes > 0; ++p, --nbytes) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
}
}  // namespace
#endif

uint32_t crc32c(const void* data, size_t nbytes, uint32_t crc) {
#if defined(__x86_64__)
  static const bool has_sse42 = __builtin_cpu_supports("sse4.2");
  if (has_sse42) return crc32c_sse42(data, nbytes, crc);
#endif
  return detail::crc32c_portable(data, nbytes, crc);
}

}  // namespace hetu
