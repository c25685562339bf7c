// The reference executor: CommPlan ops applied to std::vector<double> buffers, element by
// element, with every read and write checked against the device's box.
#include "lib/hspmd/plan_simulator.h"

#include <fmt/core.h>

#include <cmath>
#include <functional>

#include "lib/hspmd/geometry.h"
#include "lib/util/error.h"
#include "lib/util/overloaded.h"

namespace hetu {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double small_integer(uint64_t key) { return static_cast<double>(static_cast<int64_t>(mix(key) % 17) - 8); }

// Calls f(coord) for every element of `region`, row-major.
void for_each_element(const Box& region, const std::function<void(const Shape&)>& f) {
  if (region.empty()) return;
  Shape coord = region.offset;
  const size_t rank = coord.size();
  while (true) {
    f(coord);
    size_t d = rank;
    while (d > 0) {
      --d;
      if (++coord[d] < region.offset[d] + region.size[d]) break;
      coord[d] = region.offset[d];
      if (d == 0) return;
    }
    if (rank == 0) return;
  }
}

int64_t index_in(const Box& box, const Shape& coord) {
  int64_t index = 0;
  for (size_t d = 0; d < coord.size(); ++d) index = index * box.size[d] + (coord[d] - box.offset[d]);
  return index;
}

struct NewBuffers {
  DeviceBuffers buffers;
  std::map<DeviceId, std::vector<int>> writes;
};

const DeviceBuffer& old_buffer(const DeviceBuffers& old, DeviceId d, const Box& box, const CommOp& op) {
  auto it = old.find(d);
  HT_CHECK(it != old.end(), "simulate: {} reads device {}, which holds nothing", to_string(op), d);
  HT_CHECK(it->second.shard.box.contains(box), "simulate: {} reads {} on device {}, which holds {}", to_string(op),
           box.to_string(), d, it->second.shard.box.to_string());
  return it->second;
}

double read(const DeviceBuffer& b, const Shape& coord) {
  return b.values[static_cast<size_t>(index_in(b.shard.box, coord))];
}

void check_writable(NewBuffers& out, DeviceId d, const Box& box, const CommOp& op) {
  auto it = out.buffers.find(d);
  HT_CHECK(it != out.buffers.end(), "simulate: {} writes device {}, which holds nothing after the step",
           to_string(op), d);
  HT_CHECK(it->second.shard.box.contains(box), "simulate: {} writes {} on device {}, which holds {}", to_string(op),
           box.to_string(), d, it->second.shard.box.to_string());
}

void write(NewBuffers& out, DeviceId d, const Shape& coord, double value, bool accumulate, const CommOp& op) {
  DeviceBuffer& b = out.buffers.at(d);
  const size_t i = static_cast<size_t>(index_in(b.shard.box, coord));
  int& count = out.writes.at(d)[i];
  if (accumulate) {
    b.values[i] += value;
  } else {
    HT_CHECK(count == 0 || b.values[i] == value, "simulate: {} overwrites element {} on device {}: {} vs {}",
             to_string(op), shape_str(coord), d, b.values[i], value);
    b.values[i] = value;
  }
  ++count;
}

// new[box] on `to` = sum over `from` of old[box] (one source: a copy).
void reduce_into(const DeviceBuffers& old, NewBuffers& out, const std::vector<DeviceId>& from,
                 const std::vector<DeviceId>& to, const Box& box, bool accumulate, const CommOp& op) {
  std::vector<const DeviceBuffer*> sources;
  for (DeviceId d : from) sources.push_back(&old_buffer(old, d, box, op));
  for (DeviceId d : to) check_writable(out, d, box, op);
  for_each_element(box, [&](const Shape& coord) {
    double sum = 0;
    for (const DeviceBuffer* s : sources) sum += read(*s, coord);
    for (DeviceId d : to) write(out, d, coord, sum, accumulate, op);
  });
}

void apply(const CommOp& op, const DeviceBuffers& old, NewBuffers& out) {
  auto copy = [&](DeviceId from, const std::vector<DeviceId>& to, const Box& box) {
    reduce_into(old, out, {from}, to, box, false, op);
  };
  std::visit(Overloaded{
                 [&](const CopyOp& o) { copy(o.device, {o.device}, o.box); },
                 [&](const AllReduceOp& o) { reduce_into(old, out, o.devices, o.devices, o.box, false, op); },
                 [&](const AllGatherOp& o) {
                   HT_CHECK(o.boxes.size() == o.devices.size(), "simulate: {} needs one box per device", to_string(op));
                   for (size_t i = 0; i < o.devices.size(); ++i) copy(o.devices[i], o.devices, o.boxes[i]);
                 },
                 [&](const ReduceScatterOp& o) {
                   HT_CHECK(o.boxes.size() == o.devices.size() && tiles(o.boxes, o.box),
                            "simulate: {}: one piece per device, tiling the box", to_string(op));
                   for (DeviceId d : o.devices) old_buffer(old, d, o.box, op);
                   for (size_t i = 0; i < o.devices.size(); ++i)
                     reduce_into(old, out, o.devices, {o.devices[i]}, o.boxes[i], false, op);
                 },
                 [&](const AllToAllOp& o) {
                   HT_CHECK(o.blocks.size() == o.devices.size(), "simulate: {} needs one row per device", to_string(op));
                   for (size_t i = 0; i < o.devices.size(); ++i) {
                     HT_CHECK(o.blocks[i].size() == o.devices.size(), "simulate: {} needs one block per pair",
                              to_string(op));
                     for (size_t j = 0; j < o.devices.size(); ++j) copy(o.devices[i], {o.devices[j]}, o.blocks[i][j]);
                   }
                 },
                 [&](const SendRecvOp& o) {
                   for (const Transfer& t : o.transfers)
                     reduce_into(old, out, {t.src}, {t.dst}, t.box, o.accumulate, op);
                 }},
             op);
}

DeviceBuffers execute_step(const CommStep& step, const DeviceBuffers& old) {
  NewBuffers out;
  for (const DeviceShard& s : step.after) {
    HT_CHECK(!out.buffers.count(s.device), "simulate: step {} lists device {} twice", step.name, s.device);
    const size_t n = static_cast<size_t>(s.shard.box.numel());
    out.buffers[s.device] = DeviceBuffer{s.shard, std::vector<double>(n, 0.0)};
    out.writes[s.device] = std::vector<int>(n, 0);
  }
  for (const CommOp& op : step.ops) apply(op, old, out);
  for (const auto& [device, buffer] : out.buffers) {
    if (buffer.shard.is_partial()) continue;  // unwritten parts of a partial sum are zeros
    const std::vector<int>& writes = out.writes.at(device);
    for (size_t i = 0; i < writes.size(); ++i)
      HT_CHECK(writes[i] > 0, "simulate: step {} leaves element {} of device {} ({}) unwritten", step.name, i,
               device, buffer.shard.to_string());
  }
  return std::move(out.buffers);
}

}  // namespace

