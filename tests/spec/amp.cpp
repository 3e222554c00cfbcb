// The loss scaler's device ops (ops/amp.h) and the optimisers' scaled steps on every target
// (tests/spec/spec.h): the (scale, growth tracker) sequence of amp_update_scale_ bit for bit
// against a transcription of PyTorch's _amp_update_scale_ kernel (aten/src/ATen/native/cuda/
// AmpKernels.cu) over a scripted sequence; the non-finite check and the unscale; a scaled step
// equal to the unscaled one, and a skipped step that leaves parameters, state and step counts
// bit-identical, for SGD with momentum, Adam and AdamW.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "nn/optim.h"
#include "ops/amp.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

// PyTorch's amp_update_scale_cuda_kernel, transcribed: float scale, int tracker, double factors.
void torch_update(float& scale, int& tracker, float found_inf, double growth, double backoff,
                  int interval) {
  if (found_inf) {
    scale = static_cast<float>(scale * backoff);
    tracker = 0;
  } else {
    const int successful = tracker + 1;
    if (successful == interval) {
      const float new_scale = static_cast<float>(scale * growth);
      if (std::isfinite(new_scale)) scale = new_scale;
      tracker = 0;
    } else {
      tracker = successful;
    }
  }
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST_CASE("amp_update_scale_ follows PyTorch's kernel bit for bit on every target") {
  struct Phase {
    const char* name;
    float start_scale;
    int start_tracker, interval;
    double growth, backoff;
    std::vector<float> found;  // the found_inf of each step: 0, 1 (inf), 2 (inf on two devices)
  };
  std::vector<float> clean_run(7, 0.0f);
  const Phase phases[] = {
      {"defaults: clean, inf, clean", 65536.0f, 0, 2000, 2.0, 0.5, {0, 1, 0, 0}},
      {"interval 3: growth after 3 clean steps, reset by an inf",
       1024.0f,
       0,
       3,
       2.0,
       0.5,
       {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}},
      {"a clean run of interval steps, twice", 8.0f, 0, 7, 2.0, 0.5, clean_run},
      {"near FLT_MAX: growth to inf is refused, the tracker still resets",
       FLT_MAX / 2.0f,
       0,
       2,
       4.0,
       0.25,
       {0, 0, 0, 0, 1, 0}},
      {"tracker above a lowered interval: no growth until an inf",
       2.0f,
       5,
       3,
       2.0,
       0.5,
       {0, 0, 0, 0, 2, 0, 0, 0}},
      {"odd factors round once to float", 3.0f, 0, 1, 1.1, 0.3, {0, 0, 1, 0, 1, 1, 0}},
      {"backing off below 1 and into subnormals", 1e-37f, 0, 2000, 2.0, 0.01, {1, 1, 1, 1}},
  };
  for_each_target([&](Device dev) {
    for (const Phase& ph : phases) {
      CAPTURE(ph.name);
      const Tensor scale = full({}, ph.start_scale, {kFloat32, dev});
      const Tensor tracker = full({}, ph.start_tracker, {kInt32, dev});
      float want_scale = ph.start_scale;
      int want_tracker = ph.start_tracker;
      for (size_t step = 0; step < ph.found.size(); ++step) {
        CAPTURE(step);
        const Tensor found = full({}, ph.found[step], {kFloat32, dev});
        ops::amp_update_scale_(scale, tracker, found, ph.growth, ph.backoff, ph.interval);
        torch_update(want_scale, want_tracker, ph.found[step], ph.growth, ph.backoff, ph.interval);
        CHECK(bits(scale.to(kCPU).data<float>()[0]) == bits(want_scale));
        CHECK(tracker.item<int>() == want_tracker);
      }
    }
    // Hand-computed: 65536 backs off to 32768; 1024 grows to 2048 after 3 clean steps.
    const Tensor s = full({}, 65536.0, {kFloat32, dev}), t = zeros({}, {kInt32, dev});
    ops::amp_update_scale_(s, t, full({}, 1.0, {kFloat32, dev}), 2.0, 0.5, 2000);
    CHECK(s.item() == 32768.0);
  });
}

TEST_CASE("amp_non_finite_check_and_unscale_ flags inf and NaN and unscales on every target") {
  const double inf = std::numeric_limits<double>::infinity();
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64}) {
      CAPTURE(t);
      const Tensor scale = full({}, 1024.0, {kFloat32, dev});
      // Clean: unscaled by an exact power of two, found_inf stays 0.
      Tensor a = from_vector<double>({2048, -512, 3, 0}).to(dev, t);
      Tensor b = from_vector<double>({1024, 1, 2, 3, 4, 5, 6, 7, 8, 9}).to(dev, t);
      Tensor found = zeros({}, {kFloat32, dev});
      ops::amp_non_finite_check_and_unscale_({a, b}, found, scale);
      CHECK(found.item() == 0);
      check_result(a, dev, t, {4}, {2, -0.5, 3.0 / 1024, 0});
      CHECK(b.to_vector<double>()[0] == 1);
      // An inf in the second gradient and a NaN in a view: flagged; a non-power-of-two scale
      // multiplies by float(1 / double(scale)).
      Tensor c = from_vector<double>({1, inf, 3}).to(dev, t);
      Tensor base = from_vector<double>({1, 2, std::nan(""), 4}).to(dev, t);
      Tensor view = base.slice(0, 1, 4);
      found = zeros({}, {kFloat32, dev});
      const float odd = 3.0f;
      ops::amp_non_finite_check_and_unscale_({c, view}, found, full({}, odd, {kFloat32, dev}));
      CHECK(found.item() == 1);
      const float inv = static_cast<float>(1.0 / 3.0);  // rounded once, then used in t
      const std::vector<double> cv = c.to_vector<double>(), bv = base.to_vector<double>();
      CHECK(cv[0] == static_cast<double>(inv));
      CHECK(std::isinf(cv[1]));
      CHECK(bv[1] == (t == kFloat32 ? static_cast<double>(2.0f * inv) : 2.0 * inv));
      CHECK(bv[0] == 1);  // outside the view
      // Check only (no scale): values untouched, flag raised, never lowered.
      Tensor d = from_vector<double>({5, -inf}).to(dev, t);
      ops::amp_non_finite_check_and_unscale_({d}, found, Tensor());
      CHECK(found.item() == 1);
      CHECK(d.to_vector<double>()[0] == 5);
    }
    CHECK_THROWS_AS(ops::amp_non_finite_check_and_unscale_({zeros({2}, {kFloat32, dev})},
                                                           zeros({}, {kFloat64, dev}), Tensor()),
                    DTypeError);
    CHECK_THROWS_AS(ops::amp_non_finite_check_and_unscale_({zeros({2}, {kFloat32, dev})},
                                                           zeros({2}, {kFloat32, dev}), Tensor()),
                    ShapeError);
    if (!dev.is_cpu())
      CHECK_THROWS_AS(ops::amp_non_finite_check_and_unscale_({zeros({2}, {kFloat32, dev})},
                                                             zeros({}, kFloat32), Tensor()),
                      DeviceError);
  });
}

