// The op catalogue: the one list of every op hetu's tensor library has. Each entry is
// X(name, differentiable). Adding an op touches: this list, ops.h (public function),
// lib/ops/<family>.cpp (checks + dispatch), lib/ops/cpu/<family>.cpp (kernel), the backward
// table in lib/autograd/backward_rules.cpp when differentiable, and its tests. The
// gradient-check suite iterates this list, so a differentiable op without a gradient test
// fails the suite. cross_entropy_shard is not differentiable on its own: its gradient
// (cross_entropy_shard_backward) needs every rank's statistics, so the autograd node that
// applies it lives with the cross-rank combination (lib/nn/parallel_cross_entropy.cpp).
#pragma once

#include <array>
#include <string_view>

#define HT_OP_LIST(X)            \
  X(matmul, true)                \
  X(linear, true)                \
  X(linear_gelu, true)           \
  X(add, true)                   \
  X(sub, true)                   \
  X(mul, true)                   \
  X(div, true)                   \
  X(add_scalar, true)            \
  X(mul_scalar, true)            \
  X(neg, true)                   \
  X(exp, true)                   \
  X(log, true)                   \
  X(sqrt, true)                  \
  X(rsqrt, true)                 \
  X(tanh, true)                  \
  X(gelu, true)                  \
  X(silu, true)                  \
  X(relu, true)                  \
  X(sum, true)                   \
  X(mean, true)                  \
  X(max, true)                   \
  X(softmax, true)               \
  X(log_softmax, true)           \
  X(layer_norm, true)            \
  X(rms_norm, true)              \
  X(embedding, true)             \
  X(rotary, true)                \
  X(attention, true)             \
  X(cross_entropy, true)         \
  X(cross_entropy_shard, false)  \
  X(linear_cross_entropy, true)  \
  X(concat, true)                \
  X(split, true)                 \
  X(index_select, true)          \
  X(cast, true)                  \
  X(copy, false)                 \
  X(fill, false)                 \
  X(add_, false)                 \
  X(adamw_update, false)         \
  X(global_norm, false)          \
  X(unscale_and_check_, false)

namespace hetu::ops {

enum class OpKind {
#define HT_OP_ENUM(name, differentiable) name,
  HT_OP_LIST(HT_OP_ENUM)
#undef HT_OP_ENUM
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  bool differentiable;
};

inline constexpr auto kOps = std::to_array<OpInfo>({
#define HT_OP_INFO(name, differentiable) {OpKind::name, #name, differentiable},
    HT_OP_LIST(HT_OP_INFO)
#undef HT_OP_INFO
});

}  // namespace hetu::ops
