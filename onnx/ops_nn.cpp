// ONNX's network operators on Ember's: Conv, ConvTranspose, the pools, the normalisations
// (inference), Gemm and MatMul. 1-D inputs run as 2-D ones of height 1; padding that Ember's
// kernels cannot take in one call (asymmetric, or more than half the window) is applied first
// with an explicit pad. Resize is in onnx/ops_resize.cpp.
#include <cmath>
#include <limits>

#include "autograd/batch_norm.h"
#include "autograd/conv2d.h"
#include "autograd/conv_transpose2d.h"
#include "autograd/copy.h"
#include "autograd/elementwise.h"
#include "autograd/layer_norm.h"
#include "autograd/math.h"
#include "autograd/matmul.h"
#include "autograd/pad.h"
#include "autograd/pool2d.h"
#include "autograd/reduce.h"
#include "autograd/shape.h"
#include "ops/conv2d.h"
#include "ops/linear.h"
#include "onnx/op_registry.h"

namespace ember::onnx {
namespace {

using Out = std::vector<Tensor>;

// A window operator's geometry over the 2 spatial dims (a 1-D one has height 1).
struct Window {
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, dilation{1, 1}, begin{0, 0}, end{0, 0};
  bool one_d = false;
  bool symmetric() const { return begin == end; }
};

// Reads kernel_shape (or the weight's), strides, dilations, pads and auto_pad for input x.
Window window_of(const OpArgs& a, const Tensor& x, std::vector<int64_t> kernel) {
  const int64_t sd = x.dim() - 2;
  if (sd != 1 && sd != 2)
    a.fail("only 1-D and 2-D inputs ([N, C, L] or [N, C, H, W]) are supported, got shape " +
           detail::str_cat(x.shape()));
  // Read in place (the op runs on every run of the model): an absent list is its default.
  if (const auto* k = a.ints_if("kernel_shape")) kernel = *k;
  const auto* strides = a.ints_if("strides");
  const auto* dil = a.ints_if("dilations");
  const auto* pads = a.ints_if("pads");
  auto sized = [](const std::vector<int64_t>* v, int64_t n) {
    return v == nullptr || static_cast<int64_t>(v->size()) == n;
  };
  if (static_cast<int64_t>(kernel.size()) != sd || !sized(strides, sd) || !sized(dil, sd) ||
      !sized(pads, 2 * sd))
    a.fail("kernel_shape, strides, dilations need " + std::to_string(sd) + " values and pads " +
           std::to_string(2 * sd) + " for a " + std::to_string(sd) + "-D input");
  auto at = [](const std::vector<int64_t>* v, int64_t i, int64_t fallback) {
    return v != nullptr ? (*v)[static_cast<size_t>(i)] : fallback;
  };
  Window w;
  w.one_d = sd == 1;
  const int64_t o = 2 - sd;  // a 1-D window fills the width
  for (int64_t i = 0; i < sd; ++i) {
    w.kernel[o + i] = kernel[i];
    w.stride[o + i] = at(strides, i, 1);
    w.dilation[o + i] = at(dil, i, 1);
    w.begin[o + i] = at(pads, i, 0);
    w.end[o + i] = at(pads, sd + i, 0);
    if (w.kernel[o + i] < 1 || w.stride[o + i] < 1 || w.dilation[o + i] < 1 ||
        w.begin[o + i] < 0 || w.end[o + i] < 0)
      a.fail("kernel sizes, strides and dilations must be positive, pads non-negative");
  }
  const std::string auto_pad = a.s("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    w.begin = w.end = {0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int64_t i = 0; i < sd; ++i) {
      const int64_t in = x.size(2 + i), s = w.stride[o + i];
      const int64_t out = (in + s - 1) / s;
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * s + (kernel[i] - 1) * w.dilation[o + i] + 1 - in);
      const int64_t small = total / 2, big = total - small;
      w.begin[o + i] = auto_pad == "SAME_UPPER" ? small : big;
      w.end[o + i] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    a.fail("auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  return w;
}

Tensor as_2d(const Tensor& x, bool one_d) { return one_d ? unsqueeze(x, 2) : x; }
Tensor from_2d(const Tensor& y, bool one_d) { return one_d ? squeeze(y, 2) : y; }

// x padded by the window's pads with `value` (PyTorch's order: width pair, then height pair).
Tensor pad_explicit(const Tensor& x, const Window& w, double value) {
  return pad(x, {w.begin[1], w.end[1], w.begin[0], w.end[0]}, "constant", value);
}

// The bounds of the activation fused into a Conv: ReLU's, a Clip's, or none (-inf, inf).
std::pair<double, double> fused_bounds(const Node& node) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return node.fused_clip ? *node.fused_clip
         : node.fused_relu ? std::make_pair(0.0, kInf)
                           : std::make_pair(-kInf, kInf);
}

// Whether `z` can be added inside the convolution: y's shape, dtype and device.
bool residual_inside(const Tensor& z2, const Tensor& x2, const Tensor& w2,
                     const ops::Conv2dParams& p) {
  return z2.shape() == ops::conv2d_output_shape(x2.shape(), w2.shape(), p) &&
         z2.dtype() == x2.dtype() && z2.device() == x2.device();
}

// A Conv with its residual Add (and activation) fused in (onnx/passes.cpp): input 3 added
// before the clamp, inside the convolution where it has y's shape, dtype and device
// (ops::conv2d_bias_add_clamp), else after it with the Add's broadcasting.
Tensor residual_conv(const OpArgs& a, const Tensor& x2, const Tensor& w2, const Tensor& bias,
                     const ops::Conv2dParams& p, bool one_d) {
  const ops::PackedConv2dFilters* packed = a.node.packed_filters.get();
  const auto [lo, hi] = fused_bounds(a.node);
  const Tensor& z = a.input(3);
  const Tensor z2 = as_2d(z, one_d);
  if (residual_inside(z2, x2, w2, p))
    return from_2d(ops::conv2d_bias_add_clamp(x2, w2, bias, z2, p, lo, hi, packed), one_d);
  const Tensor sum = add(from_2d(ops::conv2d(x2, w2, bias, p), one_d), z);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return lo == -kInf && hi == kInf ? sum : clamp(sum, lo, hi);
}

// A packed Conv's forward as prepared for x's shape (Note [Prepared convolutions] in
// ops/conv2d.cpp): prepared again here where the last preparation does not serve this run and
// the forward has one form (2-D, no explicit pad, any residual inside); undefined where not.
Tensor prepared_conv(const OpArgs& a, const Tensor& x2, const Tensor& w2, const Tensor& bias,
                     const Tensor& z, const ops::Conv2dParams* p) {
  Node::PreparedConv& slot = *a.node.prepared_conv;
  std::shared_ptr<const ops::PreparedConv2d> prepared;
  {
    std::lock_guard<std::mutex> lock(slot.mu);
    prepared = slot.prepared;
  }
  if (prepared)
    if (Tensor y = ops::run_prepared_conv2d(*prepared, x2, w2, bias, z); y.defined()) return y;
  if (p == nullptr || (z.defined() && !residual_inside(z, x2, w2, *p))) return Tensor();
  const auto [lo, hi] = fused_bounds(a.node);
  prepared = ops::prepare_conv2d(x2, w2, bias, z, *p, lo, hi, a.node.packed_filters.get());
  {
    std::lock_guard<std::mutex> lock(slot.mu);
    slot.prepared = prepared;
  }
  return prepared ? ops::run_prepared_conv2d(*prepared, x2, w2, bias, z) : Tensor();
}

Out conv_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const Tensor& weight = a.input(1);
  const Tensor bias = a.has_input(2) ? a.input(2) : Tensor();
  const Tensor residual = a.node.fused_add ? a.input(3) : Tensor();
  const bool prepares = a.node.prepared_conv != nullptr && x.dim() == 4;
  if (prepares)  // as prepared at an earlier run, checks and choice made then
    if (Tensor y = prepared_conv(a, x, weight, bias, residual, nullptr); y.defined()) return {y};
  if (weight.dim() != x.dim()) a.fail("the weight's rank must equal the input's");
  const Window w = window_of(a, x, Shape(weight.shape().begin() + 2, weight.shape().end()));
  Tensor x2 = as_2d(x, w.one_d), w2 = as_2d(weight, w.one_d);
  Conv2dOptions opts;
  opts.stride(w.stride[0], w.stride[1]).dilation(w.dilation[0], w.dilation[1]);
  opts.groups(a.i("group", 1));
  if (w.symmetric()) opts.padding(w.begin[0], w.begin[1]);
  else x2 = pad_explicit(x2, w, 0.0);
  if (prepares && w.symmetric())
    if (Tensor y = prepared_conv(a, x2, w2, bias, residual, &opts.params); y.defined()) return {y};
  if (a.node.fused_add) return {residual_conv(a, x2, w2, bias, opts.params, w.one_d)};
  // Filters packed at load reach the cpu's implicit GEMM through the inference forms.
  const ops::PackedConv2dFilters* packed = a.node.packed_filters.get();
  if (a.node.fused_relu)  // one cuDNN graph on cuda where it serves (ops/conv2d.h)
    return {from_2d(ops::conv2d_bias_relu(x2, w2, bias, opts.params, packed), w.one_d)};
  if (a.node.fused_clip || packed) {  // clamped in the cpu kernels' output loops (ops/conv2d.h)
    const auto [lo, hi] = fused_bounds(a.node);
    return {from_2d(ops::conv2d_bias_clamp(x2, w2, bias, opts.params, lo, hi, packed), w.one_d)};
  }
  return {from_2d(conv2d(x2, w2, bias, opts), w.one_d)};
}

Out conv_transpose_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const Tensor& weight = a.input(1);
  if (weight.dim() != x.dim()) a.fail("the weight's rank must equal the input's");
  const int64_t sd = x.dim() - 2;
  Window w = window_of(a, x, Shape(weight.shape().begin() + 2, weight.shape().end()));
  const int64_t o = 2 - sd;
  const auto out_pad = a.ints("output_padding", std::vector<int64_t>(sd, 0));
  const auto out_shape = a.ints("output_shape");
  const std::string auto_pad = a.s("auto_pad", "NOTSET");
  if (static_cast<int64_t>(out_pad.size()) != sd) a.fail("output_padding needs one value per dim");
  std::array<int64_t, 2> out{1, 1};
  for (int64_t i = 0; i < sd; ++i) {
    const int64_t k = o + i, in = x.size(2 + i);
    const int64_t full = w.stride[k] * (in - 1) + out_pad[i] + (w.kernel[k] - 1) * w.dilation[k] + 1;
    int64_t target = -1;
    if (!out_shape.empty()) {
      if (static_cast<int64_t>(out_shape.size()) != sd) a.fail("output_shape needs one value per dim");
      target = out_shape[i];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      target = in * w.stride[k];
    }
    if (target >= 0) {  // pads from the requested size, as the operator's definition says
      const int64_t total = full - target;
      const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // floor(total / 2)
      w.begin[k] = auto_pad == "SAME_UPPER" ? half : total - half;
      w.end[k] = total - w.begin[k];
    }
    out[k] = full - w.begin[k] - w.end[k];
    if (out[k] < 1) a.fail("the output would have no elements along spatial dim " + std::to_string(i));
  }
  const Tensor x2 = as_2d(x, w.one_d), w2 = as_2d(weight, w.one_d);
  ConvTranspose2dOptions opts;
  opts.stride(w.stride[0], w.stride[1]).dilation(w.dilation[0], w.dilation[1]);
  opts.groups(a.i("group", 1));
  // All of it from the kernel with no padding, then the window [begin, begin + out) of that,
  // zeros where it reaches past (negative pads); the bias goes on last, over all of it.
  Tensor y = conv_transpose2d(x2, w2, Tensor(), opts);
  std::vector<int64_t> grow(4, 0);
  for (int k = 0; k < 2; ++k) {
    const int64_t have = y.size(2 + k);
    const int64_t lo = -std::min<int64_t>(0, w.begin[k]);
    const int64_t hi = std::max<int64_t>(0, w.begin[k] + out[k] - have);
    grow[2 * (1 - k)] = lo;
    grow[2 * (1 - k) + 1] = hi;
  }
  if (grow != std::vector<int64_t>(4, 0)) y = pad(y, grow);
  for (int k = 0; k < 2; ++k)
    y = slice(y, 2 + k, std::max<int64_t>(0, w.begin[k]), std::max<int64_t>(0, w.begin[k]) + out[k]);
  if (a.has_input(2)) y = add(y, reshape(a.input(2), {1, -1, 1, 1}));
  return {from_2d(contiguous(y), w.one_d)};
}

