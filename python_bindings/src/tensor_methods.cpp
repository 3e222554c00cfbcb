// Tensor methods: views and shape changes, conversions and copies, reductions, elementwise math,
// backward. Each binds a function of the autograd API (or, where nothing is differentiable, an op).
#include "autograd/autocast.h"
#include "autograd/softmax.h"
#include "common.h"

namespace ember::py {
namespace {

// Shapes and dims given as `f(2, 3)` or `f((2, 3))`.
Shape varargs_shape(const pb::args& args) {
  return shape_arg(args);
}

pb::object tolist_rec(const Tensor& t, const std::vector<double>& f, const std::vector<int64_t>& i,
                      size_t dim, int64_t& pos) {
  if (dim == t.shape().size()) {
    int64_t k = pos++;
    if (is_floating(t.dtype())) return pb::float_(f[k]);
    if (t.dtype() == kBool) return pb::bool_(i[k] != 0);
    return pb::int_(i[k]);
  }
  pb::list l;
  for (int64_t j = 0; j < t.shape()[dim]; ++j) l.append(tolist_rec(t, f, i, dim + 1, pos));
  return std::move(l);
}

pb::object tolist(const Tensor& t) {
  std::vector<double> f;
  std::vector<int64_t> i;
  if (is_floating(t.dtype()))
    f = t.to_vector<double>();
  else
    i = t.to_vector<int64_t>();
  int64_t pos = 0;
  return tolist_rec(t, f, i, 0, pos);
}

// to(device), to(dtype), to(device, dtype), to(tensor), with keywords dtype= and device=.
Tensor to_method(const Tensor& t, const pb::args& args, const pb::kwargs& kw) {
  Device dev = t.device();
  DType dt = t.dtype();
  for (auto a : args) {
    if (pb::isinstance<Tensor>(a)) {
      dev = a.cast<const Tensor&>().device();
      dt = a.cast<const Tensor&>().dtype();
    } else if (pb::isinstance<DType>(a)) {
      dt = a.cast<DType>();
    } else {
      dev = device_arg(a);
    }
  }
  if (kw.contains("dtype")) dt = dtype_arg(kw["dtype"], dt);
  if (kw.contains("device")) dev = device_arg(kw["device"], dev);
  return to(t, dev, dt);
}

pb::object max_min(const Tensor& t, const pb::object& dim, bool keepdim, bool is_max) {
  if (dim.is_none()) return pb::cast(is_max ? amax(t) : amin(t));
  int64_t d = dim.cast<int64_t>();
  Tensor values = is_max ? amax(t, {d}, keepdim) : amin(t, {d}, keepdim);
  Tensor idx = is_max ? ops::argmax(t, d, keepdim) : ops::argmin(t, d, keepdim);
  return pb::make_tuple(values, idx);
}

int64_t correction_arg(const pb::object& unbiased, const pb::object& correction) {
  if (!correction.is_none()) return correction.cast<int64_t>();
  if (!unbiased.is_none()) return unbiased.cast<bool>() ? 1 : 0;
  return 1;
}

}  // namespace

void init_tensor_methods(pb::class_<Tensor>& cls) {
  using pb::arg;
  auto none = pb::none();
  cls.def("reshape",
          [](const Tensor& t, const pb::args& a) { return reshape(t, varargs_shape(a)); })
      .def("view", [](const Tensor& t, const pb::args& a) { return view(t, varargs_shape(a)); })
      .def("permute",
           [](const Tensor& t, const pb::args& a) {
             Shape s = varargs_shape(a);
             return permute(t, std::vector<int64_t>(s.begin(), s.end()));
           })
      .def("transpose", [](const Tensor& t, int64_t a, int64_t b) { return transpose(t, a, b); })
      .def("t",
           [](const Tensor& t) {
             EMBER_CHECK_SHAPE(t.dim() <= 2, "t(): expected a tensor of at most 2 dims, got ",
                               t.shape());
             return t.dim() < 2 ? t : transpose(t, 0, 1);
           })
      .def(
          "flatten", [](const Tensor& t, int64_t s, int64_t e) { return flatten(t, s, e); },
          arg("start_dim") = 0, arg("end_dim") = -1)
      .def(
          "squeeze",
          [](const Tensor& t, const pb::object& dim) {
            return dim.is_none() ? squeeze(t) : squeeze(t, dim.cast<int64_t>());
          },
          arg("dim") = none)
      .def(
          "unsqueeze", [](const Tensor& t, int64_t d) { return unsqueeze(t, d); }, arg("dim"))
      .def("expand", [](const Tensor& t, const pb::args& a) { return expand(t, varargs_shape(a)); })
      .def("expand_as", [](const Tensor& t, const Tensor& o) { return expand(t, o.shape()); })
      .def("contiguous", [](const Tensor& t) { return contiguous(t); })
      .def("clone", [](const Tensor& t) { return clone(t); })
      .def("to", &to_method)
      .def("cpu", [](const Tensor& t) { return to(t, kCPU); })
      .def(
          "cuda", [](const Tensor& t, int index) { return to(t, Device(DeviceType::CUDA, index)); },
          arg("device") = 0)
      .def("float", [](const Tensor& t) { return to(t, kFloat32); })
      .def("double", [](const Tensor& t) { return to(t, kFloat64); })
      .def("half", [](const Tensor& t) { return to(t, kFloat16); })
      .def("bfloat16", [](const Tensor& t) { return to(t, kBFloat16); })
      .def("long", [](const Tensor& t) { return t.to(kInt64); })
      .def("int", [](const Tensor& t) { return t.to(kInt32); })
      .def("bool", [](const Tensor& t) { return t.to(kBool); })
      .def("item",
           [](const Tensor& t) -> pb::object {
             double v = t.item();
             if (is_floating(t.dtype())) return pb::float_(v);
             if (t.dtype() == kBool) return pb::bool_(v != 0.0);
             return pb::int_(t.item<int64_t>());
           })
      .def("tolist", &tolist)
      .def(
          "fill_", [](Tensor& t, double v) -> Tensor& { return t.fill_(v); },
          pb::return_value_policy::reference_internal)
      .def(
          "zero_", [](Tensor& t) -> Tensor& { return t.zero_(); },
          pb::return_value_policy::reference_internal)
      .def(
          "copy_", [](Tensor& t, const Tensor& src) -> Tensor& { return t.copy_(src); },
          pb::return_value_policy::reference_internal)
      .def(
          "uniform_", [](Tensor& t, double a, double b) -> Tensor& { return uniform_(t, a, b); },
          arg("a") = 0.0, arg("b") = 1.0, pb::return_value_policy::reference_internal)
      .def(
          "normal_",
          [](Tensor& t, double mean, double std) -> Tensor& { return normal_(t, mean, std); },
          arg("mean") = 0.0, arg("std") = 1.0, pb::return_value_policy::reference_internal)
      .def("_set_data", [](Tensor& t, const Tensor& o) { t.set_data(o); })
      .def("_is_same", [](const Tensor& t, const Tensor& o) { return t.is_same(o); })
      .def(
          "sum",
          [](const Tensor& t, const pb::object& dim, bool keepdim, const pb::object& dtype) {
            Tensor x = dtype.is_none() ? t : to(t, dtype_arg(dtype, t.dtype()));
            if (!is_floating(x.dtype())) return ops::sum(x, dims_arg(dim), keepdim);
            if (dtype.is_none()) return sum(x, dims_arg(dim), keepdim);
            AutocastExcludeGuard explicit_dtype;  // an explicit dtype is kept under autocast
            return sum(x, dims_arg(dim), keepdim);
          },
          arg("dim") = none, arg("keepdim") = false, arg("dtype") = none)
      .def(
          "mean",
          [](const Tensor& t, const pb::object& dim, bool keepdim) {
            return mean(t, dims_arg(dim), keepdim);
          },
          arg("dim") = none, arg("keepdim") = false)
      .def(
          "max",
          [](const Tensor& t, const pb::object& dim, bool keepdim) {
            return max_min(t, dim, keepdim, true);
          },
          arg("dim") = none, arg("keepdim") = false)
      .def(
          "min",
          [](const Tensor& t, const pb::object& dim, bool keepdim) {
            return max_min(t, dim, keepdim, false);
          },
          arg("dim") = none, arg("keepdim") = false)
      .def(
          "amax",
          [](const Tensor& t, const pb::object& dim, bool keepdim) {
            return amax(t, dims_arg(dim), keepdim);
          },
          arg("dim") = none, arg("keepdim") = false)
      .def(
          "amin",
          [](const Tensor& t, const pb::object& dim, bool keepdim) {
            return amin(t, dims_arg(dim), keepdim);
          },
          arg("dim") = none, arg("keepdim") = false)
      .def(
          "argmax",
          [](const Tensor& t, const pb::object& dim, bool keepdim) {
            return ops::argmax(t, dim.is_none() ? ops::kAllDims : dim.cast<int64_t>(), keepdim);
          },
          arg("dim") = none, arg("keepdim") = false)
      .def(
          "argmin",
          [](const Tensor& t, const pb::object& dim, bool keepdim) {
            return ops::argmin(t, dim.is_none() ? ops::kAllDims : dim.cast<int64_t>(), keepdim);
          },
          arg("dim") = none, arg("keepdim") = false)
      .def(
          "var",
          [](const Tensor& t, const pb::object& dim, const pb::object& unbiased, bool keepdim,
             const pb::object& correction) {
            return var(t, dims_arg(dim), correction_arg(unbiased, correction), keepdim);
          },
          arg("dim") = none, arg("unbiased") = none, arg("keepdim") = false, pb::kw_only(),
          arg("correction") = none)
      .def(
          "std",
          [](const Tensor& t, const pb::object& dim, const pb::object& unbiased, bool keepdim,
             const pb::object& correction) {
            return ember::std(t, dims_arg(dim), correction_arg(unbiased, correction), keepdim);
          },
          arg("dim") = none, arg("unbiased") = none, arg("keepdim") = false, pb::kw_only(),
          arg("correction") = none)
      .def("exp", [](const Tensor& t) { return exp(t); })
      .def("log", [](const Tensor& t) { return log(t); })
      .def("sqrt", [](const Tensor& t) { return sqrt(t); })
      .def("rsqrt", [](const Tensor& t) { return pow(t, -0.5); })
      .def("abs", [](const Tensor& t) { return abs(t); })
      .def("neg", [](const Tensor& t) { return neg(t); })
      .def("relu", [](const Tensor& t) { return relu(t); })
      .def("sigmoid", [](const Tensor& t) { return sigmoid(t); })
      .def("tanh", [](const Tensor& t) { return tanh(t); })
      .def(
          "softmax", [](const Tensor& t, int64_t dim) { return softmax(t, dim); }, arg("dim"))
      .def(
          "log_softmax", [](const Tensor& t, int64_t dim) { return log_softmax(t, dim); },
          arg("dim"))
      .def(
          "clamp",
          [](const Tensor& t, const pb::object& lo, const pb::object& hi) {
            double l = lo.is_none() ? -INFINITY : lo.cast<double>();
            double h = hi.is_none() ? INFINITY : hi.cast<double>();
            return clamp(t, l, h);
          },
          arg("min") = none, arg("max") = none)
      .def(
          "backward",
          [](const Tensor& t, const pb::object& gradient, bool retain_graph) {
            Tensor g = gradient.is_none() ? Tensor() : as_tensor_like(gradient, t);
            pb::gil_scoped_release release;
            backward(t, g, retain_graph);
          },
          arg("gradient") = none, arg("retain_graph") = false);
}

}  // namespace ember::py
