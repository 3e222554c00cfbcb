// GradScaler (nn/amp.h) on the cpu and the emulator: scaled training equal to plain training bit
// for bit (the scale is a power of two), an overflowing step skipped and the scale backed off, a
// whole scaled step that never waits for the device (counted on emu), PyTorch's state machine and
// messages, state_dict with PyTorch's keys, and the disabled scaler.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/loss.h"
#include "nn/amp.h"
#include "nn/checkpoint.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "nn_test_util.h"
#include "ops/op_test_util.h"
#include "runtime/gpu.h"
#include "runtime/rng.h"

using namespace ember;
using namespace ember::nn;
using ember::test::message_of;

namespace {

const Device kEmu(DeviceType::EMU, 0);

struct Run {
  std::shared_ptr<Linear> model;
  std::unique_ptr<Optimizer> opt;
};

Run make_run(Device dev, bool adam) {
  manual_seed(21);
  Run r{std::make_shared<Linear>(6, 3), nullptr};
  r.model->to(dev);
  std::vector<Tensor> ps;
  for (auto& [name, p] : r.model->named_parameters()) ps.push_back(p);
  if (adam)
    r.opt = std::make_unique<Adam>(ps, AdamOptions{});
  else
    r.opt = std::make_unique<SGD>(ps, SGDOptions{0.05, 0.9, 0.0, 0.0, false});
  return r;
}

Tensor loss_of(Run& r, const Tensor& x, const Tensor& y) {
  return mse_loss(r.model->forward(x), y);
}

std::vector<float> weights(const Run& r) {
  std::vector<float> all;
  for (const auto& [name, p] : r.model->named_parameters()) {
    const std::vector<float> v = p.to(kCPU).to_vector<float>();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

}  // namespace

TEST_CASE("GradScaler: scaled training equals plain training bit for bit; an overflow is skipped") {
  for (Device dev : {kCPU, kEmu}) {
    for (bool adam : {false, true}) {
      CAPTURE(dev);
      CAPTURE(adam);
      Run plain = make_run(dev, adam), scaled = make_run(dev, adam);
      GradScaler scaler;
      manual_seed(5);
      for (int step = 0; step < 4; ++step) {
        CAPTURE(step);
        const Tensor x = randn({8, 6}).to(dev), y = randn({8, 3}).to(dev);
        plain.opt->zero_grad();
        backward(loss_of(plain, x, y));
        plain.opt->step();
        scaled.opt->zero_grad();
        backward(scaler.scale(loss_of(scaled, x, y)));
        scaler.step(*scaled.opt);
        scaler.update();
        CHECK(weights(scaled) == weights(plain));
        CHECK(scaler.get_scale() == 65536.0);
        CHECK(scaler.get_growth_tracker() == step + 1);
        // An overflowing step in between: skipped, the scale halved, the tracker reset.
        if (step == 1) {
          const std::vector<float> before = weights(scaled);
          scaled.opt->zero_grad();
          backward(
              mul(scaler.scale(loss_of(scaled, x, y)), std::numeric_limits<double>::infinity()));
          scaler.step(*scaled.opt);
          scaler.update();
          CHECK(weights(scaled) == before);
          CHECK(scaler.get_scale() == 32768.0);
          CHECK(scaler.get_growth_tracker() == 0);
          scaler.update(65536.0);  // back, so that the next steps compare with the plain run
          scaler.load_state_dict({{"scale", full({}, 65536.0, kFloat64)},
                                  {"growth_factor", full({}, 2.0, kFloat64)},
                                  {"backoff_factor", full({}, 0.5, kFloat64)},
                                  {"growth_interval", full({}, 2000.0, kInt64)},
                                  {"_growth_tracker", full({}, 2.0, kInt64)}});
        }
      }
      // Adam's step count: the skipped step did not count.
      for (const auto& [name, t] : scaled.opt->state_dict())
        if (name.find(".step") != std::string::npos) CHECK(t.item() == 4);
    }
  }
}

TEST_CASE("GradScaler: a scaled step on the emulator never waits for the device") {
  Run r = make_run(kEmu, true);
  GradScaler scaler;
  const Tensor x = randn({8, 6}).to(kEmu), y = randn({8, 3}).to(kEmu);
  auto step = [&] {
    r.opt->zero_grad();
    backward(scaler.scale(loss_of(r, x, y)));
    scaler.step(*r.opt);
    scaler.update();
  };
  step();  // the first makes the scale, the buffers and the device step counts
  const gpu::HostWaits before = gpu::host_waits();
  for (int i = 0; i < 3; ++i) step();
  const gpu::HostWaits after = gpu::host_waits();
  CHECK(after.device_to_host_copies == before.device_to_host_copies);
  CHECK(after.synchronizations == before.synchronizations);
  // The synchronous host-to-device copies are backward()'s seed gradients (Note [Host waits]).
  MESSAGE("synchronous host-to-device copies in 3 AMP iterations: "
          << after.host_to_device_copies - before.host_to_device_copies);
  // Reading the scale does wait: the counter sees it.
  CHECK(scaler.get_scale() == 65536.0);
  CHECK(gpu::host_waits().device_to_host_copies > after.device_to_host_copies);
}

TEST_CASE("GradScaler: unscale_ then step, and PyTorch's state machine and messages") {
  Run r = make_run(kCPU, false);
  GradScaler scaler({1024.0, 2.0, 0.5, 2000, true});
  const Tensor x = randn({4, 6}), y = randn({4, 3});
  const std::string fix =
      "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the "
      "iteration.";
  CHECK(message_of([&] { scaler.unscale_(*r.opt); }) ==
        "Attempted unscale_ but _scale is None.  " + fix);
  CHECK(message_of([&] { scaler.step(*r.opt); }) == "Attempted step but _scale is None.  " + fix);
  CHECK(message_of([&] { scaler.update(); }) == "Attempted update but _scale is None.  " + fix);
  CHECK(scaler.get_scale() == 1024.0);  // before the first scale(): the initial value
  // Gradients unscaled in place equal the plain ones.
  Run plain = make_run(kCPU, false);
  backward(loss_of(plain, x, y));
  backward(scaler.scale(loss_of(r, x, y)));
  scaler.unscale_(*r.opt);
  for (size_t i = 0; i < r.opt->params().size(); ++i)
    CHECK(grad(r.opt->params()[i]).to_vector<float>() ==
          grad(plain.opt->params()[i]).to_vector<float>());
  CHECK(message_of([&] { scaler.unscale_(*r.opt); }) ==
        "unscale_() has already been called on this optimizer since the last update().");
  scaler.step(*r.opt);
  plain.opt->step();
  CHECK(weights(r) == weights(plain));
  CHECK(message_of([&] { scaler.step(*r.opt); }) ==
        "step() has already been called since the last update().");
  CHECK(message_of([&] { scaler.unscale_(*r.opt); }) == "unscale_() is being called after step().");
  scaler.update();
  CHECK(message_of([&] { scaler.update(); }) == "No inf checks were recorded prior to update.");
  // Bad settings and bad new scales.
  CHECK_THROWS_WITH_AS(GradScaler({1.0, 1.0, 0.5, 10, true}), "The growth factor must be > 1.0.",
                       ValueError);
  CHECK_THROWS_WITH_AS(GradScaler({1.0, 2.0, 1.0, 10, true}), "The backoff factor must be < 1.0.",
                       ValueError);
  CHECK_THROWS_AS(scaler.update(zeros({2})), ValueError);
  CHECK_THROWS_AS(scaler.update(zeros({1}, kFloat64)), ValueError);
  scaler.update(full({1}, 8.0));
  CHECK(scaler.get_scale() == 8.0);
}

TEST_CASE("GradScaler: state_dict has PyTorch's keys; a disabled scaler is a no-op") {
  GradScaler scaler({256.0, 3.0, 0.25, 7, true});
  const NamedTensors sd = scaler.state_dict();
  REQUIRE(sd.size() == 5);
  const char* keys[] = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                        "_growth_tracker"};
  const double vals[] = {256.0, 3.0, 0.25, 7, 0};
  for (size_t i = 0; i < 5; ++i) {
    CHECK(sd[i].first == keys[i]);
    CHECK(sd[i].second.item() == vals[i]);
  }
  GradScaler other;
  other.load_state_dict(sd);
  CHECK(other.get_scale() == 256.0);
  CHECK(other.get_growth_interval() == 7);
  CHECK(other.state_dict()[2].second.item() == 0.25);
  CHECK(message_of([&] { other.load_state_dict({}); }).find("The source state dict is empty") == 0);

  GradScaler off({65536.0, 0.5, 2.0, 1, false});  // bad factors are not checked when disabled
  const Tensor loss = full({}, 3.0);
  CHECK(off.scale(loss).is_same(loss));
  CHECK(off.state_dict().empty());
  CHECK(off.get_scale() == 1.0);
  off.load_state_dict({});  // a no-op
  Run r = make_run(kCPU, false), plain = make_run(kCPU, false);
  const Tensor x = randn({4, 6}), y = randn({4, 3});
  backward(loss_of(r, x, y));
  backward(loss_of(plain, x, y));
  off.step(*r.opt);
  plain.opt->step();
  off.update();
  CHECK(weights(r) == weights(plain));
}

TEST_CASE("GradScaler: checkpoints carry the scaler's state") {
  ember_test::TempDir dir;
  const std::string path = dir.file("amp.ckpt");
  Run r = make_run(kCPU, true);
  GradScaler scaler({512.0, 2.0, 0.5, 3, true});
  const Tensor x = randn({4, 6}), y = randn({4, 3});
  for (int i = 0; i < 2; ++i) {
    r.opt->zero_grad();
    backward(scaler.scale(loss_of(r, x, y)));
    scaler.step(*r.opt);
    scaler.update();
  }
  save_checkpoint(path, "linear", *r.model, *r.opt, 1, {}, &scaler);
  Run back = make_run(kCPU, true);
  GradScaler fresh;
  load_checkpoint(path, "linear", *back.model, *back.opt, &fresh);
  CHECK(fresh.get_scale() == 512.0);
  CHECK(fresh.get_growth_tracker() == 2);
  CHECK(fresh.get_growth_interval() == 3);
  CHECK(weights(back) == weights(r));
  // Resuming without a scaler leaves its state unread; asking for one that was not saved is
  // refused before anything changes.
  load_checkpoint(path, "linear", *back.model, *back.opt);
  save_checkpoint(path, "linear", *r.model, *r.opt, 1);
  CHECK_THROWS_WITH_AS(load_checkpoint(path, "linear", *back.model, *back.opt, &fresh),
                       doctest::Contains("no loss-scaler state in this checkpoint"), ValueError);
  CHECK(fresh.get_scale() == 512.0);
}