Out max_pool_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  if (x.dtype() == kUInt8 || x.dtype() == kInt32 || x.dtype() == kInt64) {
    // Ember's pools take floating tensors; integers (below 2^53) go through float64 exactly.
    OpArgs f{a.node, a.opset, a.device, a.in};
    f.in[0] = to(x, kFloat64);
    Out out = max_pool_op(f);
    out[0] = to(out[0], x.dtype());
    return out;
  }
  const Window w = window_of(a, x, {});
  if (!a.has("kernel_shape")) a.fail("kernel_shape is required");
  ops::MaxPool2dParams p;
  p.kernel = w.kernel;
  p.stride = w.stride;
  p.dilation = w.dilation;
  p.ceil_mode = a.i("ceil_mode", 0) != 0;
  Tensor x2 = as_2d(x, w.one_d);
  const bool fits = w.symmetric() && 2 * w.begin[0] <= w.kernel[0] && 2 * w.begin[1] <= w.kernel[1];
  const bool want_indices = a.node.outputs.size() > 1 && !a.node.outputs[1].empty();
  if (fits) {
    p.padding = w.begin;
  } else {
    if (want_indices) a.fail("Indices with asymmetric or wide pads are not supported");
    x2 = pad_explicit(x2, w, -std::numeric_limits<double>::infinity());
  }
  if (!want_indices) return {from_2d(ember::max_pool2d(x2, p), w.one_d)};
  auto [y, idx] = ember::max_pool2d_with_indices(x2, p);
  if (a.i("storage_order", 0) != 0) {  // column-major within the plane: w * H + h
    const Tensor width = full({}, static_cast<double>(x2.size(3)), TensorOptions(kFloat64, x.device()));
    const Tensor p64 = to(idx, kFloat64);
    const Tensor col = remainder(p64, width), row = div(sub(p64, col), width);
    idx = to(add(mul(col, static_cast<double>(x2.size(2))), row), kInt64);
  }
  // Ember's indices count within one plane; ONNX's count over the whole tensor.
  const int64_t plane = x2.size(2) * x2.size(3);
  const Tensor base = mul(arange(x2.size(0) * x2.size(1), TensorOptions(kInt64, x.device())), 
                          full({}, static_cast<double>(plane), TensorOptions(kInt64, x.device())));
  idx = add(idx, reshape(base, {x2.size(0), x2.size(1), 1, 1}));
  return {from_2d(y, w.one_d), from_2d(idx, w.one_d)};
}

