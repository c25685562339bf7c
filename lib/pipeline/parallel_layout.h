// ParallelLayout: the job's parallel structure as the runtime sees it, in device ids (world
// ranks): data-parallel replicas, each a pipeline of stages, each stage a tensor-parallel
// device group holding a range of layers. Replicas may differ in everything: stage count,
// layers per stage, tp per stage, batch share, micro-batch size and schedule.
//
//   ParallelLayout l;
//   l.global_batch = 8;
//   l.replicas = {{.stages = {{DeviceGroup({0}), 0, 1}, {DeviceGroup({1}), 2, 3}}, .batch = 2, .micro_batch = 1},
//                 {.stages = {{DeviceGroup({2, 3}), 0, 3}}, .batch_offset = 2, .batch = 6, .micro_batch = 2}};
//   l.locate(3)  ->  {replica 1, stage 0, tp index 1}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/autograd/recompute.h"
#include "lib/hspmd/device_group.h"
#include "lib/pipeline/pipeline_schedule.h"

namespace hetu::pipeline {

struct StageLayout {
  DeviceGroup devices;     // the tensor-parallel group, in tp order
  int64_t first_layer = 0;
  int64_t last_layer = 0;  // inclusive
  autograd::Recompute recompute = autograd::Recompute::none;  // what its blocks keep for backward
  int64_t tp() const { return devices.size(); }
};

struct ReplicaLayout {
  std::vector<StageLayout> stages;
  int64_t batch_offset = 0;  // first sequence of each global batch this replica reads
  int64_t batch = 1;         // sequences per optimizer step
  int64_t micro_batch = 1;   // sequences per micro-batch (divides batch)
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  int64_t micro_batches() const { return batch / micro_batch; }
};

struct Position {
  int64_t replica = 0;
  int64_t stage = 0;
  int64_t tp_index = 0;
  bool operator==(const Position&) const = default;
};

struct ParallelLayout {
  std::vector<ReplicaLayout> replicas;
  int64_t global_batch = 1;  // sequences per optimizer step, all replicas
  // 1: ZeRO-1, every parameter's optimizer state and f32 master weights split over its
  // holders (zero_state_placement, lib/hspmd/tensor_placement.h); 0: kept with the parameter.
  int64_t zero = 0;

  int64_t num_devices() const;
  // Where a device sits, or nullopt when no group names it.
  std::optional<Position> locate(DeviceId device) const;
  const StageLayout& stage(const Position& p) const;
  // Throws naming the problem: a device in two groups, a negative id, shares that do not
  // tile the global batch, a micro-batch that does not divide a share, empty stages.
  void validate() const;
  std::string to_string() const;  // one line per replica: "replica 0: {0,1} L0-1 | {2} L2-3; batch 2 (mb 1, 1f1b)"
};

}  // namespace hetu::pipeline
