// CommPlan: printing, device lists and communication volume of ops.
#include "lib/hspmd/comm_plan.h"

#include <fmt/core.h>

#include <algorithm>

#include "lib/util/overloaded.h"

namespace hetu {
namespace {

std::string devices_str(const std::vector<DeviceId>& devices) { return DeviceGroup(devices).to_string(); }

std::string boxes_str(const std::vector<Box>& boxes) {
  std::string out;
  for (const Box& b : boxes) out += (out.empty() ? "" : " ") + b.to_string();
  return out;
}

}  // namespace

std::string op_name(const CommOp& op) {
  return std::visit(Overloaded{[](const CopyOp&) { return "copy"; },
                               [](const AllReduceOp&) { return "all_reduce"; },
                               [](const AllGatherOp&) { return "all_gather"; },
                               [](const ReduceScatterOp&) { return "reduce_scatter"; },
                               [](const AllToAllOp&) { return "all_to_all"; },
                               [](const SendRecvOp&) { return "send_recv"; }},
                    op);
}

std::string to_string(const CommOp& op) {
  return std::visit(
      Overloaded{
          [](const CopyOp& o) { return fmt::format("copy {} {}", o.device, o.box.to_string()); },
          [](const AllReduceOp& o) { return fmt::format("all_reduce {} {}", devices_str(o.devices), o.box.to_string()); },
          [](const AllGatherOp& o) { return fmt::format("all_gather {} {}", devices_str(o.devices), boxes_str(o.boxes)); },
          [](const ReduceScatterOp& o) {
            return fmt::format("reduce_scatter {} {} -> {}", devices_str(o.devices), o.box.to_string(),
                               boxes_str(o.boxes));
          },
          [](const AllToAllOp& o) {
            std::string out = "all_to_all " + devices_str(o.devices);
            for (const auto& row : o.blocks) out += " (" + boxes_str(row) + ")";
            return out;
          },
          [](const SendRecvOp& o) {
            std::string out = o.accumulate ? "send_recv (accumulate)" : "send_recv";
            for (const Transfer& t : o.transfers) out += fmt::format(" {}->{} {}", t.src, t.dst, t.box.to_string());
            return out;
          }},
      op);
}

std::vector<DeviceId> op_devices(const CommOp& op) {
  return std::visit(Overloaded{[](const CopyOp& o) { return std::vector<DeviceId>{o.device}; },
                               [](const SendRecvOp& o) {
                                 std::vector<DeviceId> out;
                                 for (const Transfer& t : o.transfers)
                                   for (DeviceId d : {t.src, t.dst})
                                     if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
                                 return out;
                               },
                               [](const auto& o) { return o.devices; }},
                    op);
}

std::vector<std::string> CommPlan::step_names() const {
  std::vector<std::string> names;
  for (const CommStep& s : steps) names.push_back(s.name);
  return names;
}

std::string CommPlan::to_string() const {
  std::string out = fmt::format("plan {} for shape {}\n", transition, shape_str(global_shape));
  for (const CommStep& s : steps) {
    out += "  step " + s.name + "\n";
    for (const CommOp& op : s.ops) out += "    " + hetu::to_string(op) + "\n";
  }
  return out;
}

int64_t comm_volume(const CommStep& step) {
  int64_t total = 0;
  for (const CommOp& op : step.ops) {
    const int64_t n = static_cast<int64_t>(op_devices(op).size());
    total += std::visit(Overloaded{[](const CopyOp&) -> int64_t { return 0; },
                                   [&](const AllReduceOp& o) { return 2 * (n - 1) * o.box.numel(); },
                                   [&](const AllGatherOp& o) {
                                     int64_t sum = 0;
                                     for (const Box& b : o.boxes) sum += b.numel();
                                     return (n - 1) * sum;
                                   },
                                   [&](const ReduceScatterOp& o) { return (n - 1) * o.box.numel(); },
                                   [](const AllToAllOp& o) {
                                     int64_t sum = 0;
                                     for (size_t i = 0; i < o.blocks.size(); ++i)
                                       for (size_t j = 0; j < o.blocks[i].size(); ++j)
                                         if (i != j) sum += o.blocks[i][j].numel();
                                     return sum;
                                   },
                                   [](const SendRecvOp& o) {
                                     int64_t sum = 0;
                                     for (const Transfer& t : o.transfers)
                                       if (t.src != t.dst) sum += t.box.numel();
                                     return sum;
                                   }},
                        op);
  }
  return total;
}

int64_t comm_volume(const CommPlan& plan) {
  int64_t total = 0;
  for (const CommStep& s : plan.steps) total += comm_volume(s);
  return total;
}

}  // namespace hetu