std::vector<double> random_integers(int64_t count, uint64_t seed) {
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = small_integer(mix(seed) + static_cast<uint64_t>(i));
  return out;
}

DeviceBuffers make_buffers(const Union& annotation, const Shape& shape, const std::vector<double>& global,
                           uint64_t seed) {
  HT_CHECK(static_cast<int64_t>(global.size()) == shape_numel(shape), "make_buffers: {} values for shape {}",
           global.size(), shape_str(shape));
  const Box whole = full_box(shape);
  auto part_value = [&](const Shard& s, int64_t part, int64_t element) {
    const uint64_t key = mix(mix(mix(seed) + static_cast<uint64_t>(s.partial_scope)) + static_cast<uint64_t>(part));
    return small_integer(key + static_cast<uint64_t>(element));
  };
  DeviceBuffers out;
  for (const DeviceShard& ds : shards(annotation, shape)) {
    DeviceBuffer b{ds.shard, {}};
    for_each_element(ds.shard.box, [&](const Shape& coord) {
      const int64_t e = index_in(whole, coord);
      double v = global[static_cast<size_t>(e)];
      if (ds.shard.is_partial()) {
        if (ds.shard.partial_index + 1 < ds.shard.partial_count) {
          v = part_value(ds.shard, ds.shard.partial_index, e);
        } else {
          for (int64_t p = 0; p + 1 < ds.shard.partial_count; ++p) v -= part_value(ds.shard, p, e);
        }
      }
      b.values.push_back(v);
    });
    out[ds.device] = std::move(b);
  }
  return out;
}

