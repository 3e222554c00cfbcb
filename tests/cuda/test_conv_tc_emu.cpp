// The Tensor Core implicit-GEMM convolution (conv2d_tc, kernels/cuda/conv2d_tc.cu) on emu() in
// every thread order: forward with bias, backward-data and backward-filter (float32 out), float16
// and bfloat16, against the float64 convolution of the same rounded inputs (conv_reference).
// Budgets, relative RMS: 1e-5 for float32 results, 3e-4 for float16, 2.5e-3 for bfloat16; every
// element within half an ulp of its dtype plus float32's accumulation over its terms. Also: the
// registry ranks implicit_gemm_tc first for half keys on emu and widened_f32 on the cpu (Note
// [Half convolutions] in ops/conv2d_half.cpp), a forced algorithm runs on widened copies, and the
// cpu says it has no Tensor Cores. Every case of
// ops/conv_test_util.h also runs through here in tests/spec/conv2d_half.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>

#include "cuda/cuda_test_util.h"
#include "kernels/kernel_table.h"
#include "ops/conv2d.h"
#include "ops/conv_test_util.h"
#include "runtime/env.h"

namespace ember::test {
namespace {

using kernels::ConvDirection;

void check_budget(const Tensor& got, DType t, const std::vector<double>& want,
                  const std::vector<double>& abs_sum) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  double err2 = 0, want2 = 0;
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double tol = half_ulp(want[i], t) + 16 * 1.2e-7 * abs_sum[i] + 1e-30;
    err2 += (g[i] - want[i]) * (g[i] - want[i]), want2 += want[i] * want[i];
    if (!(std::abs(g[i] - want[i]) <= tol) && bad++ < 5)
      FAIL_CHECK("element ", i, ": got ", g[i], ", want ", want[i], " (tolerance ", tol, ")");
  }
  const double budget = t == kFloat32 ? 1e-5 : t == kFloat16 ? 3e-4 : 2.5e-3;
  if (g.size() >= 256) {
    CAPTURE(std::sqrt(err2 / want2));
    CHECK(std::sqrt(err2 / want2) <= budget);
  }
}

kernels::ConvShape shape_of(const ConvCase& cs) {
  return ops::conv2d_key(ConvDirection::forward, {cs.n, cs.c, cs.h, cs.w},
                         {cs.k, cs.c / cs.p.groups, cs.r, cs.s}, kFloat16, emu(), cs.p)
      .shape;
}

// Enough outputs for the RMS budget; K-tiles ragged; strides, padding, dilation and groups; a
// 128-row tile's worth of pixels; a filter row length (C*R*S = 72) that cp.async copies.
const ConvCase kCases[] = {
    {"3x3 pad 1, 24 filters", 2, 5, 9, 11, 24, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
    {"C*R*S = 72 (cp.async rows)", 2, 8, 8, 8, 16, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
    {"stride 2, dilation 2, groups 2", 2, 6, 13, 12, 10, 3, 3, conv_params(2, 2, 2, 2, 2, 2, 2)},
    {"1x1, 40 channels", 3, 40, 6, 7, 12, 1, 1, conv_params(1, 1, 0, 0, 1, 1, 1)},
    {"5x3 asymmetric", 1, 3, 12, 10, 7, 5, 3, conv_params(1, 2, 2, 1, 1, 1, 1)},
};

}  // namespace

TEST_CASE("conv2d_tc: every direction in float16 and bfloat16 within the budgets") {
  std::mt19937 g(fresh_seed());
  const Device dev = emu();
  const auto& table = kernels_for(dev);
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const ConvCase& cs : kCases) {
      CAPTURE(std::string(cs.name));
      const kernels::ConvShape s = shape_of(cs);
      const Shape xs{s.n, s.c, s.h, s.w}, ws{s.k, s.cg(), s.r, s.s}, ys{s.n, s.k, s.oh, s.ow};
      for (DType t : {kFloat16, kBFloat16}) {
        CAPTURE(t);
        REQUIRE(std::string(table.conv2d_tc_supports(t, s, ConvDirection::forward)).empty());
        const Tensor x = random_tensor(xs, t, -1, 1, g).to(dev);
        const Tensor w = random_tensor(ws, t, -1, 1, g).to(dev);
        const Tensor b = random_tensor({s.k}, t, -1, 1, g).to(dev);
        const Tensor dy = random_tensor(ys, t, -1, 1, g).to(dev);
        const ConvRef ref =
            conv_reference(cs, x.to_vector<double>(), w.to_vector<double>(), b.to_vector<double>(),
                           dy.to_vector<double>(), s.oh, s.ow);
        const gpu::Stream stream = gpu::current_stream(dev);
        Tensor y = empty(ys, {t, dev}), dx = empty(xs, {t, dev}), dw = empty(ws, {kFloat32, dev});
        table.conv2d_tc(t, s, ConvDirection::forward, x.data_ptr(), w.data_ptr(), b.data_ptr(),
                        y.data_ptr(), stream);
        table.conv2d_tc(t, s, ConvDirection::backward_data, dy.data_ptr(), w.data_ptr(), nullptr,
                        dx.data_ptr(), stream);
        table.conv2d_tc(t, s, ConvDirection::backward_filter, dy.data_ptr(), x.data_ptr(), nullptr,
                        dw.data_ptr(), stream);
        check_budget(y, t, ref.y, ref.y_abs);
        check_budget(dx, t, ref.dx, ref.dx_abs);
        check_budget(dw, kFloat32, ref.dw, ref.dw_abs);
      }
    }
  }
}

