// CUDA matmul through cuBLAS (cublasGemmStridedBatchedEx). cuBLAS is column-major: the
// row-major product C = op(A) op(B) is computed as Cᵀ = op(B)ᵀ op(A)ᵀ, which reads the same
// memory with no copies. f32 uses CUBLAS_COMPUTE_32F (IEEE f32, like the CPU; set
// HETU_CUDA_TF32=1 for TF32 tensor cores); bf16 and f16 inputs use CUBLAS_COMPUTE_32F on tensor
// cores. One cuBLAS handle per device, with a 32 MiB workspace from the caching allocator.
// Batch dims that cannot be walked with one stride (broadcast mixed with real dims) are
// materialised first.
#include "lib/ops/cuda/matmul.h"

#include <cublas_v2.h>

#include <array>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "lib/core/cuda/cuda_check.h"
#include "lib/core/cuda_runtime.h"
#include "lib/core/dispatch.h"
#include "lib/ops/cpu/matmul.h"

namespace hetu::ops::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

cublasHandle_t handle() {
  static std::mutex mutex;
  static std::array<cublasHandle_t, 64> handles{};
  const int device = hetu::cuda::current_device();
  HT_CHECK(device >= 0 && device < 64, "cuBLAS: bad current device {}", device);
  std::lock_guard<std::mutex> lock(mutex);
  cublasHandle_t& h = handles[static_cast<size_t>(device)];
  if (h == nullptr) {
    HT_CUBLAS_CHECK(cublasCreate(&h));
    HT_CUBLAS_CHECK(cublasSetWorkspace(h, hetu::cuda::scratch_allocate(kWorkspaceBytes), kWorkspaceBytes));
  }
  HT_CUBLAS_CHECK(cublasSetStream(h, hetu::cuda::stream()));
  return h;
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: op_not_implemented("matmul", Device::cuda(hetu::cuda::current_device()), dtype);
  }
}

int as_int(int64_t v, const char* what) {
  HT_CHECK(v >= 0 && v <= INT_MAX, "matmul: {} = {} does not fit cuBLAS's int", what, v);
  return static_cast<int>(v);
}

// One stride that walks every batch dim of t (row-major over `batch`), if there is one.
std::optional<int64_t> batch_stride(const Tensor& t, const Shape& batch) {
  std::optional<int64_t> stride;
  int64_t expected = 0;
  for (size_t d = batch.size(); d-- > 0;) {
    if (batch[d] == 1) continue;
    const int64_t s = t.strides()[d];
    if (!stride) {
      stride = s;
      expected = s * batch[d];
    } else {
      if (s != expected) return std::nullopt;
      expected = s * batch[d];
    }
  }
  return stride.value_or(0);
}

}  // namespace

void gemm(DType in_dtype, DType out_dtype, int64_t M, int64_t N, int64_t K, float alpha, const GemmOperand& a,
          const GemmOperand& b, float beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  static const bool tf32 = [] {
    const char* env = std::getenv("HETU_CUDA_TF32");
    return env != nullptr && env[0] == '1';
  }();
  const cublasComputeType_t compute =
      in_dtype == DType::f32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  // Column-major: C_colᵀ (N×M) = op(B)ᵀ op(A)ᵀ; B's memory seen column-major is op-free Bᵀ.
  HT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle(), b.trans ? CUBLAS_OP_T : CUBLAS_OP_N, a.trans ? CUBLAS_OP_T : CUBLAS_OP_N, as_int(N, "N"),
      as_int(M, "M"), as_int(K, "K"), &alpha, b.ptr, cuda_type(in_dtype), as_int(b.ld, "ldb"), b.batch_stride, a.ptr,
      cuda_type(in_dtype), as_int(a.ld, "lda"), a.batch_stride, &beta, c, cuda_type(out_dtype), as_int(ldc, "ldc"),
      stride_c, as_int(batch, "batch"), compute, CUBLAS_GEMM_DEFAULT));
}

void matmul(const Tensor& a_in, const Tensor& b_in, bool trans_a, bool trans_b, const Tensor& out) {
  hetu::cuda::DeviceGuard guard(out.device());
  const int64_t M = out.size(-2), N = out.size(-1);
  const int64_t K = trans_a ? a_in.size(-2) : a_in.size(-1);
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  const int64_t count = shape_numel(batch);
  if (out.numel() == 0) return;
  if (K == 0) {
    HT_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, static_cast<size_t>(out.numel()) * dtype_size(out.dtype()),
                                  hetu::cuda::stream()));
    return;
  }
  auto operand = [&](const Tensor& t_in, bool trans) {
    std::optional<int64_t> stride = batch_stride(t_in, batch);
    const Tensor t = stride ? t_in : t_in.contiguous();
    if (!stride) stride = batch_stride(t, batch);
    const std::optional<cpu::MatrixLayout> layout = cpu::blas_layout(t);
    HT_CHECK(layout && stride, "matmul: internal error: operand strides not cuBLAS-compatible");
    // A column-major matrix is the row-major storage of its transpose, same ld.
    return std::make_pair(t, GemmOperand{t.raw_data(), layout->ld, *stride, trans != layout->transposed_in_memory});
  };
  const auto [a, ga] = operand(a_in, trans_a);
  const auto [b, gb] = operand(b_in, trans_b);
  gemm(a.dtype(), out.dtype(), M, N, K, 1.0f, ga, gb, 0.0f, out.raw_data(), N, M * N, count);
}

}  // namespace hetu::ops::cuda
