// The schedule walker. See Note [Exchange pairing] for the order of communication.
#include "lib/pipeline/stage_executor.h"

#include "lib/autograd/engine.h"
#include "lib/autograd/grad_mode.h"
#include "lib/hspmd/p2p_exchange.h"
#include "lib/hspmd/plan_executor.h"
#include "lib/hspmd/redistribute.h"
#include "lib/util/error.h"
#include "lib/util/step_timer.h"
#include "lib/util/wait_trace.h"

namespace hetu::pipeline {
namespace {

Union stage_annotation(const StageLayout& stage) {
  return Union::single(stage.devices, DistState::duplicate(stage.tp()));
}

// Note [Sliced stage edges]: a stage's activation is duplicated over its tp ranks, so sending
// each receiving rank a whole copy moves tp copies across the (often slowest) link between
// the stages. Instead the activation (mb, T, C) crosses once, as one slice per receiving rank
// (split along the first dim at least as long as the receiving tp: rows, else positions, else
// channels), sent by the sending ranks in turn (the repartition spreads the slices over the
// duplicates), and the receiving stage all-gathers the slices. The gradient goes back the dual
// way: the receiving stage's partial gradients are reduce-scattered into slices of their sum,
// and each slice crosses once, arriving as a zero-padded partial on the sending stage. The
// crossing plans are single send/recv steps (PlanCache::get_exchange), so they join the paired
// batches (Note [Exchange pairing]); the all_gather runs once the batch that received the
// slice has completed, the reduce_scatter before the batch that sends the gradient. A
// receiving stage of one device, or an activation too small to cut, takes whole copies.
// The cost model prices the same (Note [Stage edges] in lib/plan/stage_estimate.cpp).
std::optional<Union> edge_slices(const Union& dst, const Shape& shape) {
  const DistState& state = dst.members().at(0).state;
  const int64_t k = state.device_count();
  if (k < 2) return std::nullopt;
  for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
    if (shape[static_cast<size_t>(dim)] >= k) return Union::single(dst.members().at(0).group, DistState::split(dim, k));
  }
  return std::nullopt;
}

}  // namespace

StageExecutor::Edge StageExecutor::plan_edge(const Union& src, const Union& dst, const Shape& shape) {
  Edge e{src, dst, edge_slices(dst, shape)};
  if (e.slices) {
    e.forward = &plans_.get_exchange(src, *e.slices, shape);
    e.gather = &plans_.get(*e.slices, dst, shape);
    e.scatter = &plans_.get(dual_annotation(dst), dual_annotation(*e.slices), shape);
    e.backward = &plans_.get_exchange(dual_annotation(*e.slices), dual_annotation(src), shape);
  } else {
    e.forward = &plans_.get(src, dst, shape);
    e.backward = &plans_.get(dual_annotation(dst), dual_annotation(src), shape);
  }
  return e;
}

StageExecutor::StageExecutor(const ParallelLayout& layout, Position position, Communicator* comm, PlanCache& plans,
                             Shape hidden_shape, DType dtype)
    : replica_(layout.replicas.at(static_cast<size_t>(position.replica))),
      position_(position),
      comm_(comm),
      plans_(plans),
      hidden_shape_(std::move(hidden_shape)),
      dtype_(dtype),
      num_stages_(static_cast<int64_t>(replica_.stages.size())) {
  HT_CHECK(num_stages_ == 1 || comm_ != nullptr, "stage executor: a pipeline of {} stages needs a communicator",
           num_stages_);
  auto edge = [&](int64_t from, int64_t to) {
    return plan_edge(stage_annotation(replica_.stages[static_cast<size_t>(from)]),
                     stage_annotation(replica_.stages[static_cast<size_t>(to)]), hidden_shape_);
  };
  const int64_t s = position_.stage;
  if (s > 0) from_prev_ = edge(s - 1, s);
  if (s + 1 < num_stages_) to_next_ = edge(s, s + 1);
}

// Micro-batches of another (rows, T) than the executor was built for (a bucket's rows,
// bucket_rows.h): the edges' plans for that activation shape, from the plan cache.
void StageExecutor::shape_edges(const Shape& inputs) {
  const Shape shape{inputs.at(0), inputs.at(1), hidden_shape_.at(2)};
  for (std::optional<Edge>* edge : {&from_prev_, &to_next_}) {
    if (!edge->has_value()) continue;
    Edge& e = **edge;
    e = plan_edge(e.src, e.dst, shape);
  }
}

double StageExecutor::train(StageCompute& compute, const std::vector<MicroBatch>& micro_batches, double normalizer) {
  return run(compute, micro_batches, normalizer, true);
}

double StageExecutor::evaluate(StageCompute& compute, const std::vector<MicroBatch>& micro_batches, double normalizer) {
  autograd::NoGradGuard no_grad;
  return run(compute, micro_batches, normalizer, false);
}

