// CUDA kernels against the CPU kernels on random data, forward and backward, f32, bf16 and f16:
// elementwise, activations, reductions, softmax, layer_norm, rms_norm, matmul. Tolerances:
// see Note [CUDA parity tolerances] in cuda_test_utils.h.
#include "lib/ops/ops.h"
#include "tests/cuda/cuda_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {
std::string dname(DType d) { return std::string(to_string(d)); }
}  // namespace

TEST_CASE("cuda ops: broadcasting binary ops, unary math, relu backward", "[cuda]") {
  HT_REQUIRE_GPU();
  const Tensor a = random_cpu({4, 1, 5}, 10), b = random_cpu({3, 5}, 11, 0.5, 2.0), p = random_cpu({257}, 12, 0.1, 3);
  for (DType dt : kGpuDtypes) {
    const Tensor ra = rounded(a, dt), rb = rounded(b, dt), rp = rounded(p, dt);
    const Tensor ga = gpu(a, dt), gb = gpu(b, dt), gp = gpu(p, dt);
    const Tolerance tol = tolerance(dt);
    check_close(ops::add(ga, gb), ops::add(ra, rb), tol, "add " + dname(dt));
    check_close(ops::sub(gb, ga), ops::sub(rb, ra), tol, "sub " + dname(dt));
    check_close(ops::mul(ga, gb), ops::mul(ra, rb), tol, "mul " + dname(dt));
    check_close(ops::div(ga, gb), ops::div(ra, rb), tol, "div " + dname(dt));
    check_close(ops::add(gb.transpose(0, 1), gb.transpose(0, 1)), ops::add(rb.transpose(0, 1), rb.transpose(0, 1)), tol,
                "add strided " + dname(dt));
    check_close(ops::add_scalar(gp, 0.5), ops::add_scalar(rp, 0.5), tol, "add_scalar " + dname(dt));
    check_close(ops::mul_scalar(gp, -3.0), ops::mul_scalar(rp, -3.0), tol, "mul_scalar " + dname(dt));
    check_close(ops::neg(gp), ops::neg(rp), tol, "neg " + dname(dt));
    check_close(ops::exp(gp), ops::exp(rp), tol, "exp " + dname(dt));
    check_close(ops::log(gp), ops::log(rp), tol, "log " + dname(dt));
    check_close(ops::sqrt(gp), ops::sqrt(rp), tol, "sqrt " + dname(dt));
    check_close(ops::rsqrt(gp), ops::rsqrt(rp), tol, "rsqrt " + dname(dt));
    check_close(ops::tanh(ga), ops::tanh(ra), tol, "tanh " + dname(dt));
    check_close(ops::relu(ga), ops::relu(ra), tol, "relu " + dname(dt));
    const Tensor g = random_cpu({4, 1, 5}, 13);
    check_close(ops::relu_backward(gpu(g, dt), ga), ops::relu_backward(rounded(g, dt), ra), tol,
                "relu_backward " + dname(dt));
  }
}

TEST_CASE("cuda ops: gelu and silu, forward and backward", "[cuda]") {
  HT_REQUIRE_GPU();
  const Tensor x = random_cpu({3, 1001}, 20, -4, 4), g = random_cpu({3, 1001}, 21);
  for (DType dt : kGpuDtypes) {
    const Tensor rx = rounded(x, dt), rg = rounded(g, dt), gx = gpu(x, dt), gg = gpu(g, dt);
    const Tolerance tol = tolerance(dt);
    check_close(ops::gelu(gx), ops::gelu(rx), tol, "gelu " + dname(dt));
    check_close(ops::gelu_backward(gg, gx), ops::gelu_backward(rg, rx), tol, "gelu_backward " + dname(dt));
    check_close(ops::silu(gx), ops::silu(rx), tol, "silu " + dname(dt));
    check_close(ops::silu_backward(gg, gx), ops::silu_backward(rg, rx), tol, "silu_backward " + dname(dt));
    // An offset (unaligned) view takes the scalar path.
    check_close(ops::gelu(gx.narrow(1, 1, 999)), ops::gelu(rx.narrow(1, 1, 999)), tol, "gelu unaligned " + dname(dt));
  }
}

