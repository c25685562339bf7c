// Link transfer times. See Note [Link sharing].
#include "lib/plan/link.h"

#include <algorithm>
#include <cmath>

#include "lib/util/error.h"

namespace hetu::plan {

// Note [Link sharing]: between nodes, the transfers a node makes at the same moment share its
// link: a stage edge of tp ranks on one node sends tp duplicated activations to the next
// stage's node (each tp rank holds the whole activation and sends it to its counterpart), and
// the gradient sync runs one ring per tp rank. A profiled inter-node curve is the bandwidth of
// one node's link (Sailor's fit for one GPU per node); Sailor's fits for 2 and 4 GPUs per node,
// which grow nearly linearly, would price the GH200 jobs' 4-stage pipelines ~15% too fast
// (scripts/bench/plan_real.sh). Within a node every pair of devices has its own link.
double BandwidthCurve::bytes_per_s(double bytes) const {
  HT_USAGE_CHECK(!gbs_poly.empty(), "bandwidth curve: no coefficients");
  double x = std::max(0.0, std::log2(std::max(bytes, 1.0) / 1e6));
  if (gbs_poly.size() == 3 && gbs_poly[0] < 0) x = std::min(x, std::max(0.0, -gbs_poly[1] / (2 * gbs_poly[0])));
  double gbs = 0;
  for (double c : gbs_poly) gbs = gbs * x + c;
  double bw = 1e9 * gbs;
  if (max_bytes_per_s > 0) bw = std::min(bw, max_bytes_per_s);
  HT_USAGE_CHECK(bw > 0, "bandwidth curve: no positive bandwidth for a message of {} bytes", bytes);
  return bw;
}

double Link::transfer_s(double bytes) const {
  const double shared = static_cast<double>(std::max<int64_t>(1, shared_by));
  if (!curve.empty()) return latency_s + shared * bytes / curve.bytes_per_s(bytes);
  return latency_s + (bytes_per_s > 0 ? shared * bytes / bytes_per_s : 0.0);
}

}  // namespace hetu::plan
