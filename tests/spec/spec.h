// The op-spec harness: each op's cases (shapes with odd sizes and broadcasts, empty and 0-D
// tensors, non-contiguous views, dtypes, tolerances) are written once, in tests/spec/<op>.cpp,
// with a naive float64 reference written there too, and run on every target:
//
//   the `spec` executable   cpu, then emu:0 in forward, reverse and random thread order;
//   the `gpu` executable    cuda:0 (the same files compiled with EMBER_TEST_DEVICE_CUDA=1).
//
// A case checks the result's shape, dtype, device and every value against the reference. A dtype
// the target's kernels do not implement is a case too: it must raise DTypeError (the contract of
// ops::check_compute_dtype), never run silently on some other path.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ops/op_test_util.h"
#include "runtime/tensor.h"
#include "simt/simt_test_util.h"

#ifndef EMBER_TEST_DEVICE_CUDA
#define EMBER_TEST_DEVICE_CUDA 0
#endif

namespace ember::test {

// One place a spec runs: a device and, on the emulator, the order its threads run in.
struct Target {
  Device device;
  std::optional<simt_test::Config> order;
  std::string name() const { return device.str() + (order ? " (" + order->name() + ")" : ""); }
};

// The cpu, then emu:0 in each of simt_test::test_orders(); cuda:0 alone in the gpu executable.
inline std::vector<Target> spec_targets() {
#if EMBER_TEST_DEVICE_CUDA
  return {{Device(DeviceType::CUDA, 0), std::nullopt}};
#else
  std::vector<Target> targets = {{Device(), std::nullopt}};
  for (const simt_test::Config& c : simt_test::test_orders())
    targets.push_back({Device(DeviceType::EMU, 0), c});
  return targets;
#endif
}

// Runs body(device) once per target, with the target in every failure's context and the
// emulator's thread order set for the emu targets.
template <typename Body>
void for_each_target(Body&& body) {
  for (const Target& target : spec_targets()) {
    const std::string target_name = target.name();
    CAPTURE(target_name);
    std::optional<simt_test::ScopedOptions> scoped;
    if (target.order) scoped.emplace(*target.order);
    body(target.device);
  }
}

// Note [Large cases]: a case marked large (a long row, many blocks: the paths a real GPU takes
// for big tensors) costs seconds per thread order on the emulator, so it runs there in forward
// order only; the reverse and random orders run every other case, among them medium ones with
// several warps and blocks, which is where an order-dependent bug shows. The cpu and cuda run
// every case.
inline bool runs_large_cases(Device device) {
  return !device.is_emu() || simt::options().order == simt::Order::Forward;
}

// Whether the kernels of `device` compute in dtype t: the cpu every dtype, the GPU backends
// float32, float64, float16, bfloat16, int32 and int64 (what ops::check_compute_dtype promises).
inline bool implements(Device device, DType t) {
  if (device.is_cpu()) return true;
  return is_floating(t) || t == kInt32 || t == kInt64;
}

// How close a result must be: |got - want| <= atol + rtol * |want|, or, for float16 and
// bfloat16, within `ulps` units in the last place of want rounded to the dtype. The default is
// op_test_util.h's close() (float32 rtol 2e-5, atol 1e-5; float64 1e-11 both; integers exact)
// and, for the half types, 1 ulp: the float64 op on the same half inputs, rounded, give or take
// one step (Note [Half storage] in kernels/cuda/device_utils.cuh), or an absolute 1e-6 where a
// result near zero comes out of float32 arithmetic on terms near 1 (float32's own rounding).
struct Tolerance {
  double rtol, atol;
  int ulps = 0;
};
inline Tolerance default_tolerance(DType t) {
  if (!is_floating(t)) return {0, 0};
  if (t == kFloat16 || t == kBFloat16) return {0, 1e-6, 1};
  return t == kFloat32 ? Tolerance{2e-5, 1e-5} : Tolerance{1e-11, 1e-11};
}

// The default tolerance with its absolute part times `scale`: for results that round at the size
// of some larger quantity (a logit, a sum's terms), said where it is used.
inline Tolerance scaled_tolerance(DType t, double scale) {
  Tolerance tol = default_tolerance(t);
  tol.atol *= scale;
  return tol;
}

// How many representable float16/bfloat16 values lie between finite a and b (both
// representable): the distance of their bit patterns on a line where -0 and +0 meet.
inline int64_t half_steps(double a, double b, DType t) {
  auto line = [t](double v) {
    const int64_t p = half_position(std::abs(v), t);
    return std::signbit(v) ? -p : p;
  };
  return std::abs(line(a) - line(b));
}

// Whether got matches want within tol for dtype t (NaN matches NaN, infinities match exactly).
inline bool within(double got, double want, DType t, Tolerance tol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  const bool half = t == kFloat16 || t == kBFloat16;
  if (half) {
    const double r = as_stored(want, t);
    if (!std::isinf(got) && !std::isinf(r) && half_steps(got, r, t) <= tol.ulps) return true;
  }
  if (std::isinf(want) || std::isinf(got))
    return got == want || (half && got == as_stored(want, t));
  return std::abs(got - want) <= tol.atol + tol.rtol * std::abs(want);
}

// Checks that `got` (on any device) is on `device` with dtype `t` and shape `shape`, and that
// its values equal `want` (row-major) within `tol`; NaN matches NaN, infinities match exactly.
// Reports the first mismatch.
// tol_of(i): the tolerance of element i, for bounds that differ per element.
template <typename TolOf>
void check_result_each(const Tensor& got, Device device, DType t, const Shape& shape,
                       const std::vector<double>& want, TolOf&& tol_of) {
  CHECK(got.device() == device);
  CHECK(got.dtype() == t);
  REQUIRE(got.shape() == shape);
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const Tolerance tol = tol_of(i);
    if (!within(g[i], want[i], t, tol)) {
      CAPTURE(i);
      CAPTURE(g[i]);
      CAPTURE(want[i]);
      CAPTURE(tol.atol);
      FAIL_CHECK("value mismatch");
      return;
    }
  }
}
inline void check_result(const Tensor& got, Device device, DType t, const Shape& shape,
                         const std::vector<double>& want, Tolerance tol) {
  check_result_each(got, device, t, shape, want, [tol](size_t) { return tol; });
}
inline void check_result(const Tensor& got, Device device, DType t, const Shape& shape,
                         const std::vector<double>& want) {
  check_result(got, device, t, shape, want, default_tolerance(t));
}

}  // namespace ember::test
