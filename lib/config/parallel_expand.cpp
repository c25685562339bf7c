// Expands the homogeneous shorthand (dp, tp, pp, order) into explicit replica -> stage ->
// device groups, so the rest of hetu sees one representation.
//
// Devices are the shorthand's `devices`, or else the cluster's in node order then index order. `order` names the mesh axes
// outermost first: with "dp-pp-tp" (the default) device i has tp rank i % tp, so the tp
// ranks of a stage are adjacent and share a node. Layers split as evenly as possible; the
// first layers % pp stages take one extra layer.
#include <algorithm>
#include <array>

#include "lib/config/config_internal.h"
#include "lib/util/strings.h"

namespace hetu::config {
namespace {

enum Axis { kDp = 0, kPp = 1, kTp = 2 };

std::array<Axis, 3> parse_order(const std::string& order, const SourceMap& sources, const std::string& table) {
  std::vector<std::string_view> names = split(order, '-');
  std::array<Axis, 3> axes{};
  std::array<bool, 3> seen{};
  bool ok = names.size() == 3;
  for (size_t i = 0; ok && i < 3; ++i) {
    std::string_view name = trim(names[i]);
    int axis = name == "dp" ? kDp : name == "pp" ? kPp : name == "tp" ? kTp : -1;
    ok = axis >= 0 && !seen[static_cast<size_t>(axis)];
    if (ok) {
      seen[static_cast<size_t>(axis)] = true;
      axes[i] = static_cast<Axis>(axis);
    }
  }
  if (!ok) {
    config_error(sources, table + ".order",
                 "\"" + order + "\" must name dp, pp and tp once each, outermost first, e.g. \"dp-pp-tp\"");
  }
  return axes;
}

}  // namespace

std::vector<ReplicaSection> expand_shorthand(const ParallelShorthand& s, const JobConfig& config,
                                             const SourceMap& sources, const std::string& table) {
  std::vector<DeviceId> devices = s.devices;
  if (devices.empty()) {
    for (const NodeSection& node : config.cluster.nodes) {
      for (int64_t i = 0; i < node.count; ++i) devices.push_back({node.host, i});
    }
  }
  const int64_t total = s.dp * s.tp * s.pp;
  if (total != static_cast<int64_t>(devices.size())) {
    config_error(sources, s.devices.empty() ? table : table + ".devices",
                 "dp*tp*pp = " + std::to_string(s.dp) + "*" + std::to_string(s.tp) + "*" +
                     std::to_string(s.pp) + " = " + std::to_string(total) + " devices, but " +
                     (s.devices.empty() ? "[cluster] has " : "devices names ") + std::to_string(devices.size()));
  }
  if (s.pp > config.model.layers) {
    config_error(sources, table + ".pp",
                 "pp = " + std::to_string(s.pp) + " stages for only " +
                     std::to_string(config.model.layers) + " layers (model.layers)");
  }
  const std::array<Axis, 3> axes = parse_order(s.order, sources, table);
  const std::array<int64_t, 3> size = {s.dp, s.pp, s.tp};

  std::vector<ReplicaSection> replicas(static_cast<size_t>(s.dp));
  const int64_t base = config.model.layers / s.pp;
  const int64_t extra = config.model.layers % s.pp;
  for (int64_t d = 0; d < s.dp; ++d) {
    ReplicaSection& replica = replicas[static_cast<size_t>(d)];
    replica.micro_batch = config.training.micro_batch;
    int64_t next_layer = 0;
    for (int64_t p = 0; p < s.pp; ++p) {
      StageSection stage;
      const int64_t count = base + (p < extra ? 1 : 0);
      stage.layers = {next_layer, next_layer + count - 1};
      next_layer += count;
      for (int64_t t = 0; t < s.tp; ++t) {
        const std::array<int64_t, 3> coord = {d, p, t};
        int64_t linear = 0;
        for (Axis axis : axes) linear = linear * size[axis] + coord[axis];
        stage.devices.push_back(devices[static_cast<size_t>(linear)]);
      }
      replica.stages.push_back(std::move(stage));
    }
  }
  return replicas;
}

}  // namespace hetu::config