Out avg_pool_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const Window w = window_of(a, x, {});
  if (!a.has("kernel_shape")) a.fail("kernel_shape is required");
  ops::AvgPool2dParams p;
  p.kernel = w.kernel;
  p.stride = w.stride;
  p.ceil_mode = a.i("ceil_mode", 0) != 0;
  const bool include_pad = a.i("count_include_pad", 0) != 0;
  if (w.dilation != std::array<int64_t, 2>{1, 1}) a.fail("dilations are not supported by AveragePool");
  Tensor x2 = as_2d(x, w.one_d);
  const bool fits = w.symmetric() && 2 * w.begin[0] <= w.kernel[0] && 2 * w.begin[1] <= w.kernel[1];
  if (fits) {
    p.padding = w.begin;
    p.count_include_pad = include_pad;
    return {from_2d(ember::avg_pool2d(x2, p), w.one_d)};
  }
  // Pads taken explicitly: the mean over the padded input counts the pads; without
  // count_include_pad, the same mean of a mask of ones gives the share of real elements.
  p.count_include_pad = true;
  const Tensor sums = ember::avg_pool2d(pad_explicit(x2, w, 0.0), p);
  if (include_pad) return {from_2d(sums, w.one_d)};
  const Tensor mask = pad_explicit(ones({1, 1, x2.size(2), x2.size(3)}, TensorOptions(x.dtype(), x.device())), w, 0.0);
  return {from_2d(div(sums, ember::avg_pool2d(mask, p)), w.one_d)};
}

