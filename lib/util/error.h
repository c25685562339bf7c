// Errors for all of hetu: hetu::Error carries the message and the source file:line that
// raised it; hetu::UsageError marks bad user input (config, CLI flags, data files) so the CLI
// can exit with code 2 instead of 1. Library code throws, never calls exit().
//
//   HT_CHECK(a.dim() == 2, "matmul: expected a 2-D tensor, got {} dims", a.dim());
//   HT_USAGE_CHECK(steps > 0, "training.steps must be >= 1, got {}", steps);
#pragma once

#include <fmt/core.h>

#include <stdexcept>
#include <string>

namespace hetu {

class Error : public std::runtime_error {
 public:
  Error(std::string message, const char* file, int line);
  const std::string& message() const { return message_; }
  // "lib/core/tensor.cpp:42": the file relative to the repository root.
  const std::string& where() const { return where_; }

 private:
  std::string message_;
  std::string where_;
};

// Bad input from the user: the message alone must tell them what to fix.
class UsageError : public Error {
 public:
  using Error::Error;
};

namespace detail {
[[noreturn]] void throw_error(const char* file, int line, std::string message);
[[noreturn]] void throw_usage_error(const char* file, int line, std::string message);
}  // namespace detail

}  // namespace hetu

#define HT_THROW(...) ::hetu::detail::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
#define HT_USAGE_ERROR(...) \
  ::hetu::detail::throw_usage_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))

#define HT_CHECK(cond, ...)              \
  do {                                   \
    if (!(cond)) [[unlikely]] {          \
      HT_THROW(__VA_ARGS__);             \
    }                                    \
  } while (0)

#define HT_USAGE_CHECK(cond, ...)        \
  do {                                   \
    if (!(cond)) [[unlikely]] {          \
      HT_USAGE_ERROR(__VA_ARGS__);       \
    }                                    \
  } while (0)
