// Tensors from Python values (nested lists, scalars, NumPy arrays) and the factories, plus the
// argument converters the other binding files share.
#include <cmath>

#include "common.h"

namespace ember::py {

Shape shape_of(const pb::handle& obj) {
  if (pb::isinstance<pb::int_>(obj)) return Shape{obj.cast<int64_t>()};
  if (!pb::isinstance<pb::sequence>(obj) || pb::isinstance<pb::str>(obj))
    throw_arg_type("shape", "tuple of ints", obj);
  Shape s;
  for (auto v : obj.cast<pb::sequence>()) {
    if (!pb::isinstance<pb::int_>(v)) throw_arg_type("shape", "tuple of ints", obj);
    s.push_back(v.cast<int64_t>());
  }
  return s;
}

Shape shape_arg(const pb::args& args) {
  if (args.size() == 1 && !pb::isinstance<pb::int_>(args[0])) return shape_of(args[0]);
  return shape_of(args);
}

std::array<int64_t, 2> pair_arg(const pb::handle& obj, const char* what) {
  if (pb::isinstance<pb::int_>(obj)) {
    int64_t v = obj.cast<int64_t>();
    return {v, v};
  }
  if (pb::isinstance<pb::sequence>(obj) && !pb::isinstance<pb::str>(obj) && pb::len(obj) == 2) {
    auto s = obj.cast<pb::sequence>();
    if (pb::isinstance<pb::int_>(s[0]) && pb::isinstance<pb::int_>(s[1]))
      return {s[0].cast<int64_t>(), s[1].cast<int64_t>()};
  }
  throw_arg_type(what, "int or tuple of ints", obj);
}

std::vector<int64_t> dims_arg(const pb::handle& obj) {
  if (obj.is_none()) return {};
  if (pb::isinstance<pb::int_>(obj)) return {obj.cast<int64_t>()};
  return shape_of(obj);
}

Reduction reduction_arg(const std::string& s) {
  if (s == "mean") return Reduction::Mean;
  if (s == "sum") return Reduction::Sum;
  if (s == "none") return Reduction::None;
  throw pb::value_error("reduction must be 'mean', 'sum' or 'none', got '" + s + "'");
}

namespace {

// Walks a nested sequence, checking that it is rectangular and collecting the leaves.
struct NestedParser {
  Shape shape;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  int kind = 0;  // 0 bool, 1 int, 2 float (the widest leaf seen)
  bool any_leaf = false;

