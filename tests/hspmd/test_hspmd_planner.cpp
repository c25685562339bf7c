// The planner on the worked examples of hetu_v2_hspmd.md §3.5 and the classic transitions:
// each test asserts the transition chosen, the step names and (where short) every op, and
// checks the plan numerically with the reference executor against the generic repartition.
#include <catch2/catch.hpp>

#include "lib/util/error.h"
#include "tests/hspmd/hspmd_test_utils.h"

namespace hetu::test {
namespace {

std::vector<std::string> ops_of(const CommPlan& plan, size_t step = 0) {
  std::vector<std::string> out;
  for (const CommOp& op : plan.steps.at(step).ops) out.push_back(to_string(op));
  return out;
}

const Shape kShape{8, 6};
const DeviceGroup kTp2({0, 1});
const DeviceGroup kTp1({4});

}  // namespace

TEST_CASE("worked example: gradient sum between a TP=2 and a TP=1 replica", "[hspmd]") {
  Union grad({member({0, 1}, DistState::split(0, 2)), member({4}, DistState())}, UnionRelation::partial());
  Union weight({member({0, 1}, DistState::split(0, 2)), member({4}, DistState())}, UnionRelation::replica());
  CommPlan plan = require_plan(grad, weight, kShape);
  CHECK(plan.transition == "split_all_reduce");
  CHECK(plan.step_names() == std::vector<std::string>{"split_all_reduce"});
  // Block groups {0,4} and {1,4}: device 4 halves its tensor.
  CHECK(ops_of(plan) == std::vector<std::string>{"all_reduce {0,4} [0:4, 0:6]", "all_reduce {1,4} [4:8, 0:6]"});
  CHECK(comm_volume(plan) == 2 * 24 + 2 * 24);
}

TEST_CASE("worked example: three replicas with 2, 1 and 4 duplicates", "[hspmd]") {
  Union grad({member({0, 1}, DistState::duplicate(2)), member({2}, DistState()),
              member({3, 4, 5, 6}, DistState::duplicate(4))},
             UnionRelation::partial());
  Union weight({member({0, 1}, DistState::duplicate(2)), member({2}, DistState()),
                member({3, 4, 5, 6}, DistState::duplicate(4))},
               UnionRelation::replica());
  CommPlan plan = require_plan(grad, weight, kShape);
  CHECK(plan.transition == "split_all_reduce");
  // Hetu's groups "1-1-1, 2-1-2, 1-1-3, 2-1-4": device 2 takes part in all four.
  CHECK(ops_of(plan) == std::vector<std::string>{"all_reduce {0,2,3} [0:8, 0:6]", "all_reduce {1,2,4} [0:8, 0:6]",
                                                 "all_reduce {0,2,5} [0:8, 0:6]", "all_reduce {1,2,6} [0:8, 0:6]"});
}

TEST_CASE("worked example: input placeholder split 4:4 with a TP=2 duplicate", "[hspmd]") {
  // split {'0': [2, 2]}, dup [2, 1]: each pipeline gets half the batch; the TP=2 group holds
  // its half on both devices.
  Union input({member({0, 1}, DistState::duplicate(2)), member({4}, DistState())}, UnionRelation::split(0, {4, 4}));
  CHECK(shard_of(input, kShape, 0).box == shard_of(input, kShape, 1).box);
  CHECK(shard_of(input, kShape, 0).box.to_string() == "[0:4, 0:6]");
  CHECK(shard_of(input, kShape, 4).box.to_string() == "[4:8, 0:6]");
  // Gathering the whole batch everywhere: one gather over the two pipelines.
  Union all({member({0, 1}, DistState::duplicate(2)), member({4}, DistState())}, UnionRelation::replica());
  CommPlan plan = require_plan(input, all, kShape);
  CHECK(plan.transition == "split_all_gather");
  CHECK(ops_of(plan) == std::vector<std::string>{"all_gather {0,4} [0:4, 0:6] [4:8, 0:6]",
                                                 "all_gather {1,4} [0:4, 0:6] [4:8, 0:6]"});
}

TEST_CASE("classic transitions on one group choose the named collective", "[hspmd]") {
  const std::vector<DeviceId> g{0, 1, 2, 3};
  struct Case {
    DistState src, dst;
    std::string transition;
  };
  const std::vector<Case> cases = {
      {DistState::partial(4), DistState::duplicate(4), "all_reduce"},
      {DistState::split(0, 4), DistState::duplicate(4), "all_gather"},
      {DistState::split(1, 4), DistState::duplicate(4), "all_gather"},  // 6 cols: 2, 2, 1, 1
      {DistState::partial(4), DistState::split(1, 4), "reduce_scatter"},
      {DistState::duplicate(4), DistState::split(1, 4), "local_slice"},
      {ds({S(0, 2), D(2)}), DistState::split(0, 4), "local_slice"},
      {ds({P(2), D(2)}), ds({P(2), S(0, 2)}), "local_slice"},
      {DistState::split(0, 4), DistState::split(1, 4), "all_to_all"},
      {ds({D(2), S(0, 2)}), ds({D(2), S(1, 2)}), "all_to_all"},
      {ds({S(0, 2), S(1, 2)}), ds({S(0, 2), D(2)}), "all_gather"},
      {ds({P(2), S(1, 2)}), ds({S(0, 2), S(1, 2)}), "reduce_scatter"},
      {ds({S(0, 2), P(2)}), ds({S(0, 2), D(2)}), "all_reduce"},
      {DistState::split(0, 4), DistState::split(0, 4), "identity"},
      {ds({P(2), D(2)}), DistState::split(0, 4), "repartition"},  // needs a slice and a reduction
  };
  for (const Case& c : cases) {
    CommPlan plan = require_plan(on(g, c.src), on(g, c.dst), kShape);
    INFO(c.src.to_string() << " -> " << c.dst.to_string());
    CHECK(plan.transition == c.transition);
    CHECK(plan.step_names() == std::vector<std::string>{c.transition});
  }
}

TEST_CASE("classic transitions: the ops of the one-group collectives", "[hspmd]") {
  const std::vector<DeviceId> g{0, 1};
  CHECK(ops_of(require_plan(on(g, DistState::split(0, 2)), on(g, DistState::duplicate(2)), kShape)) ==
        std::vector<std::string>{"all_gather {0,1} [0:4, 0:6] [4:8, 0:6]"});
  CHECK(ops_of(require_plan(on(g, DistState::partial(2)), on(g, DistState::split(1, 2)), kShape)) ==
        std::vector<std::string>{"reduce_scatter {0,1} [0:8, 0:6] -> [0:8, 0:3] [0:8, 3:6]"});
  CHECK(ops_of(require_plan(on(g, DistState::split(0, 2)), on(g, DistState::split(1, 2)), kShape)) ==
        std::vector<std::string>{"all_to_all {0,1} ([0:4, 0:3] [0:4, 3:6]) ([4:8, 0:3] [4:8, 3:6])"});
  CHECK(ops_of(require_plan(on(g, DistState::duplicate(2)), on(g, DistState::split(1, 2)), kShape)) ==
        std::vector<std::string>{"copy 0 [0:8, 0:3]", "copy 1 [0:8, 3:6]"});
  // Two all_reduces over the partial axis, one per row block.
  CHECK(ops_of(require_plan(on({0, 1, 2, 3}, ds({S(0, 2), P(2)})), on({0, 1, 2, 3}, ds({S(0, 2), D(2)})),
                            kShape)) ==
        std::vector<std::string>{"all_reduce {0,1} [0:4, 0:6]", "all_reduce {2,3} [4:8, 0:6]"});
}

TEST_CASE("pipeline edges: point_to_point on equal stages, repartition between TP=4 and TP=2", "[hspmd]") {
  CommPlan p2p = require_plan(on({0, 1}, DistState::split(1, 2)), on({2, 3}, DistState::split(1, 2)), kShape);
  CHECK(p2p.transition == "point_to_point");
  CHECK(ops_of(p2p) == std::vector<std::string>{"send_recv 0->2 [0:8, 0:3] 1->3 [0:8, 3:6]"});
  // Partial sums travel as they are.
  CHECK(require_plan(on({0, 1}, DistState::partial(2)), on({1, 0}, DistState::partial(2)), kShape).transition ==
        "point_to_point");

  CommPlan edge = require_plan(on({0, 1, 2, 3}, DistState::split(1, 4)), on({4, 5}, DistState::split(1, 2)), kShape);
  CHECK(edge.transition == "repartition");
  CHECK(ops_of(edge) == std::vector<std::string>{"send_recv 0->4 [0:8, 0:2] 1->4 [0:8, 2:3] 1->5 [0:8, 3:4] "
                                                 "2->5 [0:8, 4:5] 3->5 [0:8, 5:6]"});
  // A TP=2 stage whose output is partial feeding a TP=1 stage: summed on arrival.
  CommPlan sum = require_plan(on({0, 1}, DistState::partial(2)), on({4}, DistState()), kShape);
  CHECK(sum.transition == "repartition");
  CHECK(ops_of(sum) == std::vector<std::string>{"send_recv (accumulate) 0->4 [0:8, 0:6] 1->4 [0:8, 0:6]"});
}

TEST_CASE("split collectives across members with different TP", "[hspmd]") {
  // ZeRO-like: a gradient partial over a TP=2 replica {0,1} and a duplicated replica {2,3},
  // reduce-scattered to one shard per device and gathered back.
  Union grad({member({0, 1}, DistState::split(0, 2)), member({2, 3}, DistState::duplicate(2))},
             UnionRelation::partial());
  Union zero = on({0, 2, 1, 3}, DistState::split(0, 4));
  CommPlan rs = require_plan(grad, zero, kShape);
  CHECK(rs.transition == "split_reduce_scatter");
  CHECK(ops_of(rs) == std::vector<std::string>{"reduce_scatter {0,2} [0:4, 0:6] -> [0:2, 0:6] [2:4, 0:6]",
                                               "reduce_scatter {1,3} [4:8, 0:6] -> [4:6, 0:6] [6:8, 0:6]"});
  Union weight({member({0, 1}, DistState::split(0, 2)), member({2, 3}, DistState::duplicate(2))},
               UnionRelation::replica());
  CommPlan ag = require_plan(zero, weight, kShape);
  CHECK(ag.transition == "split_all_gather");
  CHECK(ops_of(ag) == std::vector<std::string>{"all_gather {0,2,3} [0:2, 0:6] [2:4, 0:6] [0:0, 0:0]",
                                               "all_gather {1,3,2} [4:6, 0:6] [6:8, 0:6] [4:4, 0:0]"});

  // Members split differently on different dims: every 2x2 block has its own group.
  Union g2({member({0, 1}, DistState::split(0, 2)), member({2, 3}, DistState::split(1, 2))}, UnionRelation::partial());
  Union w2({member({0, 1}, DistState::split(0, 2)), member({2, 3}, DistState::split(1, 2))}, UnionRelation::replica());
  CommPlan blocks = require_plan(g2, w2, kShape);
  CHECK(blocks.transition == "split_all_reduce");
  CHECK(ops_of(blocks) == std::vector<std::string>{"all_reduce {0,2} [0:4, 0:3]", "all_reduce {0,3} [0:4, 3:6]",
                                                   "all_reduce {1,2} [4:8, 0:3]", "all_reduce {1,3} [4:8, 3:6]"});
}

TEST_CASE("hierarchical: a split collective across members, then a collective inside one", "[hspmd]") {
  Union grad({member({0, 1}, DistState::split(0, 2)), member({4}, DistState())}, UnionRelation::partial());
  Union full({member({0, 1}, DistState::duplicate(2)), member({4}, DistState())}, UnionRelation::replica());
  CommPlan plan = require_plan(grad, full, kShape);
  CHECK(plan.transition == "hierarchical");
  CHECK(plan.step_names() == std::vector<std::string>{"split_all_reduce", "all_gather"});
  CHECK(ops_of(plan, 1) == std::vector<std::string>{"all_gather {0,1} [0:4, 0:6] [4:8, 0:6]", "copy 4 [0:8, 0:6]"});
  // The other order, a slice inside the member and then the reduction, is cheaper here.
  Union dup_grad({member({0, 1}, DistState::duplicate(2)), member({4}, DistState())}, UnionRelation::partial());
  Union tp_weight({member({0, 1}, DistState::split(0, 2)), member({4}, DistState())}, UnionRelation::replica());
  CommPlan slice_first = require_plan(dup_grad, tp_weight, kShape);
  CHECK(slice_first.transition == "hierarchical");
  CHECK(slice_first.step_names() == std::vector<std::string>{"local_slice", "split_all_reduce"});
}

TEST_CASE("uneven member splits: a batch of 8 split 3:5 between pipelines", "[hspmd]") {
  Union batch({member({0, 1}, DistState::split(0, 2)), member({4}, DistState())}, UnionRelation::split(0, {3, 5}));
  Union all({member({0, 1}, DistState::duplicate(2)), member({4}, DistState())}, UnionRelation::replica());
  CommPlan gather = require_plan(batch, all, kShape);
  CHECK(gather.transition == "split_all_gather");
  CHECK(ops_of(gather) == std::vector<std::string>{"all_gather {0,1,4} [0:2, 0:6] [2:3, 0:6] [3:8, 0:6]"});
  // Re-balancing 3:5 to 5:3, and to an even TP=3 split of the 8 rows (3, 3, 2).
  Union rebalanced({member({0, 1}, DistState::split(0, 2)), member({4}, DistState())}, UnionRelation::split(0, {5, 3}));
  CHECK(require_plan(batch, rebalanced, kShape).transition == "repartition");
  CHECK(require_plan(batch, on({0, 1, 4}, DistState::split(0, 3)), kShape).transition == "repartition");
  // Uneven along dim 1 inside members: the sizes come from Note [Even split with remainder].
  Union cols({member({0, 1, 2}, DistState::split(1, 3)), member({3}, DistState())}, UnionRelation::split(1, {4, 2}));
  CHECK(shard_of(cols, kShape, 2).box.to_string() == "[0:8, 3:4]");
  CHECK(require_plan(cols, on({0, 1, 2, 3}, DistState::duplicate(4)), kShape).transition == "split_all_gather");
  CHECK(require_plan(on({0, 1, 2, 3}, DistState::partial(4)), cols, kShape).transition == "split_reduce_scatter");
}

TEST_CASE("splits on the last dim of a 3-d tensor", "[hspmd]") {
  const Shape shape{2, 3, 5};
  CommPlan a2a = require_plan(on({0, 1}, DistState::split(2, 2)), on({0, 1}, DistState::split(1, 2)), shape);
  CHECK(a2a.transition == "all_to_all");
  CHECK(ops_of(a2a) == std::vector<std::string>{"all_to_all {0,1} ([0:2, 0:2, 0:3] [0:2, 2:3, 0:3]) "
                                                "([0:2, 0:2, 3:5] [0:2, 2:3, 3:5])"});
  // Members split 2:3 along dim 2, TP=2 on dim 1 inside the first.
  Union heads({member({0, 1}, DistState::split(1, 2)), member({2}, DistState())}, UnionRelation::split(2, {2, 3}));
  CHECK(shard_of(heads, shape, 1).box.to_string() == "[0:2, 2:3, 0:2]");
  CHECK(require_plan(heads, on({0, 1, 2}, DistState::duplicate(3)), shape).transition == "split_all_gather");
  CHECK(require_plan(on({0, 1, 2}, DistState::partial(3)), heads, shape).transition == "split_reduce_scatter");
  CHECK(require_plan(heads, on({3, 4}, ds({S(2, 2)})), shape).transition == "repartition");
  // A reduction and a permutation on one group: no middle annotation, so the repartition.
  CHECK(require_plan(on({0, 1, 2, 3}, ds({S(2, 2), P(2)})), on({0, 1, 2, 3}, ds({D(2), S(2, 2)})), shape).transition ==
        "repartition");
}

TEST_CASE("plan_with and transition_applies name single transitions", "[hspmd]") {
  Union s = on({0, 1}, DistState::split(0, 2)), d = on({0, 1}, DistState::duplicate(2));
  CHECK(transition_applies("all_gather", s, d, kShape));
  CHECK_FALSE(transition_applies("all_reduce", s, d, kShape));
  CHECK(plan_with("repartition", s, d, kShape).step_names() == std::vector<std::string>{"repartition"});
  CHECK_THROWS_AS(plan_with("all_reduce", s, d, kShape), Error);
  CHECK_THROWS_AS(plan_with("no_such_transition", s, d, kShape), Error);
  CHECK(transition_names().front() == "identity");
  CHECK(transition_names().back() == "repartition");
}

TEST_CASE("simulator worked example: reduce_scatter of two partial sums", "[hspmd]") {
  Union src = on({0, 1}, DistState::partial(2));
  Union dst = on({0, 1}, DistState::split(0, 2));
  DeviceBuffers in = make_buffers(src, {4}, {1, 2, 3, 4}, 7);
  CHECK_FALSE(in.at(0).values == std::vector<double>{1, 2, 3, 4});  // a part, not the value
  for (size_t i = 0; i < 4; ++i) CHECK(in.at(0).values[i] + in.at(1).values[i] == static_cast<double>(i + 1));
  DeviceBuffers out = execute(plan_comm(src, dst, {4}), in);
  CHECK(out.at(0).values == std::vector<double>{1, 2});
  CHECK(out.at(1).values == std::vector<double>{3, 4});
  CHECK(check_buffers(dst, {4}, {1, 2, 3, 4}, out) == "");
  CHECK(check_buffers(dst, {4}, {1, 2, 3, 5}, out) != "");
  CHECK(check_buffers(dst, {4}, {1, 2, 3, 4}, in) != "");  // the source layout is not dst's
}

TEST_CASE("the simulator rejects a plan that reads what a device does not hold", "[hspmd]") {
  Union s = on({0, 1}, DistState::split(0, 2)), d = on({0, 1}, DistState::duplicate(2));
  CommPlan plan = plan_comm(s, d, kShape);
  auto& op = std::get<AllGatherOp>(plan.steps[0].ops[0]);
  op.boxes[0] = op.boxes[1];  // device 0 does not hold the bottom half
  CHECK_THROWS_AS(simulate(plan, s, d, random_integers(48, 3)), Error);
  // And one that leaves part of a buffer unwritten.
  CommPlan partial = plan_comm(s, d, kShape);
  std::get<AllGatherOp>(partial.steps[0].ops[0]).boxes[1].size = {2, 6};
  CHECK_THROWS_AS(simulate(partial, s, d, random_integers(48, 3)), Error);
}

}  // namespace hetu::test
