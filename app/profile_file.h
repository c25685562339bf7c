// The profile file `hetu profile` writes and `hetu plan --profile` reads: per device type,
// measured times of one micro-batch of the job's model (one layer's forward and backward,
// the embedding's and the LM head's with the loss), at the micro-batch and sequence length
// they were measured at.
//
//   [[profile]]
//   device_type = "cpu-slow"   micro_batch = 4   seq_len = 128   precision = "fp32"
//   layer_forward_s = 0.004    layer_backward_s = 0.008   ...
#pragma once

#include <string>
#include <vector>

namespace hetu::app {

struct DeviceTypeProfile {
  std::string device_type;
  int64_t micro_batch = 1;
  int64_t seq_len = 1;
  std::string precision = "fp32";
  double layer_forward_s = 0, layer_backward_s = 0;
  double embed_forward_s = 0, embed_backward_s = 0;
  double head_forward_s = 0, head_backward_s = 0;   // final norm, LM head and loss
};

std::string to_toml(const std::vector<DeviceTypeProfile>& profiles, const std::string& header);
// Throws UsageError naming the file and key on a bad file.
std::vector<DeviceTypeProfile> read_profile_file(const std::string& path);

}  // namespace hetu::app
