// Parsers for the two small languages inside the job file's [parallel] groups:
//   device lists  "gpu-a:0-3,5"            -> gpu-a:0 gpu-a:1 gpu-a:2 gpu-a:3 gpu-a:5
//                 "gpu-a:0-1; gpu-b:0-1"   -> devices on two nodes (';' separates hosts)
//   layer ranges  "0-6" (inclusive), "7" (one layer)
// Both throw hetu::UsageError with a message that quotes the input; callers prefix the key.
#pragma once

#include <string_view>
#include <vector>

#include "lib/config/job_config.h"

namespace hetu::config {

std::vector<DeviceId> parse_device_list(std::string_view text);
LayerRange parse_layer_range(std::string_view text);

// Inverse of parse_device_list, compressing runs: {a:0,a:1,a:2,a:5} -> "a:0-2,5".
std::string format_device_list(const std::vector<DeviceId>& devices);
std::string format_layer_range(const LayerRange& range);

}  // namespace hetu::config
