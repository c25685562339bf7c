// The fused LM head + cross-entropy (ops::linear_cross_entropy) on the GPU against the CPU
// op on the same dtype-rounded inputs in f32: loss (f32 on the GPU), dhidden and dweight
// (the inputs' dtype; dweight accumulates in f32 over the chunks), f32 and bf16, i32 and i64
// targets, padding rows of the weight, ignored rows, a ragged last chunk and the default
// chunk size; and nn::parallel_linear_cross_entropy over 2 ranks that are threads sharing
// cuda:0 against the unfused single-device loss on the CPU. See Note [CUDA parity tolerances].
#include "lib/autograd/functions.h"
#include "lib/ops/ops.h"
#include "tests/cuda/cuda_test_utils.h"
#include "tests/nn/parallel_cross_entropy_case.h"

using namespace hetu;
using namespace hetu::test;

namespace {

Tensor test_targets(int64_t N, int64_t V) {
  std::vector<int64_t> t(static_cast<size_t>(N));
  for (size_t i = 0; i < t.size(); ++i) t[i] = i % 7 == 3 ? -100 : static_cast<int64_t>((i * 389) % static_cast<size_t>(V));
  return tensor_from(t, {N});
}

}  // namespace

TEST_CASE("cuda ops: linear_cross_entropy matches the CPU op", "[cuda]") {
  HT_REQUIRE_GPU();
  const int64_t N = 67, C = 64, V = 1000, vocab = 997;  // 3 padding rows
  const Tensor h = random_cpu({N, C}, 500, -1, 1), w = random_cpu({V, C}, 501, -1, 1);
  for (DType idt : {DType::i32, DType::i64}) {
    const Tensor targets = test_targets(N, vocab).to(idt);
    for (DType dt : kGpuDtypes) {
      for (int64_t chunk : {int64_t{16}, int64_t{0}}) {
        const std::string what = std::string(to_string(dt)) + " targets " + std::string(to_string(idt)) + " chunk " +
                                 std::to_string(chunk);
        ops::LinearCrossEntropyOptions o;
        o.vocab = vocab;
        o.chunk_rows = chunk;
        const ops::LinearCrossEntropyResult g = ops::linear_cross_entropy(gpu(h, dt), gpu(w, dt), targets.to(kGpu), o);
        const ops::LinearCrossEntropyResult r = ops::linear_cross_entropy(rounded(h, dt), rounded(w, dt), targets, o);
        CHECK(g.count == r.count);
        CHECK(g.loss.dtype() == DType::f32);
        CHECK(g.dweight.dtype() == dt);
        check_close(g.loss.reshape({1}), r.loss.reshape({1}), tolerance(DType::f32), "loss " + what);
        check_close(g.dhidden, r.dhidden, tolerance(dt), "dhidden " + what);
        check_close(g.dweight, r.dweight, tolerance(dt), "dweight " + what);
      }
    }
  }
}

TEST_CASE("cuda: parallel_linear_cross_entropy over threads sharing one GPU matches one device", "[cuda]") {
  HT_REQUIRE_GPU();
  const int64_t N = 45, C = 32, V = 301, tp = 2, Vl = (V + tp - 1) / tp;
  const Tensor h = random_cpu({N, C}, 502, -1, 1), w = random_cpu({V, C}, 503, -1, 1);
  const Tensor targets = test_targets(N, V);
  for (DType dt : kGpuDtypes) {
    // The reference: the unfused head and loss on the CPU in f64 over the rounded inputs.
    Tensor hr = rounded(h, dt).to(DType::f64), wr = rounded(w, dt).to(DType::f64);
    hr.set_requires_grad(true);
    wr.set_requires_grad(true);
    const Tensor ref = autograd::cross_entropy(autograd::matmul(hr, wr, false, true), targets);
    autograd::backward(ref);
    std::vector<double> loss(static_cast<size_t>(tp));
    std::vector<Tensor> dh(static_cast<size_t>(tp)), dw(static_cast<size_t>(tp));
    ThreadGroup(tp).run([&](int64_t r, Communicator& comm) {
      const nn::TensorParallel parallel(&comm, DeviceGroup::range(0, tp), r, nn::group_placements({}, DeviceGroup::range(0, tp)));
      Tensor hl = gpu(h, dt), wl = gpu(padded_shard(w.transpose(0, 1).contiguous(), r, Vl).transpose(0, 1).contiguous(), dt);
      hl.set_requires_grad(true);
      wl.set_requires_grad(true);
      const Tensor l = nn::parallel_linear_cross_entropy(hl, wl, targets.to(kGpu), r * Vl, V, &parallel);
      loss[static_cast<size_t>(r)] = l.item();
      autograd::backward(l, full(l.shape(), r == 0 ? 1.0 : 0.0, l.dtype(), l.device()));
      dh[static_cast<size_t>(r)] = hl.grad().to(Device::cpu()).to(DType::f64);
      dw[static_cast<size_t>(r)] = wl.grad().to(Device::cpu()).to(DType::f64);
    });
    const std::string what(to_string(dt));
    for (int64_t r = 0; r < tp; ++r) {
      check_close(tensor_from(std::vector<double>{loss[static_cast<size_t>(r)]}, {1}),
                  tensor_from(std::vector<double>{ref.item()}, {1}), tolerance(DType::f32), "loss " + what);
      const int64_t real = std::min(Vl, V - r * Vl);
      check_close(dw[static_cast<size_t>(r)].narrow(0, 0, real), wr.grad().narrow(0, r * Vl, real), tolerance(dt),
                  "dweight " + what);
    }
    check_close(ops::add(dh[0], dh[1]), hr.grad(), tolerance(dt), "dhidden (sum of the ranks' partials) " + what);
  }
}
