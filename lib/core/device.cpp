// Device names.
#include "lib/core/device.h"

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu {

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.rfind("cuda:", 0) == 0) {
    std::optional<int64_t> index = parse_int64(text.substr(5));
    HT_USAGE_CHECK(index && *index >= 0 && *index < 1024, "bad device \"{}\" (expected cpu or cuda:N)", text);
    return cuda(static_cast<int>(*index));
  }
  HT_USAGE_ERROR("bad device \"{}\" (expected cpu or cuda:N)", text);
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

}  // namespace hetu
