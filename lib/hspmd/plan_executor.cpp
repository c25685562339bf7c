// The plan executor: one rank's buffers (a box in global coordinates + a contiguous tensor
// shaped like it), each CommOp mapped to the Communicator, boxes packed into flat buffers for
// collectives and unpacked into views of the new buffer. Mirrors apply() in
// plan_simulator.cpp op by op.
#include "lib/hspmd/plan_executor.h"

#include <algorithm>

#include "lib/hspmd/box_view.h"
#include "lib/ops/ops.h"
#include "lib/util/error.h"
#include "lib/util/overloaded.h"

namespace hetu {
namespace {

// A rank's buffer: the values of `box`, row-major (undefined tensor when it holds nothing).
struct LocalBuffer {
  Box box;
  Tensor values;
  bool holds() const { return values.defined(); }
};

// The view of `box` inside `buffer` (box must lie inside the buffer's box).
Tensor region(const LocalBuffer& buffer, const Box& box, const CommOp& op) {
  HT_CHECK(buffer.holds() && buffer.box.contains(box), "execute: {} touches {}, this rank holds {}", to_string(op),
           box.to_string(), buffer.holds() ? buffer.box.to_string() : std::string("nothing"));
  return box_view(buffer.values, buffer.box, box);
}

int64_t total(const std::vector<int64_t>& counts) {
  int64_t sum = 0;
  for (int64_t c : counts) sum += c;
  return sum;
}

std::vector<int64_t> numels(const std::vector<Box>& boxes) {
  std::vector<int64_t> out;
  for (const Box& b : boxes) out.push_back(b.numel());
  return out;
}

// True when the ops of `step` write every element of `rank`'s new buffer `box` once, none of
// them by accumulation: the buffer needs no zeros first (most of a switch's moves).
bool overwrites_whole(const CommStep& step, DeviceId rank, const Box& box) {
  std::vector<Box> written;
  auto index = [&](const std::vector<DeviceId>& devices) {
    auto it = std::find(devices.begin(), devices.end(), rank);
    return it == devices.end() ? -1 : static_cast<int64_t>(it - devices.begin());
  };
  for (const CommOp& op : step.ops) {
    bool accumulates = false;
    std::visit(Overloaded{[&](const CopyOp& o) { if (o.device == rank) written.push_back(o.box); },
                          [&](const AllReduceOp& o) { if (index(o.devices) >= 0) written.push_back(o.box); },
                          [&](const AllGatherOp& o) {
                            if (index(o.devices) >= 0) written.insert(written.end(), o.boxes.begin(), o.boxes.end());
                          },
                          [&](const ReduceScatterOp& o) {
                            const int64_t me = index(o.devices);
                            if (me >= 0 && me < static_cast<int64_t>(o.boxes.size()))
                              written.push_back(o.boxes[static_cast<size_t>(me)]);
                          },
                          [&](const AllToAllOp& o) {
                            const int64_t me = index(o.devices);
                            if (me < 0) return;
                            for (const auto& row : o.blocks)
                              if (me < static_cast<int64_t>(row.size())) written.push_back(row[static_cast<size_t>(me)]);
                          },
                          [&](const SendRecvOp& o) {
                            for (const Transfer& t : o.transfers) {
                              if (t.dst != rank || t.box.empty()) continue;
                              written.push_back(t.box);
                              accumulates = accumulates || o.accumulate;
                            }
                          }},
               op);
    if (accumulates) return false;
  }
  return tiles(written, box);
}

class StepRunner {
 public:
  StepRunner(Communicator& comm, DType dtype, const LocalBuffer& old, LocalBuffer& fresh)
      : comm_(comm), rank_(comm.rank()), dtype_(dtype), device_(comm.device()), old_(old), new_(fresh) {}

  void run(const CommOp& op) {
    op_ = &op;
    std::visit(Overloaded{[&](const CopyOp& o) { copy_op(o); }, [&](const AllReduceOp& o) { all_reduce_op(o); },
                          [&](const AllGatherOp& o) { all_gather_op(o); },
                          [&](const ReduceScatterOp& o) { reduce_scatter_op(o); },
                          [&](const AllToAllOp& o) { all_to_all_op(o); },
                          [&](const SendRecvOp& o) { send_recv_op(o); }},
               op);
  }

 private:
  // Index of this rank in `devices`, or -1 (not taking part).
  int64_t my_index(const std::vector<DeviceId>& devices) const {
    auto it = std::find(devices.begin(), devices.end(), rank_);
    return it == devices.end() ? -1 : static_cast<int64_t>(it - devices.begin());
  }