std::vector<int64_t> spatial_dims(const Tensor& x) {
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// Per-channel parameters shaped to broadcast over [N, C, ...]. requires: rank >= 2.
Tensor per_channel(const Tensor& t, int64_t rank) {
  Shape s(static_cast<size_t>(rank), 1);
  s[1] = -1;
  return reshape(t, s);
}

// Training mode (opset 14 on; ONNX's reference): normalised by the batch's own mean and
// population variance over every dim but the channels; the optional outputs are the running
// statistics updated with them, input * momentum + batch * (1 - momentum). The node's inputs are
// left as they are (a graph is a function).
Out batch_norm_training(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const double eps = a.f("epsilon", 1e-5), momentum = a.f("momentum", 0.9);
  const int64_t r = x.dim();
  std::vector<int64_t> dims = spatial_dims(x);
  dims.insert(dims.begin(), 0);
  const Tensor m = mean(x, dims, false), v = var(x, dims, 0, false);
  const Tensor inv = div(per_channel(a.input(1), r), sqrt(add(per_channel(v, r), eps)));
  Out out{add(mul(sub(x, per_channel(m, r)), inv), per_channel(a.input(2), r))};
  if (a.node.outputs.size() > 1) out.push_back(add(mul(a.input(3), momentum), mul(m, 1 - momentum)));
  if (a.node.outputs.size() > 2) out.push_back(add(mul(a.input(4), momentum), mul(v, 1 - momentum)));
  return out;
}

Out batch_norm_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  if (x.dim() < 2) a.fail("the input must be at least 2-D ([N, C, ...]), got shape " + detail::str_cat(x.shape()));
  if (a.i("training_mode", 0) != 0) return batch_norm_training(a);
  if (a.node.outputs.size() > 1) a.fail("running statistics outputs exist only in training mode");
  const double eps = a.f("epsilon", 1e-5);
  if (x.dim() == 4)
    return {batch_norm(x, a.input(1), a.input(2), a.input(3), a.input(4), false, 0.1, eps)};
  const int64_t r = x.dim();
  const Tensor inv = div(per_channel(a.input(1), r), sqrt(add(per_channel(a.input(4), r), eps)));
  return {add(mul(sub(x, per_channel(a.input(3), r)), inv), per_channel(a.input(2), r))};
}