  void walk(const pb::handle& obj, size_t depth) {
    if (pb::isinstance<pb::list>(obj) || pb::isinstance<pb::tuple>(obj) ||
        is_tensor_like_seq(obj)) {
      auto seq = pb::reinterpret_borrow<pb::sequence>(obj);
      auto n = static_cast<int64_t>(pb::len(seq));
      if (depth == shape.size()) {
        if (any_leaf) ragged(depth);
        shape.push_back(n);
      } else if (depth > shape.size() || shape[depth] != n) {
        ragged(depth);
      }
      for (auto item : seq) walk(item, depth + 1);
      return;
    }
    if (depth != shape.size()) ragged(depth);
    any_leaf = true;
    if (pb::isinstance<pb::bool_>(obj)) {
      push(obj.cast<bool>() ? 1 : 0, 0);
    } else if (pb::isinstance<pb::int_>(obj)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
      if (overflow != 0)
        throw pb::value_error("ember.tensor: integer " + pb::str(obj).cast<std::string>() +
                              " does not fit in int64");
      push(static_cast<int64_t>(v), 1);
    } else if (pb::isinstance<pb::float_>(obj)) {
      push_float(obj.cast<double>());
    } else if (pb::isinstance<Tensor>(obj) && obj.cast<Tensor>().numel() == 1) {
      const Tensor& t = obj.cast<const Tensor&>();
      if (is_floating(t.dtype()))
        push_float(t.item());
      else
        push(static_cast<int64_t>(t.item()), t.dtype() == kBool ? 0 : 1);
    } else if (pb::hasattr(obj, "dtype") && pb::hasattr(obj, "item") && pb::hasattr(obj, "ndim") &&
               obj.attr("ndim").cast<int>() == 0) {  // NumPy scalars
      walk(obj.attr("item")(), depth);
      any_leaf = true;
    } else {
      throw pb::type_error("ember.tensor: cannot convert an element of type '" +
                           pb::str(obj.get_type().attr("__name__")).cast<std::string>() +
                           "' to a number (elements must be bool, int or float)");
    }
  }
  static bool is_tensor_like_seq(const pb::handle& obj) {
    return pb::isinstance<pb::array>(obj) && obj.cast<pb::array>().ndim() > 0;
  }
  void push(int64_t v, int k) {
    kind = std::max(kind, k);
    ints.push_back(v);
    floats.push_back(static_cast<double>(v));
  }
  void push_float(double v) {
    kind = 2;
    ints.push_back(0);
    floats.push_back(v);
  }
  [[noreturn]] void ragged(size_t depth) const {
    throw pb::value_error("ember.tensor: ragged nested sequence (sub-sequences at depth " +
                          std::to_string(depth) +
                          " differ in length); every row must have the same shape");
  }
};

}  // namespace

Tensor tensor_from_py(const pb::handle& data, const pb::handle& dtype, Device device) {
  if (pb::isinstance<Tensor>(data)) {
    const Tensor& t = data.cast<const Tensor&>();
    Tensor d = detach(t);
    return d.to(device, dtype_arg(dtype, d.dtype())).clone();
  }
  if (pb::isinstance<pb::array>(data)) {
    Tensor shared = from_numpy(data.cast<pb::array>());
    return shared.to(device, dtype_arg(dtype, shared.dtype())).clone();
  }
  bool is_seq = pb::isinstance<pb::list>(data) || pb::isinstance<pb::tuple>(data);
  bool is_scalar = pb::isinstance<pb::bool_>(data) || pb::isinstance<pb::int_>(data) ||
                   pb::isinstance<pb::float_>(data);
  if (!is_seq && !is_scalar && pb::hasattr(data, "__array__")) {
    auto np = pb::module_::import("numpy");
    return tensor_from_py(np.attr("asarray")(data), dtype, device);
  }
  NestedParser p;
  p.walk(data, 0);
  DType inferred = p.kind == 2 ? kFloat32 : p.kind == 1 ? kInt64 : kBool;
  if (p.floats.empty() && !p.any_leaf) inferred = kFloat32;  // [] and [[], []]
  DType out = dtype_arg(dtype, inferred);
  Tensor t = p.kind == 2 || p.floats.empty() ? from_host(p.floats.data(), p.shape, kFloat64)
                                             : from_host(p.ints.data(), p.shape, kInt64);
  return t.to(device, out);
}

Tensor as_tensor_like(const pb::handle& value, const Tensor& like) {
  if (pb::isinstance<Tensor>(value)) return value.cast<Tensor>();
  DType dt = like.dtype();
  if (pb::isinstance<pb::bool_>(value)) {
    return full({}, value.cast<bool>() ? 1.0 : 0.0, TensorOptions(dt, like.device()));
  }
  if (pb::isinstance<pb::int_>(value)) {
    if (dt == kBool) dt = kInt64;
    int64_t v = value.cast<int64_t>();
    return from_host(&v, {}, kInt64, like.device()).to(dt);
  }
  if (pb::isinstance<pb::float_>(value)) {
    if (!is_floating(dt)) dt = kFloat32;
    return full({}, value.cast<double>(), TensorOptions(dt, like.device()));
  }
  return tensor_from_py(value, pb::none(), like.device());
}

void init_create(pb::module_& m) {
  m.def(
      "tensor",
      [](const pb::object& data, const pb::object& dtype, const pb::object& device,
         bool requires_grad) {
        Tensor t = tensor_from_py(data, dtype, device_arg(device));
        if (requires_grad) requires_grad_(t, true);
        return t;
      },
      pb::arg("data"), pb::kw_only(), pb::arg("dtype") = pb::none(), pb::arg("device") = pb::none(),
      pb::arg("requires_grad") = false,
      "A new tensor holding a copy of `data` (nested lists, a scalar, a NumPy array or a tensor).");
  m.def("_full", [](const pb::object& shape, double value, const pb::object& dtype,
                    const pb::object& device) {
    return full(shape_of(shape), value,
                TensorOptions(dtype_arg(dtype, kFloat32), device_arg(device)));
  });
  m.def("_full_int", [](const pb::object& shape, int64_t value, const pb::object& dtype,
                        const pb::object& device) {
    Tensor t = empty(shape_of(shape), TensorOptions(dtype_arg(dtype, kInt64), kCPU));
    t.copy_(from_host(&value, {}, kInt64));
    return t.to(device_arg(device));
  });
  m.def("_empty", [](const pb::object& shape, const pb::object& dtype, const pb::object& device) {
    return empty(shape_of(shape), TensorOptions(dtype_arg(dtype, kFloat32), device_arg(device)));
  });
  m.def("_arange", [](double start, double end, double step, const pb::object& dtype,
                      const pb::object& device) {
    return arange(start, end, step, TensorOptions(dtype_arg(dtype, kFloat32), device_arg(device)));
  });
  m.def("_rand", [](const pb::object& shape, const pb::object& dtype, const pb::object& device) {
    return rand(shape_of(shape), TensorOptions(dtype_arg(dtype, kFloat32), device_arg(device)));
  });
  m.def("_randn", [](const pb::object& shape, const pb::object& dtype, const pb::object& device) {
    return randn(shape_of(shape), TensorOptions(dtype_arg(dtype, kFloat32), device_arg(device)));
  });
  m.def("_uniform_", [](Tensor& t, double a, double b) {
    uniform_(t, a, b);
    return t;
  });
  m.def("_normal_", [](Tensor& t, double mean, double std) {
    normal_(t, mean, std);
    return t;
  });
}

}  // namespace ember::py
