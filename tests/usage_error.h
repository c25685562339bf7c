// The message of the UsageError a call throws, or "(no usage error)" when it returns: for tests
// that compare a whole error message with the one the user should see.
#pragma once

#include <functional>
#include <string>

#include "lib/util/error.h"

namespace hetu::test {

inline std::string usage_error_message(const std::function<void()>& body) {
  try {
    body();
  } catch (const hetu::UsageError& e) {
    return e.message();
  }
  return "(no usage error)";
}

}  // namespace hetu::test
