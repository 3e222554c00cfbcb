// ONNX's Resize (opset 13): nearest, linear and cubic interpolation over any axes, every
// coordinate transformation mode, as a product of 1-D resamplings. Each resized axis becomes
// a small table (source index and weight per output position and tap), computed in double on
// the host, and the tensor is resampled along that axis by index_select and a weighted sum:
// exact for these separable kernels, and the same on every device.
#include <algorithm>
#include <array>
#include <cmath>

#include "autograd/copy.h"
#include "autograd/elementwise.h"
#include "autograd/index.h"
#include "autograd/shape.h"
#include "onnx/op_registry.h"

namespace ember::onnx {
namespace {

struct Axis1d {
  int64_t in = 0, out = 0;
  // The resized length before rounding (in x scale when scales are given): what the
  // coordinate transformations divide by, as ONNX's reference does.
  double length = 0;
  double scale = 1, roi_start = 0, roi_end = 1;
};

// The source coordinate of output position o, per coordinate_transformation_mode.
double source_coord(const OpArgs& a, const std::string& mode, const Axis1d& ax, int64_t o) {
  const double x = static_cast<double>(o);
  if (mode == "half_pixel") return (x + 0.5) / ax.scale - 0.5;
  if (mode == "pytorch_half_pixel") return ax.length > 1 ? (x + 0.5) / ax.scale - 0.5 : 0.0;
  if (mode == "align_corners")
    return ax.length == 1 ? 0.0 : x * static_cast<double>(ax.in - 1) / (ax.length - 1);
  if (mode == "asymmetric") return x / ax.scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / ax.scale;
  if (mode == "tf_crop_and_resize")
    return ax.length > 1 ? ax.roi_start * (ax.in - 1) +
                               x * (ax.roi_end - ax.roi_start) * (ax.in - 1) / (ax.length - 1)
                      : 0.5 * (ax.roi_start + ax.roi_end) * (ax.in - 1);
  a.fail("coordinate_transformation_mode '" + mode + "' is not known");
}

int64_t nearest_index(const OpArgs& a, const std::string& mode, double x) {
  if (mode == "round_prefer_floor") return static_cast<int64_t>(x == std::floor(x) + 0.5 ? std::floor(x) : std::round(x));
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(std::round(x));
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  a.fail("nearest_mode '" + mode + "' is not known");
}

// Keys' cubic convolution weights for the 4 taps around a point at fraction t past floor(x).
std::array<double, 4> cubic_weights(double t, double A) {
  auto w = [A](double d) {
    d = std::fabs(d);
    if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
    if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
    return 0.0;
  };
  return {w(t + 1), w(t), w(1 - t), w(2 - t)};
}

Tensor resample_axis(const OpArgs& a, const Tensor& x, int64_t d, const Axis1d& ax) {
  const std::string mode = a.s("mode", "nearest");
  const std::string ctm = a.s("coordinate_transformation_mode", "half_pixel");
  const bool extrapolate = ctm == "tf_crop_and_resize";
  const int64_t taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  std::vector<std::vector<int64_t>> idx(taps, std::vector<int64_t>(ax.out));
  std::vector<std::vector<double>> wt(taps, std::vector<double>(ax.out));
  std::vector<double> inside(ax.out, 1.0);
  const bool exclude = a.i("exclude_outside", 0) != 0;
  auto clampi = [&](int64_t i) { return std::clamp<int64_t>(i, 0, ax.in - 1); };
  for (int64_t o = 0; o < ax.out; ++o) {
    const double s = source_coord(a, ctm, ax, o);
    if (extrapolate && (s < 0 || s > ax.in - 1)) inside[o] = 0.0;
    if (mode == "nearest") {
      idx[0][o] = clampi(nearest_index(a, a.s("nearest_mode", "round_prefer_floor"), s));
      wt[0][o] = 1.0;
      continue;
    }
    const double f = std::floor(s), t = s - f;
    const int64_t base = static_cast<int64_t>(f);
    if (mode == "linear") {
      idx[0][o] = clampi(base);
      idx[1][o] = clampi(base + 1);
      wt[0][o] = 1 - t;
      wt[1][o] = t;
      continue;
    }
    auto w = cubic_weights(t, a.f("cubic_coeff_a", -0.75));
    double total = 0;
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t i = base - 1 + k;
      if (exclude && (i < 0 || i >= ax.in)) w[k] = 0;
      total += w[k];
      idx[k][o] = clampi(i);
    }
    for (int64_t k = 0; k < 4; ++k) wt[k][o] = exclude ? w[k] / total : w[k];
  }
  Shape along(static_cast<size_t>(x.dim()), 1);
  along[d] = ax.out;
  Tensor y;
  for (int64_t k = 0; k < taps; ++k) {
    Tensor picked = index_select(x, d, from_vector(idx[k], x.device()));
    if (taps > 1) picked = mul(picked, to(reshape(from_vector(wt[k]), along), x.device(), x.dtype()));
    y = y.defined() ? add(y, picked) : picked;
  }
  if (extrapolate) {
    const Tensor keep = to(reshape(from_vector(inside), along), x.device(), x.dtype());
    const double value = a.f("extrapolation_value", 0.0);
    y = add(mul(y, keep), mul(sub(ones({}, TensorOptions(x.dtype(), x.device())), keep), value));
  }
  return y;
}

std::vector<Tensor> resize_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const int64_t r = x.dim();
  const std::string mode = a.s("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    a.fail("mode '" + mode + "' is not one of nearest, linear, cubic");
  if (mode != "nearest" && (x.dtype() != kFloat32 && x.dtype() != kFloat64 &&
                            x.dtype() != kFloat16 && x.dtype() != kBFloat16))
    a.fail(mode + " interpolation needs a floating input, got " + dtype_name(x.dtype()));
  const bool has_sizes = a.has_input(3) && a.input(3).numel() > 0;
  const bool has_scales = a.has_input(2) && a.input(2).numel() > 0;
  if (has_sizes == has_scales) a.fail("exactly one of scales and sizes must be given");
  std::vector<double> roi;
  if (a.has_input(1) && a.input(1).numel() > 0) roi = to(a.input(1), kFloat64).to_vector<double>();
  const bool crop = a.s("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize";
  if (crop && static_cast<int64_t>(roi.size()) != 2 * r) a.fail("tf_crop_and_resize needs an roi of 2 values per dim");
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (has_scales) scales = to(a.input(2), kFloat64).to_vector<double>();
  else sizes = a.ints_input(3);
  if (static_cast<int64_t>(has_scales ? scales.size() : sizes.size()) != r)
    a.fail("scales or sizes need one value per input dim");
  Tensor y = x;
  for (int64_t d = 0; d < r; ++d) {
    Axis1d ax;
    ax.in = x.size(d);
    if (crop) {
      ax.roi_start = roi[d];
      ax.roi_end = roi[r + d];
    }
    if (has_scales) {
      if (scales[d] <= 0) a.fail("scales must be positive");
      ax.scale = scales[d];
      ax.length = ax.in * (crop ? ax.roi_end - ax.roi_start : 1.0) * ax.scale;
      ax.out = static_cast<int64_t>(std::floor(ax.length));
    } else {
      if (sizes[d] < 0) a.fail("sizes must be non-negative");
      ax.out = sizes[d];
      ax.scale = ax.in > 0 ? static_cast<double>(ax.out) / static_cast<double>(ax.in) : 1.0;
      ax.length = static_cast<double>(ax.out);
    }
    if (ax.out == ax.in && ax.scale == 1.0 && !crop) continue;
    if (ax.in == 0 || ax.out == 0) a.fail("cannot resize an empty dim");
    y = resample_axis(a, y, d, ax);
  }
  return {y.is_same(x) ? clone(x) : y};
}

}  // namespace

void add_resize_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"Resize", 11,
                      {"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                       "extrapolation_value", "mode", "nearest_mode"},
                      resize_op});
}

}  // namespace ember::onnx
