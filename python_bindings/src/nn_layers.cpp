// The layers beyond the first set, with PyTorch's names, arguments and defaults: normalisation
// (layer, group, instance, batch norm 1-d), padding and interpolation, transposed and 1-D
// convolution, the new activations, channel dropout, pixel shuffles, attention, the
// regression and embedding losses, and the C++ modules behind their ember.nn classes.
#include "autograd/node.h"
#include "common.h"

namespace ember::py {
namespace {

Tensor opt_tensor(const pb::object& o) {
  return o.is_none() ? Tensor() : o.cast<Tensor>();
}

// One value per dim: an int, or a sequence of `n` ints (ArgTypeError naming `what` otherwise,
// which the Python wrappers turn into "Conv2d(): argument 'padding' must be ...").
std::vector<int64_t> ints_arg(const pb::handle& obj, size_t n, const char* what) {
  if (pb::isinstance<pb::int_>(obj)) return std::vector<int64_t>(n, obj.cast<int64_t>());
  const std::string expected = n == 1 ? "int" : "int or tuple of " + std::to_string(n) + " ints";
  if (!pb::isinstance<pb::sequence>(obj) || pb::isinstance<pb::str>(obj) || pb::len(obj) != n)
    throw_arg_type(what, expected, obj);
  std::vector<int64_t> out;
  for (auto v : obj.cast<pb::sequence>()) {
    if (!pb::isinstance<pb::int_>(v)) throw_arg_type(what, expected, obj);
    out.push_back(v.cast<int64_t>());
  }
  return out;
}

// A sequence of ints (a shape-like argument) or one int.
std::vector<int64_t> int_list(const pb::handle& obj) {
  if (pb::isinstance<pb::int_>(obj)) return {obj.cast<int64_t>()};
  return obj.cast<std::vector<int64_t>>();
}

// torch's legacy size_average / reduce arguments, when given, decide the reduction.
std::string legacy_reduction(const pb::object& size_average, const pb::object& reduce,
                             const std::string& reduction) {
  if (size_average.is_none() && reduce.is_none()) return reduction;
  const bool avg = size_average.is_none() || size_average.cast<bool>();
  const bool red = reduce.is_none() || reduce.cast<bool>();
  return !red ? "none" : avg ? "mean" : "sum";
}

// Conv padding: an int, a pair, or "same" / "valid".
template <typename Options>
void set_padding(Options& o, const pb::handle& padding, size_t dims) {
  if (pb::isinstance<pb::str>(padding)) {
    o.padding(padding.cast<std::string>());
    return;
  }
  const std::vector<int64_t> p = ints_arg(padding, dims, "padding");
  if constexpr (std::is_same_v<Options, Conv1dOptions>)
    o.padding(p[0]);
  else
    o.padding(p[0], p[1]);
}

Conv2dOptions conv2d_options(const pb::handle& stride, const pb::handle& padding,
                             const pb::handle& dilation, int64_t groups) {
  Conv2dOptions o;
  const auto s = ints_arg(stride, 2, "conv2d stride"), d = ints_arg(dilation, 2, "conv2d dilation");
  o.stride(s[0], s[1]).dilation(d[0], d[1]).groups(groups);
  set_padding(o, padding, 2);
  return o;
}

Conv1dOptions conv1d_options(const pb::handle& stride, const pb::handle& padding,
                             const pb::handle& dilation, int64_t groups) {
  Conv1dOptions o;
  o.stride(ints_arg(stride, 1, "conv1d stride")[0])
      .dilation(ints_arg(dilation, 1, "conv1d dilation")[0])
      .groups(groups);
  set_padding(o, padding, 1);
  return o;
}

ConvTranspose2dOptions conv_transpose2d_options(const pb::handle& stride, const pb::handle& padding,
                                                const pb::handle& output_padding, int64_t groups,
                                                const pb::handle& dilation) {
  const auto s = ints_arg(stride, 2, "conv_transpose2d stride");
  const auto p = ints_arg(padding, 2, "conv_transpose2d padding");
  const auto op = ints_arg(output_padding, 2, "conv_transpose2d output_padding");
  const auto d = ints_arg(dilation, 2, "conv_transpose2d dilation");
  ConvTranspose2dOptions o;
  o.stride(s[0], s[1]).padding(p[0], p[1]).output_padding(op[0], op[1]).dilation(d[0], d[1]);
  o.groups(groups);
  return o;
}

std::shared_ptr<nn::Module> as_module(std::shared_ptr<nn::Module> m) {
  return m;
}

void init_functions(pb::module_& m) {
  using pb::arg;
  auto none = pb::none();
  m.def(
      "layer_norm",
      [](const Tensor& x, const pb::object& shape, const pb::object& w, const pb::object& b,
         double eps) { return layer_norm(x, int_list(shape), opt_tensor(w), opt_tensor(b), eps); },
      arg("input"), arg("normalized_shape"), arg("weight") = none, arg("bias") = none,
      arg("eps") = 1e-5);
  m.def(
      "group_norm",
      [](const Tensor& x, int64_t groups, const pb::object& w, const pb::object& b, double eps) {
        return group_norm(x, groups, opt_tensor(w), opt_tensor(b), eps);
      },
      arg("input"), arg("num_groups"), arg("weight") = none, arg("bias") = none, arg("eps") = 1e-5);
  m.def(
      "instance_norm",
      [](const Tensor& x, const pb::object& rm, const pb::object& rv, const pb::object& w,
         const pb::object& b, bool use_input_stats, double momentum, double eps) {
        return instance_norm(x, opt_tensor(rm), opt_tensor(rv), opt_tensor(w), opt_tensor(b),
                             use_input_stats, momentum, eps);
      },
      arg("input"), arg("running_mean") = none, arg("running_var") = none, arg("weight") = none,
      arg("bias") = none, arg("use_input_stats") = true, arg("momentum") = 0.1, arg("eps") = 1e-5);
  m.def(
      "pad",
      [](const Tensor& x, const std::vector<int64_t>& pad_, const std::string& mode,
         const pb::object& value) {
        return pad(x, pad_, mode, value.is_none() ? 0.0 : value.cast<double>());
      },
      arg("input"), arg("pad"), arg("mode") = "constant", arg("value") = none);
  m.def("_interpolate",
        [](const Tensor& x, const std::vector<int64_t>& size, const std::vector<double>& scale,
           const std::string& mode, std::optional<bool> align, std::optional<bool> recompute) {
          return interpolate(x, size, scale, mode, align, recompute);
        });
  m.def(
      "conv1d",
      [](const Tensor& x, const Tensor& w, const pb::object& b, const pb::object& stride,
         const pb::object& padding, const pb::object& dilation, int64_t groups) {
        return conv1d(x, w, opt_tensor(b), conv1d_options(stride, padding, dilation, groups));
      },
      arg("input"), arg("weight"), arg("bias") = none, arg("stride") = 1, arg("padding") = 0,
      arg("dilation") = 1, arg("groups") = 1);
  m.def(
      "conv_transpose2d",
      [](const Tensor& x, const Tensor& w, const pb::object& b, const pb::object& stride,
         const pb::object& padding, const pb::object& output_padding, int64_t groups,
         const pb::object& dilation) {
        return conv_transpose2d(
            x, w, opt_tensor(b),
            conv_transpose2d_options(stride, padding, output_padding, groups, dilation));
      },
      arg("input"), arg("weight"), arg("bias") = none, arg("stride") = 1, arg("padding") = 0,
      arg("output_padding") = 0, arg("groups") = 1, arg("dilation") = 1);
  m.def("_feature_dropout",
        [](const Tensor& x, double p, bool training) { return feature_dropout(x, p, training); });
  m.def("pixel_shuffle", &pixel_shuffle, arg("input"), arg("upscale_factor"));
  m.def("pixel_unshuffle", &pixel_unshuffle, arg("input"), arg("downscale_factor"));
  m.def("_hardswish", [](const Tensor& x) { return hardswish(x); });
  m.def("_hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); });
  m.def("_mish", [](const Tensor& x) { return mish(x); });
  m.def("prelu", &prelu, arg("input"), arg("weight"));
  m.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, const pb::object& mask, double p,
         bool causal, std::optional<double> scale) {
        return scaled_dot_product_attention(q, k, v, opt_tensor(mask), p, causal, scale);
      },
      arg("query"), arg("key"), arg("value"), arg("attn_mask") = none, arg("dropout_p") = 0.0,
      arg("is_causal") = false, arg("scale") = none);
  m.def("_mha_forward", [](const std::shared_ptr<nn::Module>& mod, const Tensor& q, const Tensor& k,
                           const Tensor& v, const pb::object& kpm, bool need_weights,
                           const pb::object& mask, bool average) {
    auto mha = std::dynamic_pointer_cast<nn::MultiheadAttention>(mod);
    if (!mha) throw pb::type_error("_mha_forward: expected a MultiheadAttention");
    auto [out, w] = mha->forward(q, k, v, opt_tensor(kpm), need_weights, opt_tensor(mask), average);
    return pb::make_tuple(out, w.defined() ? pb::cast(w) : pb::none());
  });
}

void init_losses(pb::module_& m) {
  using pb::arg;
  auto none = pb::none();
  auto mean = std::string("mean");
  m.def(
      "cross_entropy",
      [](const Tensor& x, const Tensor& t, const pb::object& w, const pb::object& size_average,
         int64_t ignore_index, const pb::object& reduce, const std::string& red, double smoothing) {
        return cross_entropy(x, t, ignore_index,
                             reduction_arg(legacy_reduction(size_average, reduce, red)), smoothing,
                             opt_tensor(w));
      },
      arg("input"), arg("target"), arg("weight") = none, arg("size_average") = none,
      arg("ignore_index") = -100, arg("reduce") = none, arg("reduction") = mean,
      arg("label_smoothing") = 0.0);
  m.def(
      "nll_loss",
      [](const Tensor& x, const Tensor& t, const pb::object& w, const pb::object& size_average,
         int64_t ignore_index, const pb::object& reduce, const std::string& red) {
        return nll_loss(x, t, ignore_index,
                        reduction_arg(legacy_reduction(size_average, reduce, red)), opt_tensor(w));
      },
      arg("input"), arg("target"), arg("weight") = none, arg("size_average") = none,
      arg("ignore_index") = -100, arg("reduce") = none, arg("reduction") = mean);
  m.def(
      "binary_cross_entropy",
      [](const Tensor& x, const Tensor& t, const pb::object& w, const pb::object& sa,
         const pb::object& rd, const std::string& red) {
        return binary_cross_entropy(x, t, opt_tensor(w),
                                    reduction_arg(legacy_reduction(sa, rd, red)));
      },
      arg("input"), arg("target"), arg("weight") = none, arg("size_average") = none,
      arg("reduce") = none, arg("reduction") = mean);
  m.def(
      "binary_cross_entropy_with_logits",
      [](const Tensor& x, const Tensor& t, const pb::object& w, const pb::object& sa,
         const pb::object& rd, const std::string& red, const pb::object& pos_weight) {
        return binary_cross_entropy_with_logits(x, t, opt_tensor(w), opt_tensor(pos_weight),
                                                reduction_arg(legacy_reduction(sa, rd, red)));
      },
      arg("input"), arg("target"), arg("weight") = none, arg("size_average") = none,
      arg("reduce") = none, arg("reduction") = mean, arg("pos_weight") = none);
  auto pair_loss = [&](const char* name, Tensor (*f)(const Tensor&, const Tensor&, Reduction)) {
    m.def(
        name,
        [f](const Tensor& x, const Tensor& t, const pb::object& size_average,
            const pb::object& reduce, const std::string& red) {
          return f(x, t, reduction_arg(legacy_reduction(size_average, reduce, red)));
        },
        arg("input"), arg("target"), arg("size_average") = none, arg("reduce") = none,
        arg("reduction") = "mean");
  };
  pair_loss("l1_loss",
            [](const Tensor& x, const Tensor& t, Reduction r) { return l1_loss(x, t, r); });
  pair_loss("mse_loss",
            [](const Tensor& x, const Tensor& t, Reduction r) { return mse_loss(x, t, r); });
  m.def(
      "smooth_l1_loss",
      [](const Tensor& x, const Tensor& t, const pb::object& sa, const pb::object& rd,
         const std::string& red, double beta) {
        return smooth_l1_loss(x, t, reduction_arg(legacy_reduction(sa, rd, red)), beta);
      },
      arg("input"), arg("target"), arg("size_average") = none, arg("reduce") = none,
      arg("reduction") = mean, arg("beta") = 1.0);
  m.def(
      "huber_loss",
      [](const Tensor& x, const Tensor& t, const std::string& red, double delta) {
        return huber_loss(x, t, reduction_arg(red), delta);
      },
      arg("input"), arg("target"), arg("reduction") = mean, arg("delta") = 1.0);
  m.def(
      "kl_div",
      [](const Tensor& x, const Tensor& t, const pb::object& sa, const pb::object& rd,
         const std::string& red,
         bool log_target) { return kl_div(x, t, legacy_reduction(sa, rd, red), log_target); },
      arg("input"), arg("target"), arg("size_average") = none, arg("reduce") = none,
      arg("reduction") = mean, arg("log_target") = false);
  m.def(
      "cosine_embedding_loss",
      [](const Tensor& a, const Tensor& b, const Tensor& t, double margin, const pb::object& sa,
         const pb::object& rd, const std::string& red) {
        return cosine_embedding_loss(a, b, t, margin, reduction_arg(legacy_reduction(sa, rd, red)));
      },
      arg("input1"), arg("input2"), arg("target"), arg("margin") = 0.0, arg("size_average") = none,
      arg("reduce") = none, arg("reduction") = mean);
  m.def(
      "margin_ranking_loss",
      [](const Tensor& a, const Tensor& b, const Tensor& t, double margin, const pb::object& sa,
         const pb::object& rd, const std::string& red) {
        return margin_ranking_loss(a, b, t, margin, reduction_arg(legacy_reduction(sa, rd, red)));
      },
      arg("input1"), arg("input2"), arg("target"), arg("margin") = 0.0, arg("size_average") = none,
      arg("reduce") = none, arg("reduction") = mean);
}

void init_modules(pb::module_& m) {
  using Ptr = std::shared_ptr<nn::Module>;
  m.def("_Conv2d",
        [](int64_t in, int64_t out, const pb::object& k, const pb::object& stride,
           const pb::object& padding, const pb::object& dilation, int64_t groups, bool bias,
           const std::string& mode) -> Ptr {
          const auto kk = ints_arg(k, 2, "Conv2d kernel_size");
          return std::make_shared<nn::Conv2d>(in, out, std::array<int64_t, 2>{kk[0], kk[1]},
                                              conv2d_options(stride, padding, dilation, groups),
                                              bias, mode);
        });
  m.def("_Conv1d",
        [](int64_t in, int64_t out, const pb::object& k, const pb::object& stride,
           const pb::object& padding, const pb::object& dilation, int64_t groups, bool bias,
           const std::string& mode) -> Ptr {
          return std::make_shared<nn::Conv1d>(in, out, ints_arg(k, 1, "Conv1d kernel_size")[0],
                                              conv1d_options(stride, padding, dilation, groups),
                                              bias, mode);
        });
  m.def("_ConvTranspose2d",
        [](int64_t in, int64_t out, const pb::object& k, const pb::object& stride,
           const pb::object& padding, const pb::object& output_padding, int64_t groups, bool bias,
           const pb::object& dilation, const std::string& mode) -> Ptr {
          const auto kk = ints_arg(k, 2, "ConvTranspose2d kernel_size");
          return std::make_shared<nn::ConvTranspose2d>(
              in, out, std::array<int64_t, 2>{kk[0], kk[1]},
              conv_transpose2d_options(stride, padding, output_padding, groups, dilation), bias,
              mode);
        });
  m.def("_conv_transpose2d_sized",
        [](const Ptr& mod, const Tensor& x, const std::vector<int64_t>& size) {
          auto c = std::dynamic_pointer_cast<nn::ConvTranspose2d>(mod);
          if (!c) throw pb::type_error("_conv_transpose2d_sized: expected a ConvTranspose2d");
          return c->forward(x, size);
        });
  m.def("_BatchNorm1d", [](int64_t n, double eps, double momentum, bool affine, bool track) -> Ptr {
    return std::make_shared<nn::BatchNorm1d>(n, eps, momentum, affine, track);
  });
  m.def("_LayerNorm", [](const std::vector<int64_t>& shape, double eps, bool affine) -> Ptr {
    return std::make_shared<nn::LayerNorm>(shape, eps, affine);
  });
  m.def("_GroupNorm", [](int64_t g, int64_t c, double eps, bool affine) -> Ptr {
    return std::make_shared<nn::GroupNorm>(g, c, eps, affine);
  });
  m.def("_InstanceNorm2d",
        [](int64_t n, double eps, double momentum, bool affine, bool track) -> Ptr {
          return std::make_shared<nn::InstanceNorm2d>(n, eps, momentum, affine, track);
        });
  m.def("_Dropout2d", [](double p) -> Ptr { return std::make_shared<nn::Dropout2d>(p); });
  m.def(
      "_Upsample",
      [](const std::vector<int64_t>& size, const std::vector<double>& scale,
         const std::string& mode, std::optional<bool> align, std::optional<bool> recompute) -> Ptr {
        return std::make_shared<nn::Upsample>(size, scale, mode, align, recompute);
      });
  m.def("_PixelShuffle", [](int64_t r) -> Ptr { return std::make_shared<nn::PixelShuffle>(r); });
  m.def("_PixelUnshuffle",
        [](int64_t r) -> Ptr { return std::make_shared<nn::PixelUnshuffle>(r); });
  m.def("_Hardswish", [] { return as_module(nn::Hardswish()); });
  m.def("_Hardsigmoid", [] { return as_module(nn::Hardsigmoid()); });
  m.def("_Mish", [] { return as_module(nn::Mish()); });
  m.def("_Softmax2d", [] { return as_module(nn::Softmax2d()); });
  m.def("_PReLU",
        [](int64_t n, double init) -> Ptr { return std::make_shared<nn::PReLU>(n, init); });
  m.def("_MultiheadAttention",
        [](int64_t e, int64_t h, double p, bool bias, bool bias_kv, bool zero_attn, int64_t kdim,
           int64_t vdim, bool batch_first) -> Ptr {
          return std::make_shared<nn::MultiheadAttention>(e, h, p, bias, bias_kv, zero_attn, kdim,
                                                          vdim, batch_first);
        });
}

}  // namespace

void init_nn_layers(pb::module_& m) {
  init_functions(m);
  init_losses(m);
  init_modules(m);
}

}  // namespace ember::py