namespace {

// Sets p.grad = g * k by backpropagating sum(p * g * k).
void set_grad(Tensor& p, const std::vector<double>& g, double k) {
  zero_grad(p);
  backward(sum(mul(p, mul(from_vector(g, p.shape()).to(p.device(), p.dtype()), k))));
}

std::unique_ptr<nn::Optimizer> make(int kind, const Tensor& p) {
  if (kind == 0)
    return std::make_unique<nn::SGD>(std::vector<Tensor>{p},
                                     nn::SGDOptions{0.1, 0.9, 0.0, 0.01, false});
  if (kind == 1) return std::make_unique<nn::Adam>(std::vector<Tensor>{p}, nn::AdamOptions{});
  return std::make_unique<nn::AdamW>(std::vector<Tensor>{p});
}

std::vector<float> values(const Tensor& t) {
  return t.to(kCPU).to_vector<float>();
}

// The values to the last bit, for a failure's message.
std::string bits(const std::vector<float>& v) {
  std::string out;
  char buf[32];
  for (float x : v) {
    std::snprintf(buf, sizeof buf, "%s%.9g", out.empty() ? "" : ", ", static_cast<double>(x));
    out += buf;
  }
  return out;
}

}  // namespace

TEST_CASE("scaled optimiser steps equal plain ones, and skipped steps change nothing") {
  const std::vector<std::vector<double>> grads = {
      {0.5, -1.0, 2.0, 0.25}, {0.1, 0.3, -0.2, 0.0}, {-1.5, 0.0, 1.0, 3.0}};
  for_each_target([&](Device dev) {
    for (int kind : {0, 1, 2}) {
      CAPTURE(kind);
      Tensor a = from_vector<double>({1.0, -2.0, 0.5, 4.0}).to(dev, kFloat32);
      Tensor b = a.clone();
      requires_grad_(a);
      requires_grad_(b);
      auto plain = make(kind, a), scaled = make(kind, b);
      const Tensor scale = full({}, 1024.0, {kFloat32, dev});
      const Tensor clean = zeros({}, {kFloat32, dev}), bad = ones({}, {kFloat32, dev});
      for (size_t k = 0; k < grads.size(); ++k) {
        CAPTURE(k);
        set_grad(a, grads[k], 1.0);
        plain->step();
        // A skipped step first, on gradients that would wreck everything.
        set_grad(b, {1e30, -1e30, 7, 7}, 1024.0);
        const std::vector<float> before = values(b);
        const NamedTensors state_before = scaled->state_dict();
        scaled->step(scale, bad);
        CHECK(values(b) == before);
        // Every entry as it was; a buffer that the skipped first step made is still zero.
        for (const auto& [name, t] : scaled->state_dict()) {
          CAPTURE(name);
          std::vector<double> was(static_cast<size_t>(t.numel()), 0.0);
          for (const auto& [n0, t0] : state_before)
            if (n0 == name) was = t0.to_vector<double>();
          CHECK(t.to_vector<double>() == was);
        }
        // Then the real one: gradients scaled by 1024, divided inside the update.
        set_grad(b, grads[k], 1024.0);
        scaled->step(scale, clean);
        CHECK_MESSAGE(values(b) == values(a), "scaled ", bits(values(b)), " plain ",
                      bits(values(a)));
      }
      // The step counts agree (3 plain steps; the skipped ones did not count).
      for (const auto& [name, t] : scaled->state_dict())
        if (name.find("step") != std::string::npos) CHECK(t.item() == 3);
      // A plain step after scaled ones reads the device's count back.
      set_grad(a, grads[0], 1.0);
      set_grad(b, grads[0], 1.0);
      plain->step();
      scaled->step();
      CHECK_MESSAGE(values(b) == values(a), "scaled ", bits(values(b)), " plain ",
                    bits(values(a)));
    }
  });
}

}  // namespace ember::test
