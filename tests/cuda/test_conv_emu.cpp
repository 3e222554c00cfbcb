// conv2d on the GPU backends beyond the case table that tests/spec/conv2d.cpp runs on every
// target: implicit_gemm past the grid's z limit, the heuristic's choice and the cpu algorithms'
// refusal of the device, empty shapes, mixed devices, gradcheck through autograd in float64.
#include <doctest/doctest.h>

#include <sstream>

#include "autograd/conv2d.h"
#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "cuda/cuda_test_util.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "skip_case.h"

namespace ember::test {
namespace {

using ops::Conv2dParams;

const char* const kGpuAlgos[] = {"direct", "implicit_gemm"};

double scale_of(const Tensor& ref) {
  const double m = ref.numel() == 0 ? 0.0 : ops::amax(ops::abs(ref)).item();
  return m > 0 ? m : 1.0;
}

// got (on the device) against a float64 cpu reference: rtol relative to the element and to the
// largest magnitude of the reference.
void check_conv(const Tensor& got, const Tensor& want, DType t) {
  CHECK(got.device() == emu());
  CHECK(got.dtype() == t);
  const double tol = t == kFloat32 ? 1e-4 : 1e-10;
  check_close(got, want, tol, tol * scale_of(want));
}

std::string device_name(Device d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

}  // namespace

TEST_CASE("emu conv2d: implicit_gemm with more groups than a grid's z dimension holds") {
  // limit + 2 groups of one channel and two filters: blockIdx.z walks the groups past the
  // grid's z limit. The emulator's limit is lowered to 3 (5 groups); on a GPU it is 65535.
  ConvPolicyGuard guard;
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    const ScopedGridLimit limit(3);
    CAPTURE(cfg.name());
    const int64_t groups = int64_t(limit.value()) + 2;
    const Conv2dParams p = conv_params(1, 1, 0, 0, 1, 1, groups);
    const Shape xs{1, groups, 1, 1}, ws{2 * groups, 1, 1, 1}, ys{1, 2 * groups, 1, 1};
    for (DType t : {kFloat32, kFloat64}) {
      CAPTURE(t);
      const Tensor x = random_operand(xs, t, Layout::contiguous, -1, 1, g, 0.0, emu());
      const Tensor w = random_operand(ws, t, Layout::contiguous, -1, 1, g, 0.0, emu());
      const Tensor dy = random_operand(ys, t, Layout::contiguous, -1, 1, g, 0.0, emu());
      const Tensor xr = x.to(kCPU, kFloat64), wr = w.to(kCPU, kFloat64);
      const Tensor dyr = dy.to(kCPU, kFloat64);
      ops::set_conv_algo("direct");
      const Tensor y_ref = ops::conv2d(xr, wr, Tensor(), p);
      const Tensor dw_ref = ops::conv2d_backward_filter(dyr, xr, ws, p);
      ops::set_conv_algo("implicit_gemm");
      // Backward-data runs the forward kernel's group loop; backward-filter has its own.
      check_conv(ops::conv2d(x, w, Tensor(), p), y_ref, t);
      check_conv(ops::conv2d_backward_filter(dy, x, ws, p), dw_ref, t);
    }
  }
}

TEST_CASE("emu conv2d: the heuristic picks a GPU algorithm, and the cpu ones refuse the device") {
  ConvPolicyGuard guard;
  EmberKernelsOnly ember_only;
  const Conv2dParams p = conv_params(1, 1, 1, 1, 1, 1, 1);
  for (ops::ConvDirection d : {ops::ConvDirection::forward, ops::ConvDirection::backward_data,
                               ops::ConvDirection::backward_filter}) {
    const ops::ConvKey key =
        ops::conv2d_key(d, {8, 16, 16, 16}, {32, 16, 3, 3}, kFloat32, emu(), p);
    const ops::ConvSelection sel = ops::explain_conv_algos(key);
    CHECK(sel.chosen == "implicit_gemm");
    // Winograd and fft have no backward-filter: they refuse that direction on every device,
    // saying so (tests/cuda/test_conv_fft_emu.cpp checks what else fft refuses).
    auto refuses_direction = [&](const ops::ConvCandidate& c) {
      return d == ops::ConvDirection::backward_filter &&
             (c.name.rfind("winograd", 0) == 0 || c.name == "fft");
    };
    // The half algorithms refuse a float32 key.
    auto half_only = [&](const ops::ConvCandidate& c) {
      if (c.name != "implicit_gemm_tc" && c.name != ops::kHalfFallbackAlgo) return false;
      CHECK_FALSE(c.supported);
      check_message(c.reason, {"float16 and bfloat16 only"});
      return true;
    };
    for (const ops::ConvCandidate& c : sel.candidates) {
      CAPTURE(c.name);
      if (refuses_direction(c)) {
        CHECK_FALSE(c.supported);
        check_message(c.reason, {"backward-filter is not implemented"});
        continue;
      }
      if (half_only(c)) continue;
      CHECK(c.supported == (c.backend == ops::ConvBackend::ember_cuda));
      if (c.backend == ops::ConvBackend::cpu) check_message(c.reason, {"runs on the cpu only"});
      if (c.backend == ops::ConvBackend::ember_cuda) CHECK(c.deterministic);
    }
    const ops::ConvKey cpu_key =
        ops::conv2d_key(d, {8, 16, 16, 16}, {32, 16, 3, 3}, kFloat32, kCPU, p);
    for (const ops::ConvCandidate& c : ops::explain_conv_algos(cpu_key).candidates) {
      CAPTURE(c.name);
      if (built_without_instructions(c) && c.backend == ops::ConvBackend::cpu) {
        skip_case(c.name + " on the cpu, " + ops::conv_direction_name(d) + ": " + c.reason);
        continue;
      }
      if (refuses_direction(c)) {
        CHECK_FALSE(c.supported);
        continue;
      }
      if (c.name == ops::kHalfFallbackAlgo) {
        CHECK_FALSE(c.supported);
        continue;
      }
      CHECK(c.supported == (c.backend == ops::ConvBackend::cpu));
    }
  }
  // A long reduction over few tiles: backward-filter splits it and asks for a workspace.
  const ops::ConvKey split = ops::conv2d_key(ops::ConvDirection::backward_filter, {4, 3, 16, 17},
                                             {8, 3, 3, 3}, kFloat32, emu(), p);
  for (const ops::ConvCandidate& c : ops::explain_conv_algos(split).candidates)
    if (c.name == "implicit_gemm") CHECK(c.workspace_bytes == 4 * 8 * 27 * sizeof(float));
  // Depthwise: a GEMM tile would be mostly empty, so the direct kernels win.
  const ops::ConvKey dw =
      ops::conv2d_key(ops::ConvDirection::forward, {8, 32, 16, 16}, {32, 1, 3, 3}, kFloat32, emu(),
                      conv_params(1, 1, 1, 1, 1, 1, 32));
  CHECK(ops::explain_conv_algos(dw).chosen == "direct");
  // Unforced, a convolution on the device runs there.
  std::mt19937 g(fresh_seed());
  const Tensor x = random_operand({1, 3, 6, 5}, kFloat64, Layout::contiguous, -1, 1, g, 0.0, emu());
  const Tensor w = random_operand({2, 3, 3, 3}, kFloat64, Layout::contiguous, -1, 1, g, 0.0, emu());
  ops::set_conv_algo("direct");
  const Tensor ref = ops::conv2d(x.cpu(), w.cpu(), Tensor(), p);
  ops::set_conv_algo("");
  check_conv(ops::conv2d(x, w, Tensor(), p), ref, kFloat64);
}

TEST_CASE("emu conv2d: empty batch, no input channels, mixed devices") {
  ConvPolicyGuard guard;
  for (const char* algo : kGpuAlgos) {
    CAPTURE(algo);
    ops::set_conv_algo(algo);
    const Tensor x0 = zeros({0, 3, 5, 5}, {kFloat32, emu()});
    const Tensor w = ones({2, 3, 3, 3}, {kFloat32, emu()});
    const Tensor y = ops::conv2d(x0, w, Tensor(), {});
    CHECK(y.shape() == Shape{0, 2, 3, 3});
    CHECK(y.device() == emu());
    const Tensor dy0 = zeros({0, 2, 3, 3}, {kFloat32, emu()});
    const Tensor dx = ops::conv2d_backward_data(dy0, w, x0.shape(), {});
    CHECK(dx.shape() == Shape{0, 3, 5, 5});
    const Tensor dw = ops::conv2d_backward_filter(dy0, x0, w.shape(), {});
    CHECK(dw.device() == emu());
    check_close(dw, zeros({2, 3, 3, 3}, kFloat64), 0, 0);

    // No input channels: y is the bias everywhere.
    const Tensor xc = zeros({2, 0, 4, 4}, {kFloat64, emu()});
    const Tensor wc = zeros({3, 0, 3, 3}, {kFloat64, emu()});
    const Tensor bias = from_vector(std::vector<double>{1, -2, 3}, {3}).to(emu());
    const Tensor yc = ops::conv2d(xc, wc, bias, conv_params(1, 1, 1, 1, 1, 1, 1));
    CHECK(yc.device() == emu());
    check_close(yc, bias.cpu().view({1, 3, 1, 1}).expand({2, 3, 4, 4}), 0, 0);
    check_close(ops::conv2d(xc, wc, Tensor(), {}), zeros({2, 3, 2, 2}, kFloat64), 0, 0);
  }
  // Operands on different devices: a DeviceError naming both.
  const Tensor x = ones({1, 2, 5, 5}, {kFloat32, emu()}), w = ones({3, 2, 3, 3});
  const Tensor dy = ones({1, 3, 3, 3}, {kFloat32, emu()});
  const std::string e = device_name(emu());
  auto expect = [&](auto&& f, const char* op) {
    try {
      f();
      FAIL("expected a DeviceError");
    } catch (const DeviceError& err) {
      check_message(err.what(), {op, e, "cpu"});
    }
  };
  expect([&] { ops::conv2d(x, w, Tensor(), {}); }, "conv2d");
  expect([&] { ops::conv2d(x, w.to(emu()), ones({3}), {}); }, "conv2d");
  expect([&] { ops::conv2d_backward_data(dy, w, x.shape(), {}); }, "conv2d_backward_data");
  expect([&] { ops::conv2d_backward_filter(dy, x.cpu(), w.shape(), {}); },
         "conv2d_backward_filter");
}

TEST_CASE("emu conv2d: gradcheck through autograd in float64 with each GPU algorithm") {
  ConvPolicyGuard guard;
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  struct C {
    const char* name;
    Shape x, w;
    Conv2dOptions o;
  };
  const std::vector<C> cs = {
      {"stride 2 padding 1", {1, 2, 5, 4}, {2, 2, 3, 3}, Conv2dOptions().stride(2).padding(1)},
      {"dilation 2 padding (2, 1)",
       {1, 1, 5, 5},
       {2, 1, 3, 2},
       Conv2dOptions().dilation(2).padding(2, 1)},
      {"groups 2", {1, 4, 4, 3}, {2, 2, 2, 2}, Conv2dOptions().groups(2).padding(1)},
  };
  auto leaf = [&](const Shape& s) {
    Tensor t = random_operand(s, kFloat64, Layout::contiguous, -1, 1, g, 0.0, emu());
    requires_grad_(t);
    return t;
  };
  for (const char* algo : kGpuAlgos) {
    CAPTURE(algo);
    ops::set_conv_algo(algo);
    for (const C& c : cs) {
      CAPTURE(c.name);
      const std::vector<Tensor> in{leaf(c.x), leaf(c.w), leaf({c.w[0]})};
      const Conv2dOptions o = c.o;
      std::string why;
      const bool ok = gradcheck(
          [o](const std::vector<Tensor>& v) { return conv2d(v[0], v[1], v[2], o); }, in, {}, &why);
      CAPTURE(why);
      CHECK(ok);
    }
  }
}

}  // namespace ember::test
