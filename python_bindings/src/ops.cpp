// Tensor-level functions as ember.<op>: elementwise math, reductions, products, shapes, where,
// cat/stack. Differentiable: each binds a function of the autograd API.
#include "common.h"

namespace ember::py {
namespace {

Tensor T(const pb::handle& v, const Tensor& like) {
  return as_tensor_like(v, like);
}

// The first tensor among two operands (the other may be a Python scalar).
const Tensor& pick(const pb::object& a, const pb::object& b) {
  if (pb::isinstance<Tensor>(a)) return a.cast<const Tensor&>();
  if (pb::isinstance<Tensor>(b)) return b.cast<const Tensor&>();
  throw pb::type_error("expected at least one tensor argument");
}

}  // namespace

void init_ops(pb::module_& m) {
  using pb::arg;
  auto none = pb::none();
  m.def(
      "add",
      [](const pb::object& a, const pb::object& b) {
        const Tensor& l = pick(a, b);
        return add(T(a, l), T(b, l));
      },
      arg("input"), arg("other"));
  m.def(
      "sub",
      [](const pb::object& a, const pb::object& b) {
        const Tensor& l = pick(a, b);
        return sub(T(a, l), T(b, l));
      },
      arg("input"), arg("other"));
  m.def(
      "mul",
      [](const pb::object& a, const pb::object& b) {
        const Tensor& l = pick(a, b);
        return mul(T(a, l), T(b, l));
      },
      arg("input"), arg("other"));
  m.def(
      "div",
      [](const pb::object& a, const pb::object& b) {
        const Tensor& l = pick(a, b);
        return div(T(a, l), T(b, l));
      },
      arg("input"), arg("other"));
  m.def(
      "maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, arg("input"),
      arg("other"));
  m.def(
      "minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, arg("input"),
      arg("other"));
  m.def(
      "pow",
      [](const pb::object& a, const pb::object& b) -> Tensor {
        if (pb::isinstance<Tensor>(a) &&
            (pb::isinstance<pb::float_>(b) || pb::isinstance<pb::int_>(b)))
          return pow(a.cast<const Tensor&>(), b.cast<double>());
        const Tensor& l = pick(a, b);
        return pow(T(a, l), T(b, l));
      },
      arg("input"), arg("exponent"));
  m.def(
      "neg", [](const Tensor& a) { return neg(a); }, arg("input"));
  m.def(
      "exp", [](const Tensor& a) { return exp(a); }, arg("input"));
  m.def(
      "log", [](const Tensor& a) { return log(a); }, arg("input"));
  m.def(
      "sqrt", [](const Tensor& a) { return sqrt(a); }, arg("input"));
  m.def(
      "rsqrt", [](const Tensor& a) { return pow(a, -0.5); }, arg("input"));
  m.def(
      "abs", [](const Tensor& a) { return abs(a); }, arg("input"));
  m.def(
      "clamp",
      [](const Tensor& a, const pb::object& lo, const pb::object& hi) {
        return clamp(a, lo.is_none() ? -INFINITY : lo.cast<double>(),
                     hi.is_none() ? INFINITY : hi.cast<double>());
      },
      arg("input"), arg("min") = none, arg("max") = none);
  m.def(
      "where",
      [](const Tensor& c, const pb::object& a, const pb::object& b) {
        const Tensor& l = pick(a, b);
        return where(c, T(a, l), T(b, l));
      },
      arg("condition"), arg("input"), arg("other"));
  m.def(
      "eq", [](const Tensor& a, const pb::object& b) { return ops::eq(a, T(b, a)); }, arg("input"),
      arg("other"));
  m.def(
      "ne", [](const Tensor& a, const pb::object& b) { return ops::ne(a, T(b, a)); }, arg("input"),
      arg("other"));
  m.def(
      "lt", [](const Tensor& a, const pb::object& b) { return ops::lt(a, T(b, a)); }, arg("input"),
      arg("other"));
  m.def(
      "le", [](const Tensor& a, const pb::object& b) { return ops::le(a, T(b, a)); }, arg("input"),
      arg("other"));
  m.def(
      "gt", [](const Tensor& a, const pb::object& b) { return ops::gt(a, T(b, a)); }, arg("input"),
      arg("other"));
  m.def(
      "ge", [](const Tensor& a, const pb::object& b) { return ops::ge(a, T(b, a)); }, arg("input"),
      arg("other"));
  m.def(
      "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, arg("input"),
      arg("other"));
  m.def(
      "mm", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, arg("input"),
      arg("mat2"));
  m.def(
      "bmm", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, arg("input"),
      arg("mat2"));
  m.def(
      "transpose", [](const Tensor& a, int64_t d0, int64_t d1) { return transpose(a, d0, d1); },
      arg("input"), arg("dim0"), arg("dim1"));
  m.def(
      "permute", [](const Tensor& a, const std::vector<int64_t>& dims) { return permute(a, dims); },
      arg("input"), arg("dims"));
  m.def(
      "reshape",
      [](const Tensor& a, const pb::object& shape) { return reshape(a, shape_of(shape)); },
      arg("input"), arg("shape"));
  m.def(
      "flatten", [](const Tensor& a, int64_t s, int64_t e) { return flatten(a, s, e); },
      arg("input"), arg("start_dim") = 0, arg("end_dim") = -1);
  m.def(
      "cat", [](const std::vector<Tensor>& xs, int64_t dim) { return cat(xs, dim); },
      arg("tensors"), arg("dim") = 0);
  m.def(
      "stack", [](const std::vector<Tensor>& xs, int64_t dim) { return stack(xs, dim); },
      arg("tensors"), arg("dim") = 0);
  m.def(
      "detach", [](const Tensor& a) { return detach(a); }, arg("input"));
  m.def("broadcast_shapes", [](const pb::args& shapes) {
    Shape s;
    for (auto x : shapes) s = ops::broadcast_shapes(s, shape_of(x), "broadcast_shapes");
    return pb::tuple(pb::cast(std::vector<int64_t>(s)));
  });
  m.def("_index",
        [](const Tensor& t, const pb::handle& idx) {
          return index(t, index_items(idx, t.device()));
        });
  m.def("_expand", [](const Tensor& t, const Shape& shape) { return expand(t, shape); });
  m.def("_amax", [](const Tensor& t, const pb::object& dim, bool keepdim, bool is_max) {
    return is_max ? amax(t, dims_arg(dim), keepdim) : amin(t, dims_arg(dim), keepdim);
  });
  m.def("_var", [](const Tensor& t, const pb::object& dim, int64_t correction, bool keepdim) {
    return var(t, dims_arg(dim), correction, keepdim);
  });
}

}  // namespace ember::py
