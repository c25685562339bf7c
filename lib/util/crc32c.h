// CRC-32C (Castagnoli; crc32c("123456789") == 0xE3069283), chainable: pass the previous
// result as `crc` to continue over more bytes. Uses SSE4.2 where available.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hetu {

uint32_t crc32c(const void* data, size_t nbytes, uint32_t crc = 0);

namespace detail {
uint32_t crc32c_portable(const void* data, size_t nbytes, uint32_t crc = 0);  // table-driven, for tests
}  // namespace detail

}  // namespace hetu
