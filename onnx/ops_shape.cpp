// ONNX's shape and data-movement operators (Reshape, Transpose, Slice, Gather, Concat, ...),
// the constants, Pad, and the reductions. Shape-like inputs (shape, axes, starts, pads) are
// read to the host; the constant-folding pass (onnx/passes.cpp) runs these once at load time
// wherever their inputs are constants.
#include <algorithm>

#include "autograd/copy.h"
#include "autograd/elementwise.h"
#include "autograd/index.h"
#include "autograd/pad.h"
#include "autograd/reduce.h"
#include "autograd/shape.h"
#include "onnx/op_registry.h"

namespace ember::onnx {
namespace {

using Out = std::vector<Tensor>;

Out reshape_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  std::vector<int64_t> shape = a.ints_input(1);
  const bool allow_zero = a.i("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (static_cast<int64_t>(i) >= x.dim()) a.fail("a 0 in shape copies a dim the input lacks");
      shape[i] = x.size(static_cast<int64_t>(i));
    }
    if (shape[i] == -1) {
      if (infer >= 0) a.fail("shape has more than one -1");
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      a.fail("shape has a negative size " + std::to_string(shape[i]));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      a.fail("cannot infer the -1 of shape for " + std::to_string(x.numel()) + " elements");
    shape[infer] = x.numel() / known;
  }
  return {reshape(x, shape)};
}

Out flatten_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  int64_t axis = a.i("axis", 1);
  if (axis < 0) axis += x.dim();
  if (axis < 0 || axis > x.dim()) a.fail("axis is outside the input's rank");
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  return {reshape(x, {outer, outer == 0 ? 0 : x.numel() / std::max<int64_t>(outer, 1)})};
}

Out transpose_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  std::vector<int64_t> perm = a.ints("perm");
  if (perm.empty())
    for (int64_t d = x.dim() - 1; d >= 0; --d) perm.push_back(d);
  return {permute(x, perm)};
}

Out concat_op(const OpArgs& a) {
  std::vector<Tensor> xs;
  for (size_t k = 0; k < a.in.size(); ++k) xs.push_back(a.input(k));
  return {cat(xs, normalize_axis(a, a.i("axis", 0), xs.at(0).dim()))};
}

Out split_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const int64_t axis = normalize_axis(a, a.i("axis", 0), x.dim());
  const int64_t n = static_cast<int64_t>(a.node.outputs.size());
  std::vector<int64_t> sizes;
  if (a.has_input(1)) {
    sizes = a.ints_input(1);
  } else if (a.has("split")) {  // opset 11: an attribute
    sizes = a.ints("split");
  } else {
    const int64_t each = (x.size(axis) + n - 1) / n;
    for (int64_t k = 0, left = x.size(axis); k < n; ++k, left -= each)
      sizes.push_back(std::min(each, left));
  }
  if (static_cast<int64_t>(sizes.size()) != n) a.fail("split gives a size per output");
  return split(x, sizes, axis);
}

Out slice_op(const OpArgs& a) {
  Tensor x = a.input(0);
  const auto starts = a.ints_input(1), ends = a.ints_input(2);
  std::vector<int64_t> axes = a.has_input(3) ? a.ints_input(3) : std::vector<int64_t>{};
  std::vector<int64_t> steps = a.has_input(4) ? a.ints_input(4) : std::vector<int64_t>{};
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    a.fail("starts, ends, axes and steps must have one value each per sliced axis");
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t d = normalize_axis(a, axes[i], x.dim()), n = x.size(d), step = steps[i];
    if (step == 0) a.fail("a step of 0");
    auto wrap = [n](int64_t v) { return v < 0 ? v + n : v; };
    int64_t s = wrap(std::clamp<int64_t>(starts[i], -n - 1, n + 1));
    int64_t e = wrap(std::clamp<int64_t>(ends[i], -n - 1, n + 1));
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, s, n);
      x = slice(x, d, s, e, step);
    } else {  // a negative step walks the flipped axis forwards
      s = std::clamp<int64_t>(s, -1, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      const int64_t fs = n - 1 - s, fe = std::max(n - 1 - e, fs);
      x = slice(flip(x, {d}), d, fs, fe, -step);
    }
  }
  return {x};
}

Out squeeze_op(const OpArgs& a) {
  Tensor x = a.input(0);
  if (!a.has_input(1) && !a.has("axes")) return {squeeze(x)};
  auto axes = a.has("axes") ? a.ints("axes") : a.ints_input(1);  // an attribute until opset 13
  for (auto& ax : axes) {
    ax = normalize_axis(a, ax, x.dim());
    if (x.size(ax) != 1) a.fail("cannot squeeze axis " + std::to_string(ax) + " of size " +
                                std::to_string(x.size(ax)));
  }
  std::sort(axes.rbegin(), axes.rend());
  for (int64_t ax : axes) x = squeeze(x, ax);
  return {x};
}