TEST_CASE("cuda ops: sum, mean, max with argmax, max backward", "[cuda]") {
  HT_REQUIRE_GPU();
  const Tensor x = random_cpu({6, 37, 9}, 30), big = random_cpu({3, 600000}, 31);
  for (DType dt : kGpuDtypes) {
    const Tensor rx = rounded(x, dt), gx = gpu(x, dt);
    Tolerance tol = tolerance(dt);
    check_close(ops::sum(gx), ops::sum(rx), tol, "sum all " + dname(dt));
    check_close(ops::sum(gx, {0}), ops::sum(rx, {0}), tol, "sum dim 0 " + dname(dt));
    check_close(ops::sum(gx, {1, 2}, true), ops::sum(rx, {1, 2}, true), tol, "sum dims 1,2 " + dname(dt));
    check_close(ops::mean(gx, {-1}), ops::mean(rx, {-1}), tol, "mean " + dname(dt));
    check_close(ops::sum(gpu(big, dt), {1}), ops::sum(rounded(big, dt), {1}), tol, "sum long rows " + dname(dt));
    // More rows than one launch of 65536 blocks covers (8 rows per block): the grid-stride loop.
    check_close(ops::sum(gpu(big, dt).view({-1, 3}), {1}), ops::sum(rounded(big, dt).view({-1, 3}), {1}), tol,
                "sum 600000 short rows " + dname(dt));
    check_close(ops::sum(gpu(big, dt), {0}), ops::sum(rounded(big, dt), {0}), tol, "sum over dim 0 " + dname(dt));
    Tensor gi, ri;
    check_close(ops::max(gx, 1, false, &gi), ops::max(rx, 1, false, &ri), tol, "max " + dname(dt));
    CHECK(to_vector(gi) == to_vector(ri));
    const Tensor g = random_cpu({6, 9}, 32);
    check_close(ops::max_backward(gpu(g, dt), gi, 1, x.shape()), ops::max_backward(rounded(g, dt), ri, 1, x.shape()),
                tol, "max_backward " + dname(dt));
  }
}

TEST_CASE("cuda ops: softmax and log_softmax, forward and backward", "[cuda]") {
  HT_REQUIRE_GPU();
  for (int64_t C : {int64_t{7}, int64_t{1000}, int64_t{5003}}) {
    const Tensor x = random_cpu({9, C}, 40, -5, 5), g = random_cpu({9, C}, 41);
    for (DType dt : kGpuDtypes) {
      const std::string what = " C=" + std::to_string(C) + " " + dname(dt);
      const Tensor rx = rounded(x, dt), rg = rounded(g, dt), gx = gpu(x, dt), gg = gpu(g, dt);
      const Tolerance tol = tolerance(dt);
      const Tensor y = ops::softmax(rx), ly = ops::log_softmax(rx);
      check_close(ops::softmax(gx), y, tol, "softmax" + what);
      check_close(ops::log_softmax(gx), ly, tol, "log_softmax" + what);
      check_close(ops::softmax_backward(gg, gpu(y, dt)), ops::softmax_backward(rg, rounded(y, dt)), tol,
                  "softmax_backward" + what);
      check_close(ops::log_softmax_backward(gg, gpu(ly, dt)), ops::log_softmax_backward(rg, rounded(ly, dt)), tol,
                  "log_softmax_backward" + what);
    }
  }
}