Out instance_norm_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const double eps = a.f("epsilon", 1e-5);
  const int64_t r = x.dim();
  if (r < 3) a.fail("the input must be at least 3-D ([N, C, ...])");
  const auto dims = spatial_dims(x);
  const Tensor m = mean(x, dims, true);
  const Tensor v = var(x, dims, 0, true);
  const Tensor y = div(sub(x, m), sqrt(add(v, eps)));
  return {add(mul(y, per_channel(a.input(1), r)), per_channel(a.input(2), r))};
}

Out layer_norm_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const int64_t axis = normalize_axis(a, a.i("axis", -1), x.dim());
  const double eps = a.f("epsilon", 1e-5);
  const Shape normalized(x.shape().begin() + axis, x.shape().end());
  const Tensor& scale = a.input(1);
  const Tensor bias = a.has_input(2) ? a.input(2) : Tensor();
  const bool stats = a.node.outputs.size() > 1;
  if (!stats && scale.shape() == normalized && (!bias.defined() || bias.shape() == normalized))
    return {layer_norm(x, normalized, scale, bias, eps)};
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < x.dim(); ++d) dims.push_back(d);
  const Tensor xf = to(x, kFloat32);
  const Tensor m = mean(xf, dims, true);
  const Tensor inv = div(ones({}, TensorOptions(kFloat32, x.device())),
                         sqrt(add(var(xf, dims, 0, true), eps)));
  Tensor y = to(mul(mul(sub(xf, m), inv), scale), x.dtype());
  if (bias.defined()) y = add(y, bias);
  Out out{y};
  if (stats) out.push_back(m);
  if (a.node.outputs.size() > 2) out.push_back(inv);
  return out;
}

