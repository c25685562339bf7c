// Device-list and layer-range parsing/formatting for [parallel] groups.
#include "lib/config/device_spec.h"

#include <set>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::config {
namespace {

// "3" or "0-3" -> [first, last]; `what` names the thing for messages.
std::pair<int64_t, int64_t> parse_range(std::string_view piece, std::string_view text,
                                        std::string_view what) {
  piece = trim(piece);
  HT_USAGE_CHECK(!piece.empty(), "bad {} \"{}\": empty entry", what, text);
  size_t dash = piece.find('-', 1);
  std::optional<int64_t> first = parse_int64(trim(piece.substr(0, dash)));
  std::optional<int64_t> last =
      dash == std::string_view::npos ? first : parse_int64(trim(piece.substr(dash + 1)));
  HT_USAGE_CHECK(first && last, "bad {} \"{}\": \"{}\" is not an index or a range like 0-3",
                 what, text, piece);
  HT_USAGE_CHECK(*first >= 0, "bad {} \"{}\": negative index {}", what, text, *first);
  HT_USAGE_CHECK(*first <= *last, "bad {} \"{}\": range {}-{} is reversed", what, text, *first,
                 *last);
  return {*first, *last};
}

}  // namespace

std::vector<DeviceId> parse_device_list(std::string_view text) {
  HT_USAGE_CHECK(!trim(text).empty(), "bad device list \"\": expected host:indices, e.g. \"gpu-a:0-3\"");
  std::vector<DeviceId> devices;
  std::set<DeviceId> seen;
  for (std::string_view group : split(text, ';')) {
    group = trim(group);
    size_t colon = group.rfind(':');
    HT_USAGE_CHECK(colon != std::string_view::npos,
                   "bad device list \"{}\": \"{}\" lacks ':indices' (write host:0-3)", text, group);
    std::string host(trim(group.substr(0, colon)));
    HT_USAGE_CHECK(!host.empty(), "bad device list \"{}\": missing host name before ':'", text);
    for (std::string_view piece : split(group.substr(colon + 1), ',')) {
      auto [first, last] = parse_range(piece, text, "device list");
      for (int64_t index = first; index <= last; ++index) {
        DeviceId id{host, index};
        HT_USAGE_CHECK(seen.insert(id).second, "bad device list \"{}\": {} is listed twice", text,
                       id.str());
        devices.push_back(id);
      }
    }
  }
  return devices;
}

LayerRange parse_layer_range(std::string_view text) {
  HT_USAGE_CHECK(text.find(',') == std::string_view::npos,
                 "bad layer range \"{}\": a stage holds one contiguous range like \"0-6\"", text);
  auto [first, last] = parse_range(text, text, "layer range");
  return LayerRange{first, last};
}

std::string format_device_list(const std::vector<DeviceId>& devices) {
  std::string out;
  size_t i = 0;
  while (i < devices.size()) {
    const std::string& host = devices[i].host;
    if (!out.empty()) out += "; ";
    out += host + ":";
    bool first_piece = true;
    while (i < devices.size() && devices[i].host == host) {
      size_t j = i;
      while (j + 1 < devices.size() && devices[j + 1].host == host &&
             devices[j + 1].index == devices[j].index + 1) {
        ++j;
      }
      if (!first_piece) out += ",";
      out += std::to_string(devices[i].index);
      if (j > i) out += "-" + std::to_string(devices[j].index);
      first_piece = false;
      i = j + 1;
    }
  }
  return out;
}

std::string format_layer_range(const LayerRange& range) {
  if (range.first == range.last) return std::to_string(range.first);
  return std::to_string(range.first) + "-" + std::to_string(range.last);
}

}  // namespace hetu::config
