// Autocast (autograd/autocast.h): the output dtype of every function of the policy table, and of
// some that are not in it, for (float32, float32), (float16, float32) and (float16, float16)
// inputs, on the emulator under autocast("cuda", float16) and on the cpu under autocast("cpu",
// bfloat16); values and gradients equal to the explicitly cast computation; the cast cache;
// nesting; float64 and other devices' tensors left alone; the banned op; the DTypeError that
// names autocast's state.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "autograd/activation.h"
#include "autograd/autocast.h"
#include "autograd/batch_norm.h"
#include "autograd/conv2d.h"
#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/linear.h"
#include "autograd/loss.h"
#include "autograd/softmax.h"
#include "runtime/rng.h"

using namespace ember;

namespace {

const Device kEmu(DeviceType::EMU, 0);

Tensor rand_on(const Shape& s, DType t, Device d) {
  return randn(s).to(d, t);
}

// The dtype an op returns for inputs (a, b) of these dtypes under the region of `dev`'s kind.
struct Row {
  const char* op;
  // Called with two tensors of the same shape [4, 4] (the second ignored by one-input ops).
  Tensor (*call)(const Tensor&, const Tensor&);
  // The expected dtype for (f32, f32), (low, f32), (low, low); "low" is the region's dtype.
  const char* want[3];
};

const Row kRows[] = {
    {"matmul",
     [](const Tensor& a, const Tensor& b) { return matmul(a, b); },
     {"low", "low", "low"}},
    {"linear",
     [](const Tensor& a, const Tensor& b) { return linear(a, b); },
     {"low", "low", "low"}},
    {"conv2d",
     [](const Tensor& a, const Tensor& b) {
       return conv2d(a.reshape({1, 1, 4, 4}), b.reshape({1, 1, 4, 4}));
     },
     {"low", "low", "low"}},
    {"exp", [](const Tensor& a, const Tensor&) { return exp(a); }, {"f32", "f32", "f32"}},
    {"log", [](const Tensor& a, const Tensor&) { return log(a); }, {"f32", "f32", "f32"}},
    {"pow", [](const Tensor& a, const Tensor&) { return pow(a, 2.0); }, {"f32", "f32", "f32"}},
    {"softplus", [](const Tensor& a, const Tensor&) { return softplus(a); }, {"f32", "f32", "f32"}},
    {"sum", [](const Tensor& a, const Tensor&) { return sum(a); }, {"f32", "f32", "f32"}},
    {"softmax",
     [](const Tensor& a, const Tensor&) { return softmax(a, 1); },
     {"f32", "f32", "f32"}},
    {"log_softmax",
     [](const Tensor& a, const Tensor&) { return log_softmax(a, 0); },
     {"f32", "f32", "f32"}},
    {"mse_loss",
     [](const Tensor& a, const Tensor& b) { return mse_loss(a, b); },
     {"f32", "f32", "f32"}},
    {"cross_entropy",
     [](const Tensor& a, const Tensor&) {
       return cross_entropy(a, from_vector<int64_t>({0, 1, 2, 3}).to(a.device()));
     },
     {"f32", "f32", "f32"}},
    {"cat",
     [](const Tensor& a, const Tensor& b) {
       return cat({a, b});
     },
     {"f32", "f32", "low"}},
    {"stack",
     [](const Tensor& a, const Tensor& b) {
       return stack({a, b});
     },
     {"f32", "f32", "low"}},
    // Not in the table: the inputs' dtypes, by ordinary promotion.
    {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, {"f32", "f32", "low"}},
    {"relu", [](const Tensor& a, const Tensor&) { return relu(a); }, {"f32", "low", "low"}},
    {"mean", [](const Tensor& a, const Tensor&) { return mean(a); }, {"f32", "low", "low"}},
};

DType resolve(const char* want, DType low) {
  return std::string(want) == "low" ? low : kFloat32;
}

}  // namespace

TEST_CASE("autocast: every function's output dtype for (f32, f32), (low, f32), (low, low)") {
  for (auto [dev, low, kind] :
       {std::tuple{kEmu, kFloat16, "cuda"}, std::tuple{kCPU, kBFloat16, "cpu"},
        std::tuple{kEmu, kBFloat16, "emu"}}) {
    CAPTURE(dev);
    CAPTURE(low);
    for (const Row& r : kRows) {
      CAPTURE(r.op);
      const std::pair<DType, DType> inputs[] = {{kFloat32, kFloat32}, {low, kFloat32}, {low, low}};
      for (int i = 0; i < 3; ++i) {
        CAPTURE(i);
        const Tensor a = add(abs(rand_on({4, 4}, inputs[i].first, dev)), 0.5);
        const Tensor b = rand_on({4, 4}, inputs[i].second, dev);
        AutocastGuard guard(kind, low);
        const Tensor y = r.call(a, b);
        CHECK(y.dtype() == resolve(r.want[i], low));
        CHECK(y.device() == dev);
      }
    }
  }
}