Out unsqueeze_op(const OpArgs& a) {
  Tensor x = a.input(0);
  auto axes = a.has("axes") ? a.ints("axes") : a.ints_input(1);  // an attribute until opset 13
  const int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  for (auto& ax : axes) ax = normalize_axis(a, ax, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) a.fail("repeated axes");
  for (int64_t ax : axes) x = unsqueeze(x, ax);
  return {x};
}

Out gather_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const Tensor& idx = a.input(1);
  const int64_t axis = normalize_axis(a, a.i("axis", 0), x.dim());
  // Negative indices count from the end, as in ONNX; index_select checks the range.
  const Tensor n = full({}, static_cast<double>(x.size(axis)), TensorOptions(idx.dtype(), idx.device()));
  const Tensor zero = zeros({}, TensorOptions(idx.dtype(), idx.device()));
  const Tensor flat = reshape(where(lt(idx, zero), add(idx, n), idx), {-1});
  Shape out(x.shape().begin(), x.shape().begin() + axis);
  out.insert(out.end(), idx.shape().begin(), idx.shape().end());
  out.insert(out.end(), x.shape().begin() + axis + 1, x.shape().end());
  return {reshape(index_select(x, axis, to(flat, kInt64)), out)};
}

Out shape_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const int64_t r = x.dim();
  auto bound = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  const int64_t s = bound(a.i("start", 0)), e = std::max(s, bound(a.i("end", r)));
  std::vector<int64_t> dims(x.shape().begin() + s, x.shape().begin() + e);
  return {from_vector(dims, a.device)};
}

Out constant_op(const OpArgs& a) {
  if (a.has("value")) return {to(a.tensor("value"), a.device)};
  if (a.has("value_float")) return {full({}, a.f("value_float", 0), TensorOptions(kFloat32, a.device))};
  if (a.has("value_int")) return {full({}, static_cast<double>(a.i("value_int", 0)), TensorOptions(kInt64, a.device))};
  if (a.has("value_floats")) {
    const auto v = a.floats("value_floats");
    return {from_vector(std::vector<float>(v.begin(), v.end()), a.device)};
  }
  if (a.has("value_ints")) return {from_vector(a.ints("value_ints"), a.device)};
  a.fail("no value attribute (value, value_float(s), value_int(s))");
}

Out constant_of_shape_op(const OpArgs& a) {
  const auto shape = a.ints_input(0);
  for (int64_t d : shape) if (d < 0) a.fail("negative size in shape");
  if (!a.has("value")) return {zeros(shape, TensorOptions(kFloat32, a.device))};
  const Tensor& v = a.tensor("value");
  if (v.numel() != 1) a.fail("value must hold one element");
  return {full(shape, v.item(), TensorOptions(v.dtype(), a.device))};
}

Out expand_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const auto shape = a.ints_input(1);
  const size_t r = std::max(shape.size(), static_cast<size_t>(x.dim()));
  Shape out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t xd = i + x.dim() >= r ? x.size(static_cast<int64_t>(i + x.dim() - r)) : 1;
    const int64_t sd = i + shape.size() >= r ? shape[i + shape.size() - r] : 1;
    if (xd != sd && xd != 1 && sd != 1)
      a.fail("shape " + detail::str_cat(Shape(shape)) + " does not broadcast with the input's " +
             detail::str_cat(x.shape()));
    out[i] = xd == 1 ? sd : xd;
  }
  return {contiguous(expand(x, out))};
}

Out pad_op(const OpArgs& a) {
  Tensor x = a.input(0);
  const auto pads = a.ints_input(1);
  const int64_t r = x.dim();
  if (static_cast<int64_t>(pads.size()) != 2 * r) a.fail("pads needs 2 values per input dim");
  const double value = a.has_input(2) ? a.scalar_input(2) : 0.0;
  const std::string mode = a.s("mode", "constant");
  std::string ember_mode;
  if (mode == "constant") ember_mode = "constant";
  else if (mode == "reflect") ember_mode = "reflect";
  else if (mode == "edge") ember_mode = "replicate";
  else a.fail("mode '" + mode + "' is not one of constant, reflect, edge");
  // Negative pads crop first; the rest pads the dims from the last (PyTorch's order).
  std::vector<int64_t> torch_pads;
  int64_t first = r;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t lo = pads[d], hi = pads[r + d];
    const int64_t crop_lo = std::max<int64_t>(0, -lo), crop_hi = std::max<int64_t>(0, -hi);
    if (crop_lo + crop_hi > x.size(d))
      a.fail("negative pads remove " + std::to_string(crop_lo + crop_hi) + " elements of axis " +
             std::to_string(d) + ", which has " + std::to_string(x.size(d)));
    x = slice(x, d, crop_lo, x.size(d) - crop_hi);
    if ((lo > 0 || hi > 0) && first == r) first = d;
  }
  if (first == r) return {contiguous(x)};
  for (int64_t d = r - 1; d >= first; --d) {
    torch_pads.push_back(std::max<int64_t>(0, pads[d]));
    torch_pads.push_back(std::max<int64_t>(0, pads[r + d]));
  }
  // Ember's reflect and replicate pads take floating tensors; integers (below 2^53) go through
  // float64 exactly.
  const bool integer = x.dtype() == kInt32 || x.dtype() == kInt64 || x.dtype() == kUInt8;
  if (integer && ember_mode != "constant")
    return {to(pad(to(x, kFloat64), torch_pads, ember_mode, value), x.dtype())};
  return {pad(x, torch_pads, ember_mode, value)};
}