  // old[boxes...] concatenated, flat.
  Tensor pack(const std::vector<Box>& boxes) const {
    Tensor flat = empty({total(numels(boxes))}, dtype_, device_);
    int64_t at = 0;
    for (const Box& b : boxes) {
      if (b.empty()) continue;
      flat.narrow(0, at, b.numel()).view(b.size).copy_from(region(old_, b, *op_));
      at += b.numel();
    }
    return flat;
  }

  // new[boxes...] = consecutive pieces of `flat` (or += when accumulating).
  void unpack(const Tensor& flat, const std::vector<Box>& boxes, bool accumulate = false) const {
    int64_t at = 0;
    for (const Box& b : boxes) {
      if (b.empty()) continue;
      const Tensor piece = flat.narrow(0, at, b.numel()).view(b.size);
      const Tensor target = region(new_, b, *op_);
      if (accumulate) {
        target.copy_from(ops::add(target, piece));
      } else {
        target.copy_from(piece);
      }
      at += b.numel();
    }
  }

  void copy_op(const CopyOp& o) {
    if (o.device != rank_ || o.box.empty()) return;
    region(new_, o.box, *op_).copy_from(region(old_, o.box, *op_));
  }

  void all_reduce_op(const AllReduceOp& o) {
    if (my_index(o.devices) < 0 || o.box.empty()) return;
    Tensor buffer = pack({o.box});
    comm_.all_reduce(buffer, DeviceGroup(o.devices));
    unpack(buffer, {o.box});
  }

  void all_gather_op(const AllGatherOp& o) {
    const int64_t me = my_index(o.devices);
    HT_CHECK(o.boxes.size() == o.devices.size(), "execute: {} needs one box per device", to_string(*op_));
    const std::vector<int64_t> counts = numels(o.boxes);
    if (me < 0 || total(counts) == 0) return;
    Tensor out = empty({total(counts)}, dtype_, device_);
    comm_.all_gather(pack({o.boxes[static_cast<size_t>(me)]}), out, DeviceGroup(o.devices), counts);
    unpack(out, o.boxes);
  }

  void reduce_scatter_op(const ReduceScatterOp& o) {
    const int64_t me = my_index(o.devices);
    HT_CHECK(o.boxes.size() == o.devices.size() && tiles(o.boxes, o.box),
             "execute: {}: one piece per device, tiling the box", to_string(*op_));
    const std::vector<int64_t> counts = numels(o.boxes);
    if (me < 0 || total(counts) == 0) return;
    const Box& mine = o.boxes[static_cast<size_t>(me)];
    Tensor out = empty({mine.numel()}, dtype_, device_);
    comm_.reduce_scatter(pack(o.boxes), out, DeviceGroup(o.devices), counts);
    unpack(out, {mine});
  }

  void all_to_all_op(const AllToAllOp& o) {
    const int64_t me = my_index(o.devices);
    const size_t n = o.devices.size();
    HT_CHECK(o.blocks.size() == n, "execute: {} needs one row per device", to_string(*op_));
    for (const auto& row : o.blocks) HT_CHECK(row.size() == n, "execute: {} needs one block per pair", to_string(*op_));
    if (me < 0) return;
    const std::vector<Box>& sends = o.blocks[static_cast<size_t>(me)];
    std::vector<Box> recvs;
    for (size_t j = 0; j < n; ++j) recvs.push_back(o.blocks[j][static_cast<size_t>(me)]);
    Tensor out = empty({total(numels(recvs))}, dtype_, device_);
    comm_.all_to_all(pack(sends), out, DeviceGroup(o.devices), numels(sends), numels(recvs));
    unpack(out, recvs);
  }