DeviceBuffers execute(const CommPlan& plan, const DeviceBuffers& buffers) {
  DeviceBuffers current = buffers;
  for (const CommStep& step : plan.steps) current = execute_step(step, current);
  return current;
}

DeviceBuffers simulate(const CommPlan& plan, const Union& src, const Union& dst, const std::vector<double>& global,
                       uint64_t seed) {
  HT_CHECK(!plan.steps.empty(), "simulate: the plan has no steps");
  HT_CHECK(plan.steps.back().after == shards(dst, plan.global_shape),
           "simulate: the plan does not end in the destination layout {}", dst.to_string());
  return execute(plan, make_buffers(src, plan.global_shape, global, seed));
}

std::string check_buffers(const Union& annotation, const Shape& shape, const std::vector<double>& global,
                          const DeviceBuffers& buffers) {
  const Box whole = full_box(shape);
  const std::vector<DeviceShard> expected = shards(annotation, shape);
  if (buffers.size() != expected.size())
    return fmt::format("{} buffers for {} devices", buffers.size(), expected.size());
  // Per partial scope, per part: the part's values over the whole tensor (NaN: not seen).
  std::map<int64_t, std::vector<std::vector<double>>> parts;
  std::string problem;
  for (const DeviceShard& ds : expected) {
    auto it = buffers.find(ds.device);
    if (it == buffers.end()) return fmt::format("device {} has no buffer", ds.device);
    const DeviceBuffer& b = it->second;
    if (!(b.shard == ds.shard))
      return fmt::format("device {} holds {}, expected {}", ds.device, b.shard.to_string(), ds.shard.to_string());
    if (ds.shard.is_partial() && !parts.count(ds.shard.partial_scope))
      parts[ds.shard.partial_scope].assign(static_cast<size_t>(ds.shard.partial_count),
                                           std::vector<double>(global.size(), std::nan("")));
    for_each_element(ds.shard.box, [&](const Shape& coord) {
      const size_t e = static_cast<size_t>(index_in(whole, coord));
      const double v = read(b, coord);
      if (!problem.empty()) return;
      if (!ds.shard.is_partial()) {
        if (v != global[e])
          problem = fmt::format("device {} element {}: {} expected {}", ds.device, shape_str(coord), v, global[e]);
        return;
      }
      double& seen = parts[ds.shard.partial_scope][static_cast<size_t>(ds.shard.partial_index)][e];
      if (!std::isnan(seen) && seen != v)
        problem = fmt::format("device {} element {}: part {} is {} on another copy, {} here", ds.device,
                              shape_str(coord), ds.shard.partial_index, seen, v);
      seen = v;
    });
    if (!problem.empty()) return problem;
  }
  for (const auto& [scope, values] : parts)
    for (size_t e = 0; e < global.size(); ++e) {
      double sum = 0;
      int64_t seen = 0;
      for (const std::vector<double>& part : values)
        if (!std::isnan(part[e])) {
          sum += part[e];
          ++seen;
        }
      if (seen == 0) continue;
      if (seen != static_cast<int64_t>(values.size()) || sum != global[e])
        return fmt::format("scope {} element {}: {} of {} parts sum to {}, expected {}", scope, e, seen,
                           values.size(), sum, global[e]);
    }
  return "";
}

}  // namespace hetu
