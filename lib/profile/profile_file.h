// The profile file `hetu profile` writes and `hetu plan --profile` (and `[parallel] auto`)
// reads. Per device type, tp degree and micro-batch size, measured times of one micro-batch
// of the job's model on one device (one layer's forward and backward, the embedding's and the
// LM head's with the loss; at tp > 1 the times of one rank of a tp group, its collectives
// included), the activation bytes kept per micro-batch and the AdamW step; and links: either
// measured between named nodes (p2p or all_reduce, within one node or between nodes: a fitted
// bandwidth and latency) or, for a device type's nodes, a bandwidth curve (converted GPU
// profiles: scripts/sailor_to_hetu.py). Keys added after the first version are optional, so
// older files still read; optional keys are written only when set.
//
//   [[profile]]
//   device_type = "cpu-slow"   tp = 1   micro_batch = 4   seq_len = 128   precision = "fp32"
//   layer_forward_s = 0.004    layer_backward_s = 0.008   ...   layer_activation_bytes = 2.1e6
//   optimizer_s = 0.002        optimizer_params = 830000   spread = 0.012
//   [[link]]
//   kind = "p2p"   scope = "between"   hosts = ["fast", "slow"]   ranks = 2   gbps = 0.98   latency_us = 212
//   [[link]]
//   scope = "between"   device_type = "GH-96"   bandwidth_gbs_poly = [-0.166, 2.79, 11.7]   max_bytes_per_s = 2.29e10
//   [[link]]   (per pair of types and GPUs taking part on each node)
//   scope = "between"   device_type = "RTX-2080"   gpus = 8   peer_type = "Titan-RTX"   peer_gpus = 8   bandwidth_gbs_poly = [...]
#pragma once

#include <string>
#include <vector>

namespace hetu::profile {

struct DeviceTypeProfile {
  std::string device_type;
  int64_t tp = 1;            // times are one rank's of a tp group of this size
  int64_t micro_batch = 1;
  int64_t seq_len = 1;
  std::string precision = "fp32";
  int64_t ranks = 1;         // ranks whose measurements were averaged (1 in one process)
  double layer_forward_s = 0, layer_backward_s = 0;
  double embed_forward_s = 0, embed_backward_s = 0;
  double head_forward_s = 0, head_backward_s = 0;   // final norm, LM head and loss
  // Optional (0: not measured). Bytes per device of the entry's tp group, at its micro-batch.
  double layer_activation_bytes = 0, embed_activation_bytes = 0, head_activation_bytes = 0;
  double head_workspace_bytes = 0;  // the LM head's backward beyond what it keeps (0: hetu's fused head, estimated)
  double reserved_bytes = 0;        // device memory held outside the model's tensors
  // One AdamW step over optimizer_params parameters; optimizer_params 0: optimizer_s is the
  // whole model's step on one device of the entry's tp group.
  double optimizer_s = 0;
  double optimizer_params = 0;
  // How much the profile's windows disagreed (lib/profile/profile_measure.h, PieceTimes::spread; the
  // mean over the ranks): above a few percent the machine was busy while it measured, and
  // predictions built on the entry are that uncertain.
  double spread = 0;
};

// A link the profile knows: measured between `hosts` (a fitted gbps and latency), or, with
// `device_type` and no hosts, a bandwidth curve for that type's nodes (lib/plan/link.h
// BandwidthCurve: GB/s as a polynomial in log2 of the message's MB, capped).
struct LinkProfile {
  std::string kind = "p2p";          // p2p | all_reduce
  std::string scope = "between";     // within (one node's ranks) | between (nodes)
  std::vector<std::string> hosts;    // p2p: the two nodes (one for within); all_reduce: the nodes taking part
  std::string device_type;           // a curve for every link of this type's nodes (hosts empty)
  // A curve's scope in a mixed cluster (0 / empty: any): how many GPUs of the node take part at
  // once (the curve is their link's whole bandwidth, shared by them), and between nodes the
  // other node's type and its GPUs taking part (Sailor's fits: per type pair and GPU count).
  int64_t gpus = 0;
  std::string peer_type;
  int64_t peer_gpus = 0;
  int64_t ranks = 2;
  double gbps = 0;                   // per message / ring step; 0: too fast to tell (or a curve)
  double latency_us = 0;
  std::vector<double> bandwidth_gbs_poly;  // the curve; empty: gbps
  double max_bytes_per_s = 0;              // the curve's cap
};

struct Profile {
  std::vector<DeviceTypeProfile> devices;
  std::vector<LinkProfile> links;
  Profile(std::vector<DeviceTypeProfile> d = {}, std::vector<LinkProfile> l = {})  // NOLINT: implicit on purpose
      : devices(std::move(d)), links(std::move(l)) {}
  bool empty() const { return devices.empty() && links.empty(); }
};

std::string to_toml(const Profile& profile, const std::string& header);
// Throws UsageError naming the file and key on a bad file.
Profile read_profile_file(const std::string& path);
// The same from text (`where` names it in errors).
Profile read_profile_text(const std::string& text, const std::string& where);

}  // namespace hetu::profile