  // One batch: sends and receives of this rank; local transfers and arrivals are applied
  // afterwards in transfer order (the simulator's order, which matters when accumulating).
  // A box that is contiguous in its buffer is sent from it, and received straight into it
  // when the arrivals neither add up nor overlap (a switch's moves: no copy of their own).
  void send_recv_op(const SendRecvOp& o) {
    std::vector<P2POp> batch;
    std::vector<Tensor> arrivals(o.transfers.size());
    std::vector<bool> landed(o.transfers.size(), false);  // received in place
    const bool direct = !o.accumulate && incoming_disjoint(o);
    for (size_t i = 0; i < o.transfers.size(); ++i) {
      const Transfer& t = o.transfers[i];
      if (t.box.empty() || t.src == t.dst) continue;
      if (t.src == rank_) {
        const Tensor from = region(old_, t.box, *op_);
        batch.push_back(P2POp::send(from.is_contiguous() ? from.view({t.box.numel()}) : pack({t.box}), t.dst));
      }
      if (t.dst == rank_) {
        const Tensor target = region(new_, t.box, *op_);
        landed[i] = direct && target.is_contiguous();
        arrivals[i] = landed[i] ? target.view({t.box.numel()}) : empty({t.box.numel()}, dtype_, device_);
        batch.push_back(P2POp::recv(arrivals[i], t.src));
      }
    }
    if (!batch.empty()) comm_.batch_send_recv(batch);
    for (size_t i = 0; i < o.transfers.size(); ++i) {
      const Transfer& t = o.transfers[i];
      if (t.box.empty() || t.dst != rank_ || landed[i]) continue;
      unpack(t.src == rank_ ? pack({t.box}) : arrivals[i], {t.box}, o.accumulate);
    }
  }

  // True when no two non-empty boxes this rank receives in `o` (local copies included) overlap.
  bool incoming_disjoint(const SendRecvOp& o) const {
    std::vector<const Box*> incoming;
    for (const Transfer& t : o.transfers) {
      if (t.dst != rank_ || t.box.empty()) continue;
      for (const Box* b : incoming)
        if (overlaps(*b, t.box)) return false;
      incoming.push_back(&t.box);
    }
    return true;
  }

  Communicator& comm_;
  DeviceId rank_;
  DType dtype_;
  Device device_;
  const LocalBuffer& old_;
  LocalBuffer& new_;
  const CommOp* op_ = nullptr;
};

}  // namespace

Tensor execute(const CommPlan& plan, const Union& src, const Tensor& local_src, Communicator& comm,
               std::optional<DType> dtype, const Tensor& into) {
  const DeviceId rank = comm.rank();
  LocalBuffer current;
  if (src.member_of(rank)) {
    const Shard shard = shard_of(src, plan.global_shape, rank);
    HT_CHECK(local_src.defined() && local_src.shape() == shard.box.size,
             "execute: rank {} holds {} of {}, but its source tensor has shape {}", rank, shard.to_string(),
             src.to_string(), local_src.defined() ? shape_str(local_src.shape()) : std::string("(undefined)"));
    current = LocalBuffer{shard.box, local_src.contiguous()};
  }
  if (!dtype) {
    HT_CHECK(local_src.defined(), "execute: rank {} holds no source shard of {}; pass the dtype", rank,
             src.to_string());
    dtype = local_src.dtype();
  }
  HT_CHECK(!local_src.defined() || local_src.dtype() == *dtype, "execute: source dtype {} but dtype {} requested",
           to_string(local_src.dtype()), to_string(*dtype));
  // The last layout's shard of this rank written into `into`, zeroed first unless the step
  // overwrites all of it (new buffers start at zero): the shard's box viewed over its storage.
  auto into_box = [&](const Box& box, bool overwritten) {
    HT_CHECK(into.is_contiguous() && into.numel() == box.numel() && into.dtype() == *dtype,
             "execute: `into` has {} elements of {} (contiguous: {}), the result {} of {}", into.numel(),
             to_string(into.dtype()), into.is_contiguous(), box.numel(), to_string(*dtype));
    Tensor view = into.view(box.size);
    if (!overwritten) view.copy_from(zeros({}, *dtype, into.device()));
    return view;
  };
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const CommStep& step = plan.steps[k];
    const bool last = k + 1 == plan.steps.size();
    LocalBuffer fresh;
    for (const DeviceShard& s : step.after) {
      if (s.device != rank) continue;
      const bool overwritten = overwrites_whole(step, rank, s.shard.box);
      fresh = LocalBuffer{s.shard.box, last && into.defined() ? into_box(s.shard.box, overwritten)
                                       : overwritten            ? empty(s.shard.box.size, *dtype, comm.device())
                                                                : zeros(s.shard.box.size, *dtype, comm.device())};
    }
    StepRunner runner(comm, *dtype, current, fresh);
    for (const CommOp& op : step.ops) runner.run(op);
    current = std::move(fresh);
  }
  if (into.defined() && current.holds() && current.values.storage() != into.storage()) {  // no steps: the source
    Tensor view = into.view(current.box.size);
    view.copy_from(current.values);
    return view;
  }
  return current.values;
}

}  // namespace hetu