TEST_CASE("autocast leaves float64, integer and other devices' tensors and closed regions alone") {
  const Tensor a = randn({3, 3}, kFloat64), b = randn({3, 3}, kFloat64);
  {
    AutocastGuard guard("cpu");
    CHECK(matmul(a, b).dtype() == kFloat64);
    CHECK(softmax(a.to(kFloat32).to(kEmu), 1).dtype() == kFloat32);  // no emu region
  }
  {
    AutocastGuard guard("cuda");
    CHECK(matmul(a.to(kFloat32), b.to(kFloat32)).dtype() == kFloat32);  // cpu tensors
    AutocastGuard off("cuda", std::nullopt, /*enabled=*/false);
    CHECK(matmul(a.to(kEmu, kFloat32), b.to(kEmu, kFloat32)).dtype() == kFloat32);
  }
  CHECK(matmul(a.to(kEmu, kFloat32), b.to(kEmu, kFloat32)).dtype() == kFloat32);
  CHECK_FALSE(is_autocast_enabled(AutocastDevice::cuda));
  CHECK_FALSE(is_autocast_enabled(AutocastDevice::cpu));
}

TEST_CASE("autocast's values and gradients are those of the explicitly cast computation") {
  Tensor w = randn({5, 7}).to(kEmu);
  requires_grad_(w);
  Tensor x = randn({3, 7}).to(kEmu);
  Tensor got_w_grad;
  Tensor y;
  {
    AutocastGuard guard("cuda", kFloat16);
    y = linear(x, w);
    CHECK(y.dtype() == kFloat16);
    backward(sum(y));  // sum: float32
  }
  got_w_grad = grad(w);
  REQUIRE(got_w_grad.defined());
  CHECK(got_w_grad.dtype() == kFloat32);
  zero_grad(w);
  const Tensor y2 = linear(to(x, kFloat16), to(w, kFloat16));
  backward(sum(to(y2, kFloat32)));
  CHECK(y.to_vector<double>() == y2.to_vector<double>());
  CHECK(got_w_grad.to_vector<double>() == grad(w).to_vector<double>());
}

TEST_CASE("autocast casts a parameter once per region and again after it is written") {
  Tensor w = randn({4, 4}).to(kEmu);
  requires_grad_(w);
  const Tensor x = randn({2, 4}).to(kEmu);
  {
    AutocastGuard outer("cuda");
    CHECK(autocast_cache_size() == 0);
    const Tensor y1 = matmul(x, w);
    CHECK(autocast_cache_size() == 1);
    {
      AutocastGuard inner("cuda");
      const Tensor y2 = linear(x, w);  // the same cached cast
      CHECK(autocast_cache_size() == 1);
    }
    CHECK(autocast_cache_size() == 1);  // only the outermost region's exit empties the cache
    {
      NoGradGuard no_grad;
      w.copy_(mul(detach(w), 2.0));  // a write: the next use casts the new values
    }
    const Tensor y3 = matmul(x, w);
    const Tensor want = matmul(to(x, kFloat16), to(detach(w), kFloat16));
    CHECK(y3.to_vector<double>() == want.to_vector<double>());
    CHECK(autocast_cache_size() == 1);
    // A non-leaf or a tensor that needs no grad is not cached.
    (void)matmul(x, mul(w, 1.0));
    CHECK(autocast_cache_size() == 1);
  }
  CHECK(autocast_cache_size() == 0);
}

TEST_CASE("autocast: nested regions restore what they found; bad arguments are errors") {
  {
    AutocastGuard a("cuda", kBFloat16);
    CHECK(autocast_state(AutocastDevice::cuda).dtype == kBFloat16);
    {
      AutocastGuard b("cuda", kFloat16);
      CHECK(matmul(randn({2, 2}).to(kEmu), randn({2, 2}).to(kEmu)).dtype() == kFloat16);
      AutocastGuard c("cuda", std::nullopt, false);
      CHECK_FALSE(is_autocast_enabled(AutocastDevice::cuda));
    }
    CHECK(is_autocast_enabled(AutocastDevice::cuda));
    CHECK(matmul(randn({2, 2}).to(kEmu), randn({2, 2}).to(kEmu)).dtype() == kBFloat16);
  }
  CHECK_FALSE(is_autocast_enabled(AutocastDevice::cuda));
  CHECK(autocast_state(AutocastDevice::cuda).dtype == kFloat16);  // the default again
  CHECK_THROWS_WITH_AS(AutocastGuard("tpu"), doctest::Contains("'cuda', 'emu' or 'cpu', got 'tpu'"),
                       ValueError);
  CHECK_THROWS_WITH_AS(AutocastGuard("cpu", kFloat32),
                       doctest::Contains("expected dtype float16 or bfloat16"), DTypeError);
  CHECK(autocast_nesting() == 0);
}

TEST_CASE("autocast: the banned op's message and a DTypeError that names autocast's state") {
  AutocastGuard guard("cuda");
  const Tensor p = rand_on({3}, kFloat32, kEmu);
  CHECK_THROWS_WITH_AS(autocast_cast_args("binary_cross_entropy", {p}),
                       doctest::Contains("unsafe to autocast"), ValueError);
  // batch_norm is not cast: a half input with float64 parameters reaches its dtype check.
  const Tensor x = rand_on({2, 3, 4}, kFloat16, kEmu);
  const Tensor w = rand_on({3}, kFloat64, kEmu);
  CHECK_THROWS_WITH_AS(batch_norm(x, w, Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5),
                       doctest::Contains("float64 (autocast on: cuda float16)"), DTypeError);
}
