// hetu::Error: keeps the message and a repository-relative "file:line" of the throw site.
#include "lib/util/error.h"

#include <array>
#include <string_view>

namespace hetu {
namespace {

// __FILE__ is absolute in CMake builds; keep the part from the first top-level folder on.
std::string relative_source_path(const char* file) {
  std::string_view path(file);
  constexpr std::array<std::string_view, 4> kRoots = {"/lib/", "/app/", "/models/", "/tests/"};
  size_t best = std::string_view::npos;
  for (std::string_view root : kRoots) {
    size_t pos = path.rfind(root);
    if (pos != std::string_view::npos && (best == std::string_view::npos || pos > best)) best = pos;
  }
  return std::string(best == std::string_view::npos ? path : path.substr(best + 1));
}

}  // namespace

Error::Error(std::string message, const char* file, int line)
    : std::runtime_error(message),
      message_(std::move(message)),
      where_(relative_source_path(file) + ":" + std::to_string(line)) {}

namespace detail {
void throw_error(const char* file, int line, std::string message) {
  throw Error(std::move(message), file, line);
}
void throw_usage_error(const char* file, int line, std::string message) {
  throw UsageError(std::move(message), file, line);
}
}  // namespace detail

}  // namespace hetu
