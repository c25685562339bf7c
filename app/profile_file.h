// The profile file `hetu profile` writes and `hetu plan --profile` reads: per device type,
// measured times of one micro-batch of the job's model (one layer's forward and backward,
// the embedding's and the LM head's with the loss), at the micro-batch and sequence length
// they were measured at.
//
//   [[profile]]
//   device_type = "cpu-slow"   micro_batch = 4   seq_len = 128   precision = "fp32"
//   layer_forward_s = 0.004    layer_backward_s = 0.008   ...
//
// Optional, for profiles measured on GPUs (scripts/sailor_to_hetu.py writes them): `tp = 4`
// (the times are per device of a tp group of 4, its tp collectives included; several entries
// per type, one per micro_batch and tp), `optimizer_s` (the whole model's step on one device),
// `{layer,embed,head}_activation_bytes` and `reserved_bytes` per device; and link curves:
//   [[link]]
//   scope = "inter_node"   device_type = "GH-96"   bandwidth_gbs_poly = [-0.166, 2.79, 11.7]
//   max_bytes_per_s = 2.29e10   latency_s = 0
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
  int64_t tp = 0;               // 0: measured on one device; N: per device of a tp group of N
  double optimizer_s = 0;       // the whole model's optimizer step on one device; 0: not measured
  double layer_activation_bytes = 0, embed_activation_bytes = 0, head_activation_bytes = 0;  // 0: not measured
  double head_workspace_bytes = 0;  // the LM head's backward beyond what it keeps (0: hetu's fused head, estimated)
  double reserved_bytes = 0;    // device memory held outside the model's tensors
};

// A measured bandwidth curve of a device type's links (lib/plan/link.h BandwidthCurve):
// scope "inter_node" (one node's link to another) or "intra_node" (between two devices of a node).
struct LinkProfile {
  std::string scope;
  std::string device_type;
  std::vector<double> bandwidth_gbs_poly;
  double max_bytes_per_s = 0;
  double latency_s = 0;
};

std::string to_toml(const std::vector<DeviceTypeProfile>& profiles, const std::string& header);
// Throws UsageError naming the file and key on a bad file.
std::vector<DeviceTypeProfile> read_profile_file(const std::string& path);
// The file's [[link]] tables (none: empty). Throws UsageError naming the file and key.
std::vector<LinkProfile> read_profile_links(const std::string& path);

}  // namespace hetu::app
