// ParallelLayout queries and validation.
#include "lib/pipeline/parallel_layout.h"

#include <fmt/format.h>

#include <set>

#include "lib/util/error.h"

namespace hetu::pipeline {

int64_t ParallelLayout::num_devices() const {
  int64_t n = 0;
  for (const ReplicaLayout& r : replicas)
    for (const StageLayout& s : r.stages) n += s.tp();
  return n;
}

std::optional<Position> ParallelLayout::locate(DeviceId device) const {
  for (size_t r = 0; r < replicas.size(); ++r) {
    for (size_t s = 0; s < replicas[r].stages.size(); ++s) {
      if (auto index = replicas[r].stages[s].devices.index_of(device)) {
        return Position{static_cast<int64_t>(r), static_cast<int64_t>(s), *index};
      }
    }
  }
  return std::nullopt;
}

const StageLayout& ParallelLayout::stage(const Position& p) const {
  HT_CHECK(p.replica >= 0 && p.replica < static_cast<int64_t>(replicas.size()) && p.stage >= 0 &&
               p.stage < static_cast<int64_t>(replicas[static_cast<size_t>(p.replica)].stages.size()),
           "parallel layout: no replica {} stage {}", p.replica, p.stage);
  return replicas[static_cast<size_t>(p.replica)].stages[static_cast<size_t>(p.stage)];
}

void ParallelLayout::validate() const {
  HT_CHECK(!replicas.empty(), "parallel layout: no replicas");
  std::set<DeviceId> seen;
  int64_t next_offset = 0;
  for (size_t r = 0; r < replicas.size(); ++r) {
    const ReplicaLayout& replica = replicas[r];
    HT_CHECK(!replica.stages.empty(), "parallel layout: replica {} has no stages", r);
    HT_CHECK(replica.batch_offset == next_offset && replica.batch >= 1,
             "parallel layout: replica {} reads sequences [{}, {}) of each global batch; expected to start at {}", r,
             replica.batch_offset, replica.batch_offset + replica.batch, next_offset);
    HT_CHECK(replica.micro_batch >= 1 && replica.batch % replica.micro_batch == 0,
             "parallel layout: replica {}: micro-batch {} does not divide its batch {}", r, replica.micro_batch,
             replica.batch);
    next_offset += replica.batch;
    for (const StageLayout& s : replica.stages) {
      HT_CHECK(!s.devices.empty() && s.first_layer <= s.last_layer, "parallel layout: replica {} has an empty stage", r);
      for (DeviceId d : s.devices.devices()) {
        HT_CHECK(seen.insert(d).second, "parallel layout: device {} is in two groups", d);
      }
    }
  }
  HT_CHECK(next_offset == global_batch, "parallel layout: replica batches add up to {}, the global batch is {}",
           next_offset, global_batch);
  // A strategy may use a subset of the world (the other ranks wait idle).
  HT_CHECK(*seen.begin() >= 0, "parallel layout: device ids must be world ranks (>= 0), got {}", *seen.begin());
}

std::string ParallelLayout::to_string() const {
  std::string out;
  for (size_t r = 0; r < replicas.size(); ++r) {
    const ReplicaLayout& replica = replicas[r];
    out += fmt::format("replica {}: ", r);
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      const StageLayout& stage = replica.stages[s];
      out += fmt::format("{}{} L{}-{}", s > 0 ? " | " : "", stage.devices.to_string(), stage.first_layer, stage.last_layer);
    }
    out += fmt::format("; batch {} (mb {}, {})\n", replica.batch, replica.micro_batch, pipeline::to_string(replica.schedule));
  }
  return out;
}

}  // namespace hetu::pipeline
