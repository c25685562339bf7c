// job_without_device, dropped_layout_note, rank_hosts and node_state_dir (launch_job.h).
#include "lib/launch/launch_job.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::launch {

config::JobConfig job_without_device(const config::JobConfig& c, int64_t rank, const std::string& profile) {
  config::JobConfig next = c;
  int64_t first = 0;  // the node's first device in node order
  bool removed = false;
  for (auto node = next.cluster.nodes.begin(); node != next.cluster.nodes.end(); ++node) {
    if (rank < first + node->count) {
      if (--node->count == 0) next.cluster.nodes.erase(node);
      removed = true;
      break;
    }
    first += node->count;
  }
  if (!removed) HT_USAGE_ERROR("{}: rank {} drives no device of the cluster ({} devices)", c.source, rank, first);
  next.parallel.auto_plan = true;
  next.parallel.replicas.clear();
  next.parallel.shorthand.reset();
  next.strategies.clear();  // they name devices; the survivors train the re-planned layout
  next.switches.clear();
  if (next.parallel.profile.empty()) next.parallel.profile = profile;
  next.checkpoint.resume = "auto";
  return next;
}

std::string dropped_layout_note(const config::JobConfig& c) {
  std::vector<std::string> parts;
  if (!c.strategies.empty()) {
    std::vector<std::string> names;
    for (const config::StrategySection& s : c.strategies) names.push_back(s.name);
    parts.push_back(fmt::format("the {} [[parallel.strategy]] ({})", names.size(), join(names, ", ")));
  }
  if (!c.switches.empty()) {
    std::vector<std::string> steps;
    for (const config::SwitchSection& s : c.switches) steps.push_back(fmt::format("after step {} to {}", s.at_step, s.strategy));
    parts.push_back(fmt::format("the [[parallel.switch]] list ({})", join(steps, ", ")));
  }
  return join(parts, " and ");
}

std::vector<std::string> rank_hosts(const config::JobConfig& c) {
  const bool local = std::all_of(c.cluster.nodes.begin(), c.cluster.nodes.end(),
                                 [](const config::NodeSection& n) { return n.host == "localhost"; });
  if (c.cluster.rehearse || local) return {};
  std::vector<std::string> hosts;
  for (const config::NodeSection& n : c.cluster.nodes) hosts.insert(hosts.end(), static_cast<size_t>(n.count), n.host);
  return hosts;
}

std::string finished_marker(const std::string& out_dir, const std::string& state_dir) {
  return out_dir + "/launch/" + std::filesystem::path(state_dir).lexically_normal().filename().string() + ".finished";
}

std::string node_state_dir(const config::JobConfig& c, int64_t rank, const std::string& state_dir) {
  if (!c.cluster.rehearse || state_dir.empty()) return state_dir;
  int64_t first = 0;  // the first rank of each node
  for (const config::NodeSection& n : c.cluster.nodes) {
    if (rank < first + n.count) {
      std::string host = n.host;
      for (char& ch : host) {
        if (std::isalnum(static_cast<unsigned char>(ch)) == 0 && ch != '-' && ch != '.') ch = '_';
      }
      const std::filesystem::path dir(state_dir);
      return (dir.parent_path() / ("node-" + host) / dir.filename()).string();
    }
    first += n.count;
  }
  HT_USAGE_ERROR("launch: rank {} drives no device of the cluster ({} devices)", rank, first);
}

}  // namespace hetu::launch