// Note [Exchange pairing]: before the first action the stage receives that action's input;
// after each action it posts one batch with the action's send (F: the activation to the next
// stage; B: the input gradient to the previous one) and the next action's receive (F: the
// activation from the previous stage; B: the output gradient from the next one). Neighbours
// run schedules of the same kind over the same micro-batch order, so the batches match.
double StageExecutor::run(StageCompute& compute, const std::vector<MicroBatch>& micro_batches, double normalizer,
                          bool training) {
  const int64_t m = static_cast<int64_t>(micro_batches.size());
  HT_CHECK(!training || m >= 1, "stage executor: a training pass of no micro-batches");
  if (m > 0) shape_edges(micro_batches[0].inputs.shape());
  std::vector<PipeAction> actions;
  if (training) {
    actions = make_schedule(replica_.schedule, num_stages_, m, position_.stage);
  } else {
    for (int64_t i = 0; i < m; ++i) actions.push_back({PipeOp::forward, i});
  }
  std::vector<Tensor> inputs(static_cast<size_t>(m)), outputs(static_cast<size_t>(m)), output_grads(static_cast<size_t>(m));
  P2PExchange exchange(*comm_);
  int64_t sliced_input = -1;  // the micro-batch whose input the posted batch receives in slices
  auto post_receive = [&](const PipeAction& a) {
    const size_t i = static_cast<size_t>(a.micro_batch);
    if (a.op == PipeOp::forward && !first_stage()) {
      inputs[i] = exchange.recv(*from_prev_->forward, dtype_);
      if (from_prev_->gather != nullptr) sliced_input = a.micro_batch;
    }
    if (a.op == PipeOp::backward && !last_stage()) output_grads[i] = exchange.recv(*to_next_->backward, dtype_);
  };
  auto run_exchange = [&] {
    exchange.run();
    if (sliced_input < 0) return;
    Tensor& input = inputs[static_cast<size_t>(sliced_input)];
    input = execute(*from_prev_->gather, *from_prev_->slices, input, *comm_, dtype_);
    sliced_input = -1;
  };

  double loss_sum = 0;
  if (comm_ != nullptr && !actions.empty()) {
    timing::Scope wait(timing::Phase::pipe_wait);
    post_receive(actions[0]);
    run_exchange();
  }
  Tensor input_grad;  // the backward's gradient for the previous stage, sent after the action
  for (size_t k = 0; k < actions.size(); ++k) {
    const PipeAction& a = actions[k];
    const size_t i = static_cast<size_t>(a.micro_batch);
    const wait_trace::Span traced(a.op == PipeOp::forward ? "forward" : "backward", a.micro_batch, training);
    if (a.op == PipeOp::forward) {
      timing::Scope scope(timing::Phase::forward, "forward", timing::Track::compute,
                          {{"mb", a.micro_batch}, {"stage", position_.stage}});
      Tensor input = first_stage() ? micro_batches[i].inputs : inputs[i];
      if (training && !first_stage()) input.set_requires_grad(true);
      Tensor out = compute.forward(input, micro_batches[i].cu_seqlens);
      if (last_stage()) {
        out = compute.loss(out, micro_batches[i].targets, normalizer);
        if (seeds_loss()) loss_sum += out.item();
      } else {
        exchange.send(*to_next_->forward, to_next_->src, out);
      }
      if (training) outputs[i] = out;
    } else {
      timing::Scope scope(timing::Phase::backward, "backward", timing::Track::compute,
                          {{"mb", a.micro_batch}, {"stage", position_.stage}});
      if (last_stage()) {
        autograd::backward(outputs[i], full({}, seeds_loss() ? 1.0 : 0.0, outputs[i].dtype(), outputs[i].device()));
      } else {
        autograd::backward(outputs[i], output_grads[i]);
      }
      if (!first_stage()) {
        input_grad = inputs[i].grad();
        if (!input_grad.defined()) input_grad = zeros(inputs[i].shape(), inputs[i].dtype(), inputs[i].device());
      }
      inputs[i] = outputs[i] = output_grads[i] = Tensor();  // free the micro-batch's graph
    }
    if (comm_ != nullptr) {
      timing::Scope wait(timing::Phase::pipe_wait);
      if (input_grad.defined()) {
        const Edge& e = *from_prev_;
        if (e.scatter != nullptr) input_grad = execute(*e.scatter, dual_annotation(e.dst), input_grad, *comm_, dtype_);
        exchange.send(*e.backward, dual_annotation(e.crossing()), input_grad);
        input_grad = Tensor();
      }
      if (k + 1 < actions.size()) post_receive(actions[k + 1]);
      run_exchange();
    }
  }
  return loss_sum;
}

}  // namespace hetu::pipeline
