// Philox fills on the emu device equal to the CPU's, and the fused SGD/Adam/AdamW updates against
// the CPU optimisers. (Copies and casts: tests/spec/copy.cpp.)
#include <doctest/doctest.h>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "cuda/cuda_test_util.h"
#include "nn/optim.h"
#include "ops/elementwise.h"
#include "runtime/rng.h"

namespace ember::test {

TEST_CASE("emu random fills equal the cpu's for the same seed") {
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (DType t : {kFloat32, kFloat64}) {
      for (const Shape& shape : {Shape{1}, Shape{7}, Shape{33, 5}, Shape{0}}) {
        CAPTURE(t);
        CAPTURE(shape);
        Generator gc(1234), ge(1234);
        Tensor c = empty(shape, t), e = empty(shape, {t, emu()});
        uniform_(c, -2, 3, &gc);
        uniform_(e, -2, 3, &ge);
        CHECK(e.to_vector<double>() == c.to_vector<double>());
        bernoulli_(c, 0.3, &gc);
        bernoulli_(e, 0.3, &ge);
        CHECK(e.to_vector<double>() == c.to_vector<double>());
        normal_(c, 1, 2, &gc);
        normal_(e, 1, 2, &ge);
        check_close(e, c.to(kFloat64), 1e-6, 1e-6);
        CHECK(ge.offset() == gc.offset());
      }
    }
    // Non-contiguous and non-float destinations go through a float64 fill on the device.
    Generator gc(9), ge(9);
    Tensor c = zeros({4, 6}).t(), e = zeros({4, 6}, {kFloat32, emu()}).t();
    uniform_(c, 0, 1, &gc);
    uniform_(e, 0, 1, &ge);
    CHECK(e.to_vector<float>() == c.to_vector<float>());
    Tensor cb = empty({50}, kBool), eb = empty({50}, {kBool, emu()});
    bernoulli_(cb, 0.5, &gc);
    bernoulli_(eb, 0.5, &ge);
    CHECK(eb.to_vector<double>() == cb.to_vector<double>());
  }
}

namespace {
// Gradient `gv` on p, through the autograd path a training step takes.
void set_grad(Tensor& p, const std::vector<double>& gv) {
  zero_grad(p);
  backward(sum(mul(p, from_vector(gv, p.shape()).to(p.device(), p.dtype()))));
}

template <typename Make>
void check_optimizer(Make make, DType t) {
  std::mt19937 g(fresh_seed());
  const Tensor init = random_tensor({3, 37}, t, -1, 1, g);
  Tensor pc = init.clone(), pe = init.to(emu());
  requires_grad_(pc);
  requires_grad_(pe);
  auto oc = make(pc);
  auto oe = make(pe);
  for (int step = 0; step < 4; ++step) {
    const std::vector<double> gv = random_tensor({3, 37}, kFloat64, -1, 1, g).to_vector<double>();
    set_grad(pc, gv);
    set_grad(pe, gv);
    oc.step();
    oe.step();
  }
  CHECK(pe.device() == emu());
  check_close(pe, pc.to(kFloat64), t == kFloat32 ? 1e-5 : 1e-12, 1e-6);
}
}  // namespace

TEST_CASE("emu fused SGD, Adam and AdamW updates match the cpu optimisers") {
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (DType t : {kFloat32, kFloat64}) {
      CAPTURE(t);
      check_optimizer([](Tensor& p) { return nn::SGD({p}, {0.1}); }, t);
      check_optimizer([](Tensor& p) { return nn::SGD({p}, {0.1, 0.9, 0.1, 0.01}); }, t);
      check_optimizer([](Tensor& p) { return nn::SGD({p}, {0.1, 0.9, 0, 0.01, true}); }, t);
      check_optimizer([](Tensor& p) { return nn::Adam({p}, {0.01, 0.9, 0.99, 1e-8, 0.1}); }, t);
      check_optimizer([](Tensor& p) { return nn::AdamW({p}, {0.01, 0.9, 0.99, 1e-8, 0.1}); }, t);
    }
  }
}

}  // namespace ember::test
