// job_without_device (launch_job.h).
#include "app/launch_job.h"

#include <algorithm>

#include "lib/util/error.h"

namespace hetu::app {

config::JobConfig job_without_device(const config::JobConfig& c, int64_t rank, const std::string& profile) {
  if (!c.switches.empty() || !c.strategies.empty()) {
    HT_USAGE_ERROR("{}: hetu launch re-plans a job for the devices left after a failure; [[parallel.strategy]] and "
                   "[[parallel.switch]] name devices, so they cannot be used under it", c.source);
  }
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
  if (next.parallel.profile.empty()) next.parallel.profile = profile;
  next.checkpoint.resume = "auto";
  return next;
}

std::vector<std::string> rank_hosts(const config::JobConfig& c) {
  const bool local = std::all_of(c.cluster.nodes.begin(), c.cluster.nodes.end(),
                                 [](const config::NodeSection& n) { return n.host == "localhost"; });
  if (c.cluster.rehearse || local) return {};
  std::vector<std::string> hosts;
  for (const config::NodeSection& n : c.cluster.nodes) hosts.insert(hosts.end(), static_cast<size_t>(n.count), n.host);
  return hosts;
}

}  // namespace hetu::app