namespace {

// The name of the candidate the registry ranks first for `key`, and that candidate's reason.
std::pair<std::string, std::string> chosen(const ops::ConvKey& key) {
  const ops::ConvSelection sel = ops::explain_conv_algos(key);
  for (const ops::ConvCandidate& c : sel.candidates)
    if (c.chosen) return {c.name, c.reason};
  return {"", sel.reason};
}

}  // namespace

TEST_CASE(
    "half convolutions: implicit_gemm_tc on the GPU, widened_f32 on the cpu and when forced") {
  std::mt19937 g(fresh_seed());
  const Device dev = emu();
  const bool cudnn_usable = collect_env_report().cudnn_usable;
  const ConvCase& cs = kCases[0];
  const kernels::ConvShape s = shape_of(cs);
  const Shape xs{s.n, s.c, s.h, s.w}, ws{s.k, s.c, s.r, s.s};
  const Tensor x = random_tensor(xs, kFloat16, -1, 1, g).to(dev);
  const Tensor w = random_tensor(ws, kFloat16, -1, 1, g).to(dev);
  const ConvRef ref =
      conv_reference(cs, x.to_vector<double>(), w.to_vector<double>(), {}, {}, s.oh, s.ow);
  for (ConvDirection d :
       {ConvDirection::forward, ConvDirection::backward_data, ConvDirection::backward_filter}) {
    CAPTURE(kernels::conv_direction_name(d));
    const ops::ConvKey key = ops::conv2d_key(d, xs, ws, kFloat16, dev, cs.p);
    CHECK(key.math == ops::ConvMathMode::tensor_op);
    // On a GPU with cuDNN, the heuristic ranks cuDNN's half engines first (they are measured
    // against implicit_gemm_tc by `ember algos --dtype float16`); Ember's kernel otherwise.
    const std::string pick = chosen(key).first;
    CAPTURE(pick);
    if (dev.is_cuda() && cudnn_usable)
      CHECK(pick.rfind("cudnn", 0) == 0);
    else
      CHECK(pick == "implicit_gemm_tc");
    const ops::ConvKey cpu_key = ops::conv2d_key(d, xs, ws, kBFloat16, kCPU, cs.p);
    CHECK(cpu_key.math == ops::ConvMathMode::fp32);
    CHECK(chosen(cpu_key).first == "widened_f32");
  }
  const Tensor y_tc = ops::conv2d(x, w, Tensor(), cs.p);
  CHECK(y_tc.dtype() == kFloat16);
  check_budget(y_tc, kFloat16, ref.y, ref.y_abs);
  // Forced: the named algorithm runs on widened copies (same budgets, a different order of sums).
  ops::set_conv_algo("direct");
  const ops::ConvKey fwd = ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat16, dev, cs.p);
  const auto [name, why] = chosen(fwd);
  CHECK(name == "widened_f32");
  CHECK(why.find("forced 'direct' cannot run this half key") != std::string::npos);
  const Tensor y_direct = ops::conv2d(x, w, Tensor(), cs.p);
  ops::set_conv_algo("");
  check_budget(y_direct, kFloat16, ref.y, ref.y_abs);
  // Forced to one with neither a half nor a float32 path here: the float32 run says so.
  ops::set_conv_algo("im2col_gemm");
  CHECK_THROWS_WITH_AS(ops::conv2d(x, w, Tensor(), cs.p),
                       doctest::Contains("forced algorithm 'im2col_gemm' cannot run it"),
                       ValueError);
  ops::set_conv_algo("");
  // The weight gradient: float32 sums rounded once to the weight's dtype.
  const Tensor dy = random_tensor({s.n, s.k, s.oh, s.ow}, kFloat16, -1, 1, g).to(dev);
  const ConvRef rdw = conv_reference(cs, x.to_vector<double>(), w.to_vector<double>(), {},
                                     dy.to_vector<double>(), s.oh, s.ow);
  const ops::ConvKey bwf =
      ops::conv2d_key(ConvDirection::backward_filter, xs, ws, kFloat16, dev, cs.p);
  const ops::ConvAlgoPtr tc = ops::find_conv_algo("implicit_gemm_tc");
  REQUIRE(tc);
  CHECK(tc->workspace_bytes(bwf) == sizeof(float) * size_t(s.w_numel()));
  const Tensor dw = ops::conv2d_backward_filter(dy, x, w.shape(), cs.p);
  CHECK(dw.dtype() == kFloat16);
  check_budget(dw, kFloat16, rdw.dw, rdw.dw_abs);
  // widened_f32 on the GPU gives the same within the budgets: forced by name.
  ops::set_conv_algo("widened_f32");
  check_budget(ops::conv2d_backward_filter(dy, x, w.shape(), cs.p), kFloat16, rdw.dw, rdw.dw_abs);
  ops::set_conv_algo("");
}