TEST_CASE("cuda ops: layer_norm and rms_norm, forward and backward", "[cuda]") {
  HT_REQUIRE_GPU();
  for (int64_t C : {int64_t{37}, int64_t{768}, int64_t{2050}}) {
    const Tensor x = random_cpu({2, 33, C}, 50, -2, 3), g = random_cpu({2, 33, C}, 51);
    const Tensor w = random_cpu({C}, 52, 0.5, 1.5), b = random_cpu({C}, 53);
    for (DType dt : kGpuDtypes) {
      const std::string what = " C=" + std::to_string(C) + " " + dname(dt);
      const Tensor rx = rounded(x, dt), rg = rounded(g, dt), rw = rounded(w, dt), rb = rounded(b, dt);
      const Tensor gx = gpu(x, dt), gg = gpu(g, dt), gw = gpu(w, dt), gb = gpu(b, dt);
      const Tolerance tol = tolerance(dt);
      const Tolerance stat_tol = tolerance(DType::f32);  // statistics are f32 on both sides
      const ops::LayerNormResult ref = ops::layer_norm(rx, rw, rb, 1e-5);
      const ops::LayerNormResult out = ops::layer_norm(gx, gw, gb, 1e-5);
      CHECK(out.mean.dtype() == DType::f32);
      check_close(out.out, ref.out, tol, "layer_norm out" + what);
      check_close(out.mean, ref.mean, stat_tol, "layer_norm mean" + what);
      check_close(out.rstd, ref.rstd, stat_tol, "layer_norm rstd" + what);
      const ops::LayerNormGrads rgr = ops::layer_norm_backward(rg, rx, rw, ref.mean, ref.rstd);
      const ops::LayerNormGrads ggr = ops::layer_norm_backward(gg, gx, gw, out.mean, out.rstd);
      check_close(ggr.dx, rgr.dx, tol, "layer_norm dx" + what);
      check_close(ggr.dweight, rgr.dweight, tol, "layer_norm dweight" + what);
      check_close(ggr.dbias, rgr.dbias, tol, "layer_norm dbias" + what);

      const ops::RmsNormResult rref = ops::rms_norm(rx, rw, 1e-6);
      const ops::RmsNormResult rout = ops::rms_norm(gx, gw, 1e-6);
      check_close(rout.out, rref.out, tol, "rms_norm out" + what);
      check_close(rout.rstd, rref.rstd, stat_tol, "rms_norm rstd" + what);
      const ops::RmsNormGrads rrg = ops::rms_norm_backward(rg, rx, rw, rref.rstd);
      const ops::RmsNormGrads grg = ops::rms_norm_backward(gg, gx, gw, rout.rstd);
      check_close(grg.dx, rrg.dx, tol, "rms_norm dx" + what);
      check_close(grg.dweight, rrg.dweight, tol, "rms_norm dweight" + what);
    }
  }
}

TEST_CASE("cuda ops: matmul and linear on cuBLAS, transposes, batches, broadcast weights", "[cuda]") {
  HT_REQUIRE_GPU();
  for (DType dt : kGpuDtypes) {
    const Tolerance tol = tolerance(dt);
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const Tensor a = random_cpu(ta ? Shape{53, 37} : Shape{37, 53}, 60);
        const Tensor b = random_cpu(tb ? Shape{29, 53} : Shape{53, 29}, 61);
        check_close(ops::matmul(gpu(a, dt), gpu(b, dt), ta, tb), ops::matmul(rounded(a, dt), rounded(b, dt), ta, tb),
                    tol, "matmul 2-d ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " " + dname(dt));
      }
    }
    const Tensor x = random_cpu({3, 17, 64}, 62), w = random_cpu({48, 64}, 63);
    check_close(ops::matmul(gpu(x, dt), gpu(w, dt), false, true), ops::matmul(rounded(x, dt), rounded(w, dt), false, true),
                tol, "matmul linear " + dname(dt));
    const Tensor bias = random_cpu({48}, 67);
    check_close(ops::linear(gpu(x, dt), gpu(w, dt), gpu(bias, dt)), ops::linear(rounded(x, dt), rounded(w, dt), rounded(bias, dt)),
                tol, "linear with bias " + dname(dt));
    check_close(ops::linear(gpu(x, dt), gpu(w, dt), Tensor()), ops::linear(rounded(x, dt), rounded(w, dt), Tensor()), tol,
                "linear without bias " + dname(dt));
    const Tensor res = random_cpu({3, 17, 48}, 68);
    check_close(ops::linear(gpu(x, dt), gpu(w, dt), gpu(bias, dt), gpu(res, dt)),
                ops::linear(rounded(x, dt), rounded(w, dt), rounded(bias, dt), rounded(res, dt)), tol,
                "linear with bias and residual " + dname(dt));
    const Tensor q = random_cpu({2, 3, 11, 16}, 64), k = random_cpu({2, 3, 13, 16}, 65);
    check_close(ops::matmul(gpu(q, dt), gpu(k, dt), false, true), ops::matmul(rounded(q, dt), rounded(k, dt), false, true),
                tol, "matmul 4-d batch " + dname(dt));
    // A transposed view operand and a broadcast batch operand (materialised).
    const Tensor m = random_cpu({2, 1, 16, 11}, 66);
    check_close(ops::matmul(gpu(q, dt), gpu(m, dt).transpose(-1, -2), false, true),
                ops::matmul(rounded(q, dt), rounded(m, dt).transpose(-1, -2), false, true), tol,
                "matmul broadcast view " + dname(dt));
  }
}
