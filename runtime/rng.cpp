#include "runtime/rng.h"

#include <cmath>

#include "runtime/philox.h"

namespace ember {

void Generator::manual_seed(uint64_t seed) { set_state(seed, 0); }
uint64_t Generator::seed() const {
  std::lock_guard<std::mutex> g(mu_);
  return seed_;
}
uint64_t Generator::offset() const {
  std::lock_guard<std::mutex> g(mu_);
  return offset_;
}
void Generator::set_state(uint64_t seed, uint64_t offset) {
  std::lock_guard<std::mutex> g(mu_);
  seed_ = seed;
  offset_ = offset;
}
uint64_t Generator::reserve(uint64_t n) {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t start = offset_;
  offset_ += (n + 3) / 4;
  return start;
}

Generator& default_generator() {
  static Generator* g = new Generator();
  return *g;
}
void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

namespace {

using Dist = RandomDist;
DeviceRandomFillFn g_device_fill = nullptr;

}  // namespace

void philox_fill_f64(double* out, int64_t n, uint64_t seed, uint64_t offset, RandomDist dist,
                     double a, double b) {
#pragma omp parallel for if (n > (1 << 15)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x = philox_word(seed, offset, static_cast<uint64_t>(i));
    switch (dist) {
      case Dist::Uniform:
        out[i] = a + (b - a) * static_cast<double>(philox_uniform(x));
        break;
      case Dist::Bernoulli:
        out[i] = static_cast<double>(philox_uniform(x)) < a ? 1.0 : 0.0;
        break;
      case Dist::Normal: {
        // Pair lanes (0,1), (2,3): the even lane gives r*cos, the odd lane r*sin.
        uint64_t base = static_cast<uint64_t>(i) & ~uint64_t{1};
        uint32_t x0 = philox_word(seed, offset, base), x1 = philox_word(seed, offset, base + 1);
        float u1 = philox_uniform_open0(x0), u2 = philox_uniform(x1);
        float r = std::sqrt(-2.0f * std::log(u1));
        float th = 6.2831853071795864f * u2;
        float z = (i & 1) ? r * std::sin(th) : r * std::cos(th);
        out[i] = a + b * static_cast<double>(z);
        break;
      }
    }
  }
}

namespace {

Tensor& fill_random(Tensor& t, Dist dist, double a, double b, Generator* gen, const char* op) {
  EMBER_CHECK_DTYPE(dist == Dist::Bernoulli || is_floating(t.dtype()), op,
                    ": expected a floating-point tensor, got ", t.dtype());
  Generator& g = gen ? *gen : default_generator();
  const int64_t n = t.numel();
  const uint64_t seed = g.seed();
  const uint64_t offset = g.reserve(static_cast<uint64_t>(n));
  if (t.device().is_gpu_like() && g_device_fill != nullptr &&
      g_device_fill(t, dist, a, b, seed, offset))
    return t;
  Tensor buf = empty(t.shape(), {kFloat64, kCPU});
  philox_fill_f64(static_cast<double*>(buf.data_ptr()), n, seed, offset, dist, a, b);
  t.copy_(buf);
  return t;
}

}  // namespace

void set_device_random_fill(DeviceRandomFillFn fn) { g_device_fill = fn; }

Tensor& uniform_(Tensor& t, double low, double high, Generator* gen) {
  EMBER_CHECK_VALUE(low <= high, "uniform_: expected low <= high, got ", low, " > ", high);
  return fill_random(t, Dist::Uniform, low, high, gen, "uniform_");
}
Tensor& normal_(Tensor& t, double mean, double stddev, Generator* gen) {
  EMBER_CHECK_VALUE(stddev >= 0, "normal_: expected stddev >= 0, got ", stddev);
  return fill_random(t, Dist::Normal, mean, stddev, gen, "normal_");
}
Tensor& bernoulli_(Tensor& t, double p, Generator* gen) {
  EMBER_CHECK_VALUE(p >= 0 && p <= 1, "bernoulli_: expected 0 <= p <= 1, got ", p);
  return fill_random(t, Dist::Bernoulli, p, 0, gen, "bernoulli_");
}
Tensor rand(const Shape& shape, TensorOptions opts, Generator* gen) {
  Tensor t = empty(shape, opts);
  return uniform_(t, 0, 1, gen);
}
Tensor randn(const Shape& shape, TensorOptions opts, Generator* gen) {
  Tensor t = empty(shape, opts);
  return normal_(t, 0, 1, gen);
}

}  // namespace ember