Out gemm_op(const OpArgs& a) {
  Tensor A = a.input(0), B = a.input(1);
  if (A.dim() != 2 || B.dim() != 2) a.fail("A and B must be 2-D");
  const bool ta = a.i("transA", 0) != 0, tb = a.i("transB", 0) != 0;
  const double alpha = a.f("alpha", 1.0), beta = a.f("beta", 1.0);
  // A fully connected layer as PyTorch exports it (y = A Bᵀ + bias): the linear layer, which adds
  // the bias into the product in place (the same sums as the two ops; one op and one allocation
  // fewer).
  if (!ta && tb && alpha == 1.0 && beta == 1.0 && a.has_input(2)) {
    const Tensor& bias = a.input(2);
    if (bias.dim() == 1 && bias.size(0) == B.size(0) && A.size(1) == B.size(1) &&
        (A.dtype() == kFloat32 || A.dtype() == kFloat64) && bias.dtype() == A.dtype() &&
        B.dtype() == A.dtype() && bias.device() == A.device() && B.device() == A.device())
      return {ops::linear(A, B, bias)};
  }
  if (ta) A = transpose(A, 0, 1);
  if (tb) B = transpose(B, 0, 1);
  Tensor y = matmul(A, B);
  if (alpha != 1.0) y = mul(y, alpha);
  if (a.has_input(2)) y = add(y, beta == 1.0 ? a.input(2) : mul(a.input(2), beta));
  return {y};
}

Out global_pool(const OpArgs& a, bool max) {
  const Tensor& x = a.input(0);
  if (x.dim() < 3) a.fail("the input must be at least 3-D ([N, C, ...])");
  const auto dims = spatial_dims(x);
  return {max ? amax(x, dims, true) : mean(x, dims, true)};
}

}  // namespace

void add_nn_ops(std::vector<OpDef>& ops) {
  const std::vector<const char*> window{"auto_pad", "dilations", "kernel_shape", "pads", "strides"};
  auto with = [&](std::vector<const char*> extra) {
    extra.insert(extra.end(), window.begin(), window.end());
    return extra;
  };
  ops.insert(ops.end(), {
    OpDef{"Conv", 11, with({"group"}), conv_op},
    OpDef{"ConvTranspose", 1, with({"group", "output_padding", "output_shape"}), conv_transpose_op},
    OpDef{"MaxPool", 12, with({"ceil_mode", "storage_order"}), max_pool_op},
    OpDef{"AveragePool", 11, with({"ceil_mode", "count_include_pad"}), avg_pool_op},
    OpDef{"GlobalAveragePool", 1, {}, [](const OpArgs& a) { return global_pool(a, false); }},
    OpDef{"GlobalMaxPool", 1, {}, [](const OpArgs& a) { return global_pool(a, true); }},
    OpDef{"BatchNormalization", 9, {"epsilon", "momentum", "training_mode"}, batch_norm_op},
    OpDef{"InstanceNormalization", 6, {"epsilon"}, instance_norm_op},
    OpDef{"LayerNormalization", 17, {"axis", "epsilon", "stash_type"}, layer_norm_op},
    OpDef{"Gemm", 11, {"alpha", "beta", "transA", "transB"}, gemm_op},
    OpDef{"MatMul", 1, {}, [](const OpArgs& a) -> Out { return {matmul(a.input(0), a.input(1))}; }},
  });
}

}  // namespace ember::onnx
