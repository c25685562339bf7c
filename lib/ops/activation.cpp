// Public activation ops (gelu, silu and their fused backward): argument checks, contiguous
// inputs, output allocation, then the CPU kernel for the dtype. Output shape = x's shape.
//   dx = gelu_backward(grad, x)  with grad, x, dx all of x's shape.
#include "lib/ops/cpu/activation.h"
#include "lib/ops/cuda/activation.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {
namespace {

// cuda_kernel(dtype, out, x, n): the CUDA launcher (lib/ops/cuda/activation.h).
template <typename Kernel, typename CudaKernel>
Tensor unary(const char* op, const Tensor& x_in, Kernel kernel, CudaKernel cuda_kernel) {
  if (stores_f16({&x_in})) return narrowed(unary(op, widened(x_in), kernel, cuda_kernel));
  check_inputs(op, {&x_in}, Backends::cpu_and_cuda);
  check_float_dtype(op, {&x_in});
  const Tensor x = x_in.contiguous();
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(x.device());
      cuda_kernel(x.dtype(), out.raw_data(), x.raw_data(), x.numel());
      return out;
    }
  }
  HT_DISPATCH_FLOAT(x.dtype(), op, x.device(), [&] { kernel(out.data<scalar_t>(), x.data<scalar_t>(), x.numel()); });
  return out;
}

template <typename Kernel, typename CudaKernel>
Tensor backward(const char* op, const Tensor& grad_in, const Tensor& x_in, Kernel kernel, CudaKernel cuda_kernel) {
  if (stores_f16({&grad_in, &x_in})) return narrowed(backward(op, widened(grad_in), widened(x_in), kernel, cuda_kernel));
  check_inputs(op, {&grad_in, &x_in}, Backends::cpu_and_cuda);
  check_float_dtype(op, {&grad_in, &x_in});
  HT_CHECK(grad_in.shape() == x_in.shape(), "{}: grad shape {} differs from x shape {}", op,
           shape_str(grad_in.shape()), shape_str(x_in.shape()));
  const Tensor grad = grad_in.contiguous();
  const Tensor x = x_in.contiguous();
  Tensor dx = empty(x.shape(), x.dtype(), x.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(x.device());
      cuda_kernel(x.dtype(), dx.raw_data(), grad.raw_data(), x.raw_data(), x.numel());
      return dx;
    }
  }
  HT_DISPATCH_FLOAT(x.dtype(), op, x.device(), [&] {
    kernel(dx.data<scalar_t>(), grad.data<scalar_t>(), x.data<scalar_t>(), x.numel());
  });
  return dx;
}

}  // namespace

Tensor gelu(const Tensor& x) {
  return unary("gelu", x, [](auto* out, const auto* in, int64_t n) { cpu::gelu_forward(out, in, n); },
               [](auto... args) { cuda::gelu_forward(args...); });
}

Tensor gelu_backward(const Tensor& grad, const Tensor& x) {
  return backward("gelu_backward", grad, x,
                  [](auto* dx, const auto* g, const auto* in, int64_t n) { cpu::gelu_backward(dx, g, in, n); },
                  [](auto... args) { cuda::gelu_backward(args...); });
}

Tensor silu(const Tensor& x) {
  return unary("silu", x, [](auto* out, const auto* in, int64_t n) { cpu::silu_forward(out, in, n); },
               [](auto... args) { cuda::silu_forward(args...); });
}

Tensor silu_backward(const Tensor& grad, const Tensor& x) {
  return backward("silu_backward", grad, x,
                  [](auto* dx, const auto* g, const auto* in, int64_t n) { cpu::silu_backward(dx, g, in, n); },
                  [](auto... args) { cuda::silu_backward(args...); });
}

}  // namespace hetu::ops
