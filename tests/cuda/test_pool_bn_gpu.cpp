// Pooling and batch norm on a real GPU (cuda:0) against the CPU ops in float64, at sizes where
// batch norm splits each channel over many blocks and reads vectors. Part of the `gpu`
// executable, skipped without a usable device.
#include <doctest/doctest.h>

#include "cuda/cuda_test_util.h"
#include "ops/batch_norm.h"
#include "ops/pool2d.h"

namespace ember::test {

namespace {
Device cuda0() {
  return Device(DeviceType::CUDA, 0);
}
Tensor ref(const Tensor& t) {
  return t.defined() ? t.cpu().to(kFloat64).clone() : t;
}
}  // namespace

TEST_CASE("cuda pooling matches the cpu") {
  std::mt19937 g(fresh_seed());
  for (DType t : {kFloat32, kFloat64}) {
    CAPTURE(t);
    const double rtol = t == kFloat32 ? 1e-5 : 1e-12;
    const Tensor x = random_operand({4, 7, 29, 31}, t, Layout::transposed, -2, 2, g, 0.0, cuda0());
    ops::MaxPool2dParams mp;
    mp.kernel = {3, 3}, mp.stride = {2, 2}, mp.padding = {1, 1}, mp.dilation = {2, 1};
    mp.ceil_mode = true;
    const auto [y, idx] = ops::max_pool2d(x, mp);
    const auto [ry, ridx] = ops::max_pool2d(ref(x), mp);
    check_close(y, ry, 0, 0);
    CHECK(idx.to_vector<int64_t>() == ridx.to_vector<int64_t>());
    const Tensor dy = random_operand(y.shape(), t, Layout::contiguous, -1, 1, g, 0.0, cuda0());
    check_close(ops::max_pool2d_backward(dy, idx, x.shape()),
                ops::max_pool2d_backward(ref(dy), ridx, x.shape()), rtol, 1e-6);
    ops::AvgPool2dParams ap;
    ap.kernel = {3, 2}, ap.stride = {2, 3}, ap.padding = {1, 1}, ap.ceil_mode = true;
    ap.count_include_pad = false;
    const Tensor ya = ops::avg_pool2d(x, ap);
    check_close(ya, ops::avg_pool2d(ref(x), ap), rtol, 1e-6);
    const Tensor da = random_operand(ya.shape(), t, Layout::contiguous, -1, 1, g, 0.0, cuda0());
    check_close(ops::avg_pool2d_backward(da, x.shape(), ap),
                ops::avg_pool2d_backward(ref(da), x.shape(), ap), rtol, 1e-6);
    const Tensor yd = ops::adaptive_avg_pool2d(x, {5, 3});
    check_close(yd, ops::adaptive_avg_pool2d(ref(x), {5, 3}), rtol, 1e-6);
    check_close(ops::adaptive_avg_pool2d_backward(yd, x.shape()),
                ops::adaptive_avg_pool2d_backward(ref(yd), x.shape()), rtol, 1e-6);
  }
}

TEST_CASE("cuda batch norm matches the cpu in training and eval") {
  std::mt19937 g(fresh_seed());
  for (DType t : {kFloat32, kFloat64}) {
    for (const Shape& shape : {Shape{16, 8, 64, 64}, Shape{8, 5, 33, 35}, Shape{4096, 3}}) {
      CAPTURE(t);
      CAPTURE(shape);
      const double tol = t == kFloat32 ? 2e-5 : 1e-11;
      const int64_t c = shape[1];
      const Tensor x = random_operand(shape, t, Layout::contiguous, -1, 3, g, 0.0, cuda0());
      const Tensor w = random_operand({c}, t, Layout::contiguous, 0.5, 2, g, 0.0, cuda0());
      const Tensor b = random_operand({c}, t, Layout::contiguous, -1, 1, g, 0.0, cuda0());
      Tensor rm = zeros({c}, {t, cuda0()}), rv = ones({c}, {t, cuda0()});
      Tensor rrm = ref(rm), rrv = ref(rv);
      for (bool training : {true, false}) {
        CAPTURE(training);
        const ops::BatchNormOutput got = ops::batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5);
        const ops::BatchNormOutput want =
            ops::batch_norm(ref(x), ref(w), ref(b), rrm, rrv, training, 0.1, 1e-5);
        check_close(got.out, want.out, tol, tol);
        check_close(rm, rrm, tol, tol);
        check_close(rv, rrv, tol, tol);
        const Tensor dy = random_operand(shape, t, Layout::contiguous, -1, 1, g, 0.0, cuda0());
        const ops::BatchNormGrads gg = ops::batch_norm_backward(
            dy, x, w, got.save_mean, got.save_invstd, training, true, true, true);
        const ops::BatchNormGrads wg = ops::batch_norm_backward(
            ref(dy), ref(x), ref(w), want.save_mean, want.save_invstd, training, true, true, true);
        check_close(gg.grad_input, wg.grad_input, tol, tol * 10);
        check_close(gg.grad_weight, wg.grad_weight, tol, tol * 10);
        check_close(gg.grad_bias, wg.grad_bias, tol, tol * 10);
      }
    }
  }
}

}  // namespace ember::test
