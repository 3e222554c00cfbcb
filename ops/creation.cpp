// Factories built on kernels: random integers and permutations from Philox draws, evenly spaced
// values, identity matrices.
#include "ops/creation.h"

#include <cmath>

#include "ops/elementwise.h"
#include "ops/sort.h"

namespace ember::ops {
namespace {

Tensor scalar(double v, Device d) {
  return full({}, v, {kFloat64, d});
}

}  // namespace

Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions opts, Generator* gen) {
  EMBER_CHECK_VALUE(low < high, "randint: expected low < high, got low = ", low, " and high = ",
                    high);
  EMBER_CHECK_VALUE(static_cast<double>(high) - static_cast<double>(low) <= 9007199254740992.0,
                    "randint: the range [", low, ", ", high, ") is wider than 2^53");
  const Device d = opts.device;
  const double span = static_cast<double>(high) - static_cast<double>(low);
  // floor(u * span) < span for u < 1, but the product can round up to span: clamp below it.
  Tensor v = floor(mul(rand(shape, {kFloat64, d}, gen), scalar(span, d)));
  v = clamp(v, 0.0, span - 1.0);
  Tensor out = v.to(kInt64);
  if (low != 0) out = add(out, full({}, static_cast<double>(low), {kInt64, d}));
  return opts.dtype == kInt64 ? out : out.to(opts.dtype);
}

Tensor randperm(int64_t n, TensorOptions opts, Generator* gen) {
  EMBER_CHECK_VALUE(n >= 0, "randperm: n must be non-negative, got ", n);
  const Tensor p = argsort(rand({n}, {kFloat64, opts.device}, gen), 0);
  return opts.dtype == kInt64 ? p : p.to(opts.dtype);
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions opts) {
  EMBER_CHECK_VALUE(steps >= 0, "linspace: steps must be non-negative, got ", steps);
  EMBER_CHECK_VALUE(std::isfinite(start) && std::isfinite(end), "linspace: start and end must be ",
                    "finite, got ", start, " and ", end);
  const Device d = opts.device;
  if (steps <= 1) return full({steps}, start, opts);
  const double step = (end - start) / static_cast<double>(steps - 1);
  const Tensor i = arange(0.0, static_cast<double>(steps), 1.0, {kFloat64, d});
  const Tensor from_start = add(scalar(start, d), mul(i, scalar(step, d)));
  const Tensor from_end =
      sub(scalar(end, d), mul(sub(scalar(static_cast<double>(steps - 1), d), i), scalar(step, d)));
  const Tensor first_half = lt(i, scalar(static_cast<double>(steps / 2), d));
  const Tensor v = where(first_half, from_start, from_end);
  return opts.dtype == kFloat64 ? v : v.to(opts.dtype);
}

Tensor logspace(double start, double end, int64_t steps, double base, TensorOptions opts) {
  const Tensor e = linspace(start, end, steps, {kFloat64, opts.device});
  const Tensor v = pow(full({}, base, {kFloat64, opts.device}), e);
  return opts.dtype == kFloat64 ? v : v.to(opts.dtype);
}

Tensor eye(int64_t n, int64_t m, TensorOptions opts) {
  if (m < 0) m = n;
  EMBER_CHECK_VALUE(n >= 0, "eye: n must be non-negative, got ", n);
  Tensor out = zeros({n, m}, opts);
  const int64_t k = std::min(n, m);
  if (k > 0) out.as_strided({k}, {m + 1}, out.offset()).fill_(1.0);
  return out;
}

}  // namespace ember::ops
