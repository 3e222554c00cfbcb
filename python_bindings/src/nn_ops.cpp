// The neural-network functions with PyTorch's names, arguments and defaults (they back both
// ember.<op> and ember.nn.functional.<op>): conv, pooling, batch norm, activations, dropout,
// linear, softmax and the first losses (the others: nn_layers.cpp).
#include "autograd/autocast.h"
#include "common.h"

namespace ember::py {
namespace {

Tensor opt_tensor(const pb::object& o) {
  return o.is_none() ? Tensor() : o.cast<Tensor>();
}

// softmax and log_softmax with dtype=: the input cast first, and kept so under autocast.
template <Tensor (*F)(const Tensor&, int64_t)>
Tensor softmax_in(const Tensor& x, int64_t dim, const pb::object& dtype) {
  if (dtype.is_none()) return F(x, dim);
  AutocastExcludeGuard explicit_dtype;
  return F(to(x, dtype_arg(dtype, x.dtype())), dim);
}

}  // namespace

void init_nn_ops(pb::module_& m) {
  using pb::arg;
  auto none = pb::none();
  m.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, const pb::object& b, const pb::object& stride,
         const pb::object& padding, const pb::object& dilation, int64_t groups) {
        auto s = pair_arg(stride, "conv2d stride"), d = pair_arg(dilation, "conv2d dilation");
        Conv2dOptions o;
        o.stride(s[0], s[1]).dilation(d[0], d[1]).groups(groups);
        if (pb::isinstance<pb::str>(padding)) {  // "same" or "valid"
          o.padding(padding.cast<std::string>());
        } else {
          auto p = pair_arg(padding, "conv2d padding");
          o.padding(p[0], p[1]);
        }
        return conv2d(x, w, opt_tensor(b), o);
      },
      arg("input"), arg("weight"), arg("bias") = none, arg("stride") = 1, arg("padding") = 0,
      arg("dilation") = 1, arg("groups") = 1);
  m.def(
      "max_pool2d",
      [](const Tensor& x, const pb::object& kernel, const pb::object& stride,
         const pb::object& padding, const pb::object& dilation, bool ceil_mode,
         bool return_indices) -> pb::object {
        ops::MaxPool2dParams p;
        p.kernel = pair_arg(kernel, "max_pool2d kernel_size");
        p.stride = stride.is_none() ? p.kernel : pair_arg(stride, "max_pool2d stride");
        p.padding = pair_arg(padding, "max_pool2d padding");
        p.dilation = pair_arg(dilation, "max_pool2d dilation");
        p.ceil_mode = ceil_mode;
        if (return_indices) {
          auto r = ember::max_pool2d_with_indices(x, p);
          return pb::make_tuple(r.first, r.second);
        }
        return pb::cast(ember::max_pool2d(x, p));
      },
      arg("input"), arg("kernel_size"), arg("stride") = none, arg("padding") = 0,
      arg("dilation") = 1, arg("ceil_mode") = false, arg("return_indices") = false);
  m.def(
      "avg_pool2d",
      [](const Tensor& x, const pb::object& kernel, const pb::object& stride,
         const pb::object& padding, bool ceil_mode, bool count_include_pad,
         const pb::object& divisor_override) {
        ops::AvgPool2dParams p;
        p.kernel = pair_arg(kernel, "avg_pool2d kernel_size");
        p.stride = stride.is_none() ? p.kernel : pair_arg(stride, "avg_pool2d stride");
        p.padding = pair_arg(padding, "avg_pool2d padding");
        p.ceil_mode = ceil_mode;
        p.count_include_pad = count_include_pad;
        p.divisor_override = divisor_override.is_none() ? 0 : divisor_override.cast<int64_t>();
        return ember::avg_pool2d(x, p);
      },
      arg("input"), arg("kernel_size"), arg("stride") = none, arg("padding") = 0,
      arg("ceil_mode") = false, arg("count_include_pad") = true, arg("divisor_override") = none);
  m.def(
      "adaptive_avg_pool2d",
      [](const Tensor& x, const pb::object& size) {
        return adaptive_avg_pool2d(x, pair_arg(size, "adaptive_avg_pool2d output_size"));
      },
      arg("input"), arg("output_size"));
  m.def(
      "batch_norm",
      [](const Tensor& x, const pb::object& rm, const pb::object& rv, const pb::object& w,
         const pb::object& b, bool training, double momentum, double eps) {
        return batch_norm(x, opt_tensor(w), opt_tensor(b), opt_tensor(rm), opt_tensor(rv), training,
                          momentum, eps);
      },
      arg("input"), arg("running_mean"), arg("running_var"), arg("weight") = none,
      arg("bias") = none, arg("training") = false, arg("momentum") = 0.1, arg("eps") = 1e-5);
  m.def(
      "relu", [](const Tensor& x) { return relu(x); }, arg("input"));
  m.def(
      "leaky_relu", [](const Tensor& x, double s) { return leaky_relu(x, s); }, arg("input"),
      arg("negative_slope") = 0.01);
  m.def(
      "sigmoid", [](const Tensor& x) { return sigmoid(x); }, arg("input"));
  m.def(
      "tanh", [](const Tensor& x) { return tanh(x); }, arg("input"));
  m.def(
      "gelu", [](const Tensor& x, const std::string& a) { return gelu(x, a); }, arg("input"),
      arg("approximate") = "none");
  m.def(
      "silu", [](const Tensor& x) { return silu(x); }, arg("input"));
  m.def(
      "elu", [](const Tensor& x, double alpha) { return elu(x, alpha); }, arg("input"),
      arg("alpha") = 1.0);
  m.def(
      "softplus",
      [](const Tensor& x, double beta, double threshold) { return softplus(x, beta, threshold); },
      arg("input"), arg("beta") = 1.0, arg("threshold") = 20.0);
  m.def(
      "hardtanh", [](const Tensor& x, double lo, double hi) { return hardtanh(x, lo, hi); },
      arg("input"), arg("min_val") = -1.0, arg("max_val") = 1.0);
  m.def(
      "relu6", [](const Tensor& x) { return relu6(x); }, arg("input"));
  m.def(
      "dropout", [](const Tensor& x, double p, bool training) { return dropout(x, p, training); },
      arg("input"), arg("p") = 0.5, arg("training") = true);
  m.def(
      "linear",
      [](const Tensor& x, const Tensor& w, const pb::object& b) {
        return linear(x, w, opt_tensor(b));
      },
      arg("input"), arg("weight"), arg("bias") = none);
  m.def("softmax", &softmax_in<softmax>, arg("input"), arg("dim"), arg("dtype") = none);
  m.def("log_softmax", &softmax_in<log_softmax>, arg("input"), arg("dim"), arg("dtype") = none);
}

}  // namespace ember::py
