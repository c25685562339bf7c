// CoalescedReshard: repartition plans grouped per peer, one flat message each way per pair.
#include "lib/hspmd/coalesced_reshard.h"

#include <algorithm>
#include <map>
#include <variant>

#include "lib/hspmd/box_view.h"
#include "lib/hspmd/plan_executor.h"
#include "lib/hspmd/planner.h"
#include "lib/ops/ops.h"
#include "lib/util/error.h"

namespace hetu {
namespace {

// The one plain exchange of a plan (one step, one send_recv that does not sum), or null.
const SendRecvOp* plain_exchange(const CommPlan& plan) {
  if (plan.steps.size() != 1 || plan.steps[0].ops.size() != 1) return nullptr;
  const auto* op = std::get_if<SendRecvOp>(&plan.steps[0].ops[0]);
  return op != nullptr && !op->accumulate ? op : nullptr;
}

// A rank's communicator calls and messages to other ranks in `plan`.
void count_plan(const CommPlan& plan, DeviceId rank, int64_t& calls, int64_t& messages) {
  for (const CommStep& step : plan.steps) {
    for (const CommOp& op : step.ops) {
      if (const auto* x = std::get_if<SendRecvOp>(&op)) {
        int64_t mine = 0;
        for (const Transfer& t : x->transfers) mine += t.src != t.dst && (t.src == rank || t.dst == rank) ? 1 : 0;
        calls += mine > 0 ? 1 : 0;
        messages += mine;
      } else if (!std::holds_alternative<CopyOp>(op)) {
        const std::vector<DeviceId> devices = op_devices(op);
        if (devices.size() > 1 && std::find(devices.begin(), devices.end(), rank) != devices.end()) {
          ++calls;
          ++messages;
        }
      }
    }
  }
}

}  // namespace

CoalescedReshard::CoalescedReshard(std::vector<ReshardItem> items, DeviceId rank, PlanCache& plans)
    : items_(std::move(items)) {
  std::map<DeviceId, Peer> sends, recvs;
  for (size_t i = 0; i < items_.size(); ++i) {
    const ReshardItem& item = items_[i];
    HT_CHECK(item.placement != nullptr, "coalesced reshard: item {} has no placement", i);
    const TensorPlacement& p = *item.placement;
    holds_src_.push_back(item.from.member_of(rank).has_value());
    holds_dst_.push_back(item.to.member_of(rank).has_value());
    src_box_.push_back(holds_src_.back() ? view_box(p, item.from, rank) : Box{});
    dst_box_.push_back(holds_dst_.back() ? view_box(p, item.to, rank) : Box{});
    local_.emplace_back();
    count_plan(plans.get(item.from, item.to, p.view), rank, per_item_calls_, per_item_messages_);
    const CommPlan repartition = plan_repartition(item.from, item.to, p.view);
    const SendRecvOp* exchange = plain_exchange(repartition);
    own_plan_.push_back(exchange == nullptr ? &plans.get(item.from, item.to, p.view) : nullptr);
    if (exchange == nullptr) {
      count_plan(*own_plan_.back(), rank, own_calls_, own_messages_);
      continue;
    }
    for (const Transfer& t : exchange->transfers) {
      if (t.box.empty()) continue;
      if (t.src == rank && t.dst == rank) {
        local_.back().push_back(t.box);
      } else if (t.src == rank) {
        Peer& peer = sends[t.dst];
        peer.rank = t.dst;
        peer.pieces.push_back({i, t.box});
        peer.elements += t.box.numel();
      } else if (t.dst == rank) {
        Peer& peer = recvs[t.src];
        peer.rank = t.src;
        peer.pieces.push_back({i, t.box});
        peer.elements += t.box.numel();
      }
    }
  }
  for (auto& [r, peer] : sends) send_peers_.push_back(std::move(peer));
  for (auto& [r, peer] : recvs) recv_peers_.push_back(std::move(peer));
}

int64_t CoalescedReshard::messages() const {
  return static_cast<int64_t>(send_peers_.size() + recv_peers_.size()) + own_messages_;
}

int64_t CoalescedReshard::calls() const { return (send_peers_.empty() && recv_peers_.empty() ? 0 : 1) + own_calls_; }

void CoalescedReshard::add_into(std::vector<Tensor> sources, const std::vector<Tensor>& targets, Communicator& comm,
                                DType dtype) const {
  move_into(std::move(sources), targets, comm, dtype, true);
}

void CoalescedReshard::write_into(std::vector<Tensor> sources, const std::vector<Tensor>& targets, Communicator& comm,
                                  DType dtype) const {
  move_into(std::move(sources), targets, comm, dtype, false);
}

void CoalescedReshard::move_into(std::vector<Tensor> sources, const std::vector<Tensor>& targets, Communicator& comm,
                                 DType dtype, bool accumulate) const {
  HT_CHECK(sources.size() == items_.size() && targets.size() == items_.size(),
           "coalesced reshard: {} sources and {} targets for {} items", sources.size(), targets.size(), items_.size());
  const Device device = comm.device();
  std::vector<Tensor> dst(items_.size());
  for (size_t i = 0; i < items_.size(); ++i) {
    const TensorPlacement& p = *items_[i].placement;
    HT_CHECK(holds_src_[i] == sources[i].defined() && holds_dst_[i] == targets[i].defined(),
             "coalesced reshard {}: rank {} passes {} source and {} target, but is {} in {} and {} in {}", p.name,
             comm.rank(), sources[i].defined() ? "a" : "no", targets[i].defined() ? "a" : "no",
             holds_src_[i] ? "" : "not", items_[i].from.to_string(), holds_dst_[i] ? "" : "not",
             items_[i].to.to_string());
    if (holds_src_[i]) {
      HT_CHECK(sources[i].numel() == src_box_[i].numel(), "coalesced reshard {}: {} elements for the box {}", p.name,
               sources[i].numel(), src_box_[i].to_string());
      sources[i] = sources[i].contiguous().to(dtype).to(device).view(src_box_[i].size);
    }
    if (holds_dst_[i]) {
      HT_CHECK(targets[i].is_contiguous() && targets[i].numel() == dst_box_[i].numel(),
               "coalesced reshard {}: the target is not a contiguous tensor of the box {}", p.name,
               dst_box_[i].to_string());
      dst[i] = targets[i].view(dst_box_[i].size);
    }
  }
  auto add = [accumulate](const Tensor& into, const Tensor& piece) {
    into.copy_from(accumulate ? ops::add(into, piece.to(into.dtype())) : piece);
  };
  // Note [Coalesced order]: one batch per rank holding every message it sends and receives;
  // each sender packs its pieces for a peer in the order the receiver unpacks them (item order,
  // then the repartition's transfer order: the same plan on both ranks). A source is dropped
  // once packed, so the messages take the place of the tensors they carry.
  std::vector<Tensor> outgoing;
  for (const Peer& peer : send_peers_) outgoing.push_back(empty({peer.elements}, dtype, device));
  std::vector<int64_t> packed(send_peers_.size(), 0);
  std::vector<size_t> next(send_peers_.size(), 0);
  for (size_t i = 0; i < items_.size(); ++i) {
    if (own_plan_[i] != nullptr) continue;
    for (const Box& box : local_[i]) add(box_view(dst[i], dst_box_[i], box), box_view(sources[i], src_box_[i], box));
    for (size_t k = 0; k < send_peers_.size(); ++k) {
      const std::vector<Piece>& pieces = send_peers_[k].pieces;
      for (; next[k] < pieces.size() && pieces[next[k]].item == i; ++next[k]) {
        const Box& box = pieces[next[k]].box;
        outgoing[k].narrow(0, packed[k], box.numel()).view(box.size).copy_from(box_view(sources[i], src_box_[i], box));
        packed[k] += box.numel();
      }
    }
    sources[i] = Tensor();
  }
  std::vector<P2POp> batch;
  std::vector<Tensor> arrivals;
  for (size_t k = 0; k < send_peers_.size(); ++k) batch.push_back(P2POp::send(outgoing[k], send_peers_[k].rank));
  for (const Peer& peer : recv_peers_) {
    arrivals.push_back(empty({peer.elements}, dtype, device));
    batch.push_back(P2POp::recv(arrivals.back(), peer.rank));
  }
  if (!batch.empty()) comm.batch_send_recv(batch);
  batch.clear();
  outgoing.clear();
  for (size_t k = 0; k < recv_peers_.size(); ++k) {
    int64_t at = 0;
    for (const Piece& piece : recv_peers_[k].pieces) {
      const int64_t count = piece.box.numel();
      add(box_view(dst[piece.item], dst_box_[piece.item], piece.box), arrivals[k].narrow(0, at, count).view(piece.box.size));
      at += count;
    }
    arrivals[k] = Tensor();
  }
  for (size_t i = 0; i < items_.size(); ++i) {
    if (own_plan_[i] == nullptr || (!holds_src_[i] && !holds_dst_[i])) continue;
    const Tensor moved = execute(*own_plan_[i], items_[i].from, sources[i], comm, dtype);
    if (moved.defined()) add(dst[i], moved.view(dst_box_[i].size));
  }
}

}  // namespace hetu
