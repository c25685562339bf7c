// The measured link curve a profile has for a path between devices (see Note [Link sharing]):
// between two nodes, by the pair of their device types and how many GPUs of each take part at
// once; within a node, by its type and how many of its GPUs take part. Curves that leave the
// pair or the counts open (a profile of one device type, older files) match any.
//
//   const LinkProfile* l = profiled_curve(profile, "between", {"RTX-2080", 8}, {"Titan-RTX", 8});
//   Link link = curve_link(*l);  link.shared_by = 8;   // eight flows on the 8-GPU curve
#pragma once

#include <cstdint>
#include <string>

#include "lib/plan/link.h"
#include "lib/profile/profile_file.h"

namespace hetu::plan {

struct LinkEnd {
  std::string type;   // the node's device type
  int64_t gpus = 1;   // its GPUs taking part at once
};

// The best-matching curve of `scope` ("within": `to` is ignored), or nullptr. Between nodes a
// curve matches its ends in either order. Preference: the pair named over a curve with no
// peer type; then the GPU counts, each the one stated or else the largest below it (else the
// smallest above); of equal matches (the two ends' own curves, the two directions of a pair)
// the slower.
const profile::LinkProfile* profiled_curve(const profile::Profile& profile, const char* scope, const LinkEnd& from,
                                           const LinkEnd& to);

// The curve (or fitted gbps) as a Link, shared by one transfer.
Link curve_link(const profile::LinkProfile& l);

}  // namespace hetu::plan