// ReduceSum's axes are an input (opset 13), the others' an attribute (until opset 18).
std::vector<int64_t> reduce_axes(const OpArgs& a, bool axes_input, bool* noop) {
  const Tensor& x = a.input(0);
  // ReduceSum's axes became an input in opset 13; before, they were an attribute.
  std::vector<int64_t> axes = axes_input && a.has_input(1) ? a.ints_input(1) : a.ints("axes");
  *noop = axes.empty() && a.i("noop_with_empty_axes", 0) != 0;
  if (axes.empty())
    for (int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
  for (auto& ax : axes) ax = normalize_axis(a, ax, x.dim());
  return axes;
}

template <Tensor (*Reduce)(const Tensor&, const std::vector<int64_t>&, bool), bool kAxesInput>
Out reduce_op(const OpArgs& a) {
  bool noop = false;
  const auto axes = reduce_axes(a, kAxesInput, &noop);
  if (noop) return {a.input(0)};
  return {Reduce(a.input(0), axes, a.i("keepdims", 1) != 0)};
}

template <bool kMax>
Out arg_op(const OpArgs& a) {
  Tensor x = a.input(0);
  const int64_t axis = normalize_axis(a, a.i("axis", 0), x.dim());
  const bool keep = a.i("keepdims", 1) != 0, last = a.i("select_last_index", 0) != 0;
  if (last) x = flip(x, {axis});
  Tensor idx = kMax ? argmax(x, axis, keep) : argmin(x, axis, keep);
  if (last) idx = sub(full({}, static_cast<double>(x.size(axis) - 1), TensorOptions(kInt64, x.device())), idx);
  return {idx};
}

Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& d, bool k) { return sum(x, d, k); }
Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& d, bool k) { return mean(x, d, k); }
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& d, bool k) { return amax(x, d, k); }
Tensor reduce_min(const Tensor& x, const std::vector<int64_t>& d, bool k) { return amin(x, d, k); }

}  // namespace

void add_shape_ops(std::vector<OpDef>& ops) {
  ops.insert(ops.end(), {
    OpDef{"Reshape", 5, {"allowzero"}, reshape_op},
    OpDef{"Flatten", 11, {"axis"}, flatten_op},
    OpDef{"Transpose", 1, {"perm"}, transpose_op},
    OpDef{"Concat", 11, {"axis"}, concat_op},
    OpDef{"Split", 11, {"axis", "split"}, split_op},
    OpDef{"Slice", 11, {}, slice_op},
    OpDef{"Squeeze", 11, {"axes"}, squeeze_op},
    OpDef{"Unsqueeze", 11, {"axes"}, unsqueeze_op},
    OpDef{"Gather", 11, {"axis"}, gather_op},
    OpDef{"Shape", 1, {"start", "end"}, shape_op},
    OpDef{"Constant", 1, {"value", "value_float", "value_floats", "value_int", "value_ints"},
          constant_op},
    OpDef{"ConstantOfShape", 9, {"value"}, constant_of_shape_op},
    OpDef{"Expand", 8, {}, expand_op},
    OpDef{"Tile", 6, {}, [](const OpArgs& a) -> Out { return {tile(a.input(0), a.ints_input(1))}; }},
    OpDef{"Pad", 11, {"mode"}, pad_op},
    OpDef{"ReduceSum", 11, {"axes", "keepdims", "noop_with_empty_axes"}, reduce_op<reduce_sum, true>},
    OpDef{"ReduceMean", 11, {"axes", "keepdims"}, reduce_op<reduce_mean, false>},
    OpDef{"ReduceMax", 11, {"axes", "keepdims"}, reduce_op<reduce_max, false>},
    OpDef{"ReduceMin", 11, {"axes", "keepdims"}, reduce_op<reduce_min, false>},
    OpDef{"ArgMax", 11, {"axis", "keepdims", "select_last_index"}, arg_op<true>},
    OpDef{"ArgMin", 11, {"axis", "keepdims", "select_last_index"}, arg_op<false>},
  });
}

}  // namespace ember::onnx