TEST_CASE("the half algorithms refuse other dtypes and devices, saying why") {
  const ConvCase& cs = kCases[0];
  const kernels::ConvShape s = shape_of(cs);
  const Shape xs{s.n, s.c, s.h, s.w}, ws{s.k, s.c, s.r, s.s};
  std::string why;
  const ops::ConvAlgoPtr tc = ops::find_conv_algo("implicit_gemm_tc");
  const ops::ConvAlgoPtr wide = ops::find_conv_algo("widened_f32");
  REQUIRE(tc);
  REQUIRE(wide);
  CHECK_FALSE(
      tc->supports(ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat32, emu(), cs.p), &why));
  CHECK(why == "float16 and bfloat16 only");
  CHECK_FALSE(
      tc->supports(ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat16, kCPU, cs.p), &why));
  CHECK(why.find("cuda and emu only") != std::string::npos);
  CHECK_FALSE(
      wide->supports(ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat64, kCPU, cs.p), &why));
  CHECK(why == "float16 and bfloat16 only");
  // A float32 key never reaches the half algorithms.
  CHECK(chosen(ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat32, emu(), cs.p)).first !=
        "widened_f32");
}

TEST_CASE("conv2d_tc refuses what it cannot run, saying why") {
  kernels::ConvShape s = shape_of(kCases[0]);
  CHECK(std::string(kernels_for(emu()).conv2d_tc_supports(kFloat32, s, ConvDirection::forward))
            .find("float16 or bfloat16") != std::string::npos);
  CHECK_THROWS_AS(kernels_for(emu()).conv2d_tc(kFloat32, s, ConvDirection::forward, nullptr,
                                               nullptr, nullptr, nullptr, nullptr),
                  std::invalid_argument);
  CHECK(std::string(kernels_for(kCPU).conv2d_tc_supports(kFloat16, s, ConvDirection::forward))
            .find("no Tensor Cores") != std::string::npos);
  CHECK_THROWS_AS(kernels_for(kCPU).conv2d_tc(kFloat16, s, ConvDirection::forward, nullptr, nullptr,
                                              nullptr, nullptr, nullptr),
                  DTypeError);
}

}  // namespace ember::test
