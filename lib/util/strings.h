// Small string helpers used when parsing user input (device lists, ranges, --set flags).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hetu {

std::string_view trim(std::string_view text);
// Splits on every occurrence of `sep`; empty pieces are kept ("a,,b" -> {"a", "", "b"}).
std::vector<std::string_view> split(std::string_view text, char sep);
// Parses a whole string as a base-10 integer; nullopt on any stray character or overflow.
std::optional<int64_t> parse_int64(std::string_view text);
std::string join(const std::vector<std::string>& parts, std::string_view sep);

}  // namespace hetu
