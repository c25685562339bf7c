// Public optimizer ops: adamw_update (in place on param, m, v) and global_norm (for gradient
// clipping). Checks here, arithmetic in cpu/optimizer.cpp.
//   AdamWStep s; s.lr = 3e-4; s.weight_decay = 0.1; s.step = t;  // t counts from 1
//   adamw_update(w, w_grad, w_m, w_v, s);                         // all of w's shape
#include <cmath>

#include "lib/ops/cpu/optimizer.h"
#include "lib/ops/cuda/optimizer.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"

namespace hetu::ops {

void adamw_update(const Tensor& param, const Tensor& grad_in, const Tensor& m, const Tensor& v,
                  const AdamWStep& step) {
  check_inputs("adamw_update", {&param, &grad_in, &m, &v}, Backends::cpu_and_cuda);
  check_float_dtype("adamw_update", {&param, &grad_in, &m, &v});
  const char* names[] = {"grad", "m", "v"};
  const Tensor* others[] = {&grad_in, &m, &v};
  for (size_t i = 0; i < 3; ++i) {
    HT_CHECK(others[i]->shape() == param.shape(), "adamw_update: {} shape {} differs from param shape {}", names[i],
             shape_str(others[i]->shape()), shape_str(param.shape()));
  }
  HT_CHECK(param.is_contiguous(), "adamw_update: param must be contiguous (it is updated in place)");
  HT_CHECK(m.is_contiguous(), "adamw_update: m must be contiguous (it is updated in place)");
  HT_CHECK(v.is_contiguous(), "adamw_update: v must be contiguous (it is updated in place)");
  HT_CHECK(step.step >= 1, "adamw_update: step must be >= 1 (bias correction counts from 1), got {}", step.step);
  HT_CHECK(step.beta1 >= 0 && step.beta1 < 1 && step.beta2 >= 0 && step.beta2 < 1,
           "adamw_update: betas must lie in [0, 1), got ({}, {})", step.beta1, step.beta2);
  const Tensor grad = grad_in.contiguous();
  const cpu::AdamWScalars s{step.lr,
                            step.beta1,
                            step.beta2,
                            step.eps,
                            step.weight_decay,
                            1 - std::pow(step.beta1, static_cast<double>(step.step)),
                            1 - std::pow(step.beta2, static_cast<double>(step.step)),
                            step.grad_scale};
  if constexpr (hetu::cuda::kBuilt) {
    if (param.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(param.device());
      cuda::adamw_update(param.dtype(), param.raw_data(), grad.raw_data(), m.raw_data(), v.raw_data(), param.numel(), s);
      return;
    }
  }
  HT_DISPATCH_FLOAT(param.dtype(), "adamw_update", param.device(), [&] {
    cpu::adamw_update(param.data<scalar_t>(), grad.data<scalar_t>(), m.data<scalar_t>(), v.data<scalar_t>(),
                      param.numel(), s);
  });
}

double global_norm(const std::vector<Tensor>& tensors) {
  double total = 0;
  if constexpr (hetu::cuda::kBuilt) {
    if (!tensors.empty() && tensors.front().defined() && tensors.front().device().is_cuda()) {
      // One f64 accumulator on the device, read once: a single synchronisation.
      const Device device = tensors.front().device();
      hetu::cuda::DeviceGuard guard(device);
      Tensor acc = zeros({1}, DType::f64, device);
      for (const Tensor& t : tensors) {
        check_inputs("global_norm", {&tensors.front(), &t}, Backends::cpu_and_cuda);
        check_float_dtype("global_norm", {&t});
        const Tensor x = t.contiguous();
        cuda::sum_squares_accumulate(x.dtype(), x.raw_data(), x.numel(), acc.data<double>());
      }
      return std::sqrt(acc.item());
    }
  }
  for (const Tensor& t : tensors) {
    check_inputs("global_norm", {&tensors.front(), &t});
    check_float_dtype("global_norm", {&t});
    const Tensor x = t.contiguous();
    total += HT_DISPATCH_FLOAT(x.dtype(), "global_norm", x.device(),
                               [&] { return cpu::sum_squares(x.data<scalar_t>(), x.numel()); });
  }
  return std::sqrt(total);
}

bool unscale_and_check_(const std::vector<Tensor>& tensors, double inv_scale) {
  HT_CHECK(std::isfinite(inv_scale) && inv_scale > 0, "unscale_and_check_: inv_scale must be finite and > 0, got {}",
           inv_scale);
  bool found = false;
  if constexpr (hetu::cuda::kBuilt) {
    if (!tensors.empty() && tensors.front().defined() && tensors.front().device().is_cuda()) {
      const Device device = tensors.front().device();
      hetu::cuda::DeviceGuard guard(device);
      Tensor flag = zeros({1}, DType::i32, device);  // set by any kernel that meets inf/nan; read once
      for (const Tensor& t : tensors) {
        check_inputs("unscale_and_check_", {&tensors.front(), &t}, Backends::cpu_and_cuda);
        HT_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::bf16 || t.dtype() == DType::f16,
                 "unscale_and_check_: CUDA tensors must be f32, bf16 or f16, got {}", to_string(t.dtype()));
        HT_CHECK(t.is_contiguous(), "unscale_and_check_: tensors must be contiguous (they are scaled in place)");
        cuda::unscale_and_check(t.dtype(), t.raw_data(), t.numel(), static_cast<float>(inv_scale), flag.data<int32_t>());
      }
      return flag.item() != 0;
    }
  }
  for (const Tensor& t : tensors) {
    check_inputs("unscale_and_check_", {&tensors.front(), &t});
    check_float_dtype("unscale_and_check_", {&t});
    HT_CHECK(t.is_contiguous(), "unscale_and_check_: tensors must be contiguous (they are scaled in place)");
    found |= HT_DISPATCH_FLOAT(t.dtype(), "unscale_and_check_", t.device(),
                               [&] { return cpu::unscale_and_check(t.data<scalar_t>(), t.numel(), inv_scale); });
  }
  return found;
}

}  // namespace hetu::ops
