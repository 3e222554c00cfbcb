// The Tensor class: attributes, Python operators (with broadcasting and PyTorch's scalar rules),
// comparisons, indexing (views, through ember::index) and item assignment. Methods are in
// tensor_methods.cpp.
#include "autograd/node.h"
#include "common.h"

namespace ember::py {
namespace {

using Binary = Tensor (*)(const Tensor&, const Tensor&);

bool is_operand(const pb::handle& o) {
  return pb::isinstance<Tensor>(o) || pb::isinstance<pb::int_>(o) ||
         pb::isinstance<pb::float_>(o) || pb::isinstance<pb::bool_>(o) ||
         pb::isinstance<pb::list>(o) || pb::isinstance<pb::array>(o);
}

template <Binary F>
pb::object bin(const Tensor& a, const pb::object& b) {
  if (!is_operand(b)) return pb::reinterpret_borrow<pb::object>(Py_NotImplemented);
  return pb::cast(F(a, as_tensor_like(b, a)));
}
template <Binary F>
pb::object rbin(const Tensor& a, const pb::object& b) {
  if (!is_operand(b)) return pb::reinterpret_borrow<pb::object>(Py_NotImplemented);
  return pb::cast(F(as_tensor_like(b, a), a));
}

Tensor t_add(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor t_sub(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor t_mul(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor t_div(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor t_matmul(const Tensor& a, const Tensor& b) {
  return matmul(a, b);
}
Tensor t_pow(const Tensor& a, const Tensor& b) {
  return pow(a, b);
}
Tensor t_eq(const Tensor& a, const Tensor& b) {
  return ops::eq(a, b);
}
Tensor t_ne(const Tensor& a, const Tensor& b) {
  return ops::ne(a, b);
}
Tensor t_lt(const Tensor& a, const Tensor& b) {
  return ops::lt(a, b);
}
Tensor t_le(const Tensor& a, const Tensor& b) {
  return ops::le(a, b);
}
Tensor t_gt(const Tensor& a, const Tensor& b) {
  return ops::gt(a, b);
}
Tensor t_ge(const Tensor& a, const Tensor& b) {
  return ops::ge(a, b);
}

Tensor t_remainder(const Tensor& a, const Tensor& b) {
  return remainder(a, b);
}
// a // b: floor(a / b); integers divide in float64 and convert back (exact below 2^53).
Tensor t_floordiv(const Tensor& a, const Tensor& b) {
  const DType t = promote_types(a.dtype(), b.dtype());
  if (is_floating(t)) return floor(div(a, b));
  return floor(div(a.to(kFloat64), b.to(kFloat64))).to(t);
}

// a (op)= b: an in-place op, which autograd follows (Note [In-place ops] in autograd/inplace.h).
template <Binary F>
Tensor& inplace(Tensor& a, const pb::object& b) {
  const Tensor other = as_tensor_like(b, a);
  return apply_inplace("in-place op", a, {other},
                       [&](const Tensor& self) { return F(self, other); });
}

pb::object grad_of(const Tensor& t) {
  Tensor g = grad(t);
  if (!g.defined()) return pb::none();
  return pb::cast(g);
}

}  // namespace

std::vector<TensorIndex> index_items(const pb::handle& index, Device device) {
  std::vector<pb::handle> items;
  if (pb::isinstance<pb::tuple>(index)) {
    for (auto it : index.cast<pb::tuple>()) items.push_back(it);
  } else {
    items.push_back(index);
  }
  std::vector<TensorIndex> out;
  for (auto it : items) {
    if (it.is_none()) {
      out.emplace_back(kNewAxis);
    } else if (it.ptr() == Py_Ellipsis) {
      out.emplace_back(kEllipsis);
    } else if (pb::isinstance<pb::slice>(it)) {
      // Absent bounds come back as 0 and PY_SSIZE_T_MAX, which ember::index clamps to the dim.
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(it.ptr(), &start, &stop, &step) < 0) throw pb::error_already_set();
      out.emplace_back(Slice{start, stop, step});
    } else if (pb::isinstance<Tensor>(it)) {
      out.emplace_back(it.cast<Tensor>());
    } else if (pb::isinstance<pb::bool_>(it)) {
      out.emplace_back(full({}, it.cast<bool>() ? 1.0 : 0.0, {kBool, device}));
    } else if (pb::isinstance<pb::int_>(it) || pb::hasattr(it, "__index__")) {
      out.emplace_back(pb::int_(pb::reinterpret_borrow<pb::object>(it)).cast<int64_t>());
    } else if (pb::isinstance<pb::list>(it) || pb::isinstance<pb::array>(it) ||
               pb::hasattr(it, "__array__")) {
      // A sequence of indices (or of bools: a mask), as a tensor on the indexed tensor's device.
      Tensor t = tensor_from_py(it, pb::none(), device);
      if (t.numel() == 0 && is_floating(t.dtype())) t = t.to(kInt64);  // x[[]]
      EMBER_CHECK_DTYPE(!is_floating(t.dtype()), "index: tensors used as indices must be int64, ",
                        "int32 or bool (a mask), got ", t.dtype());
      out.emplace_back(t);
    } else {
      throw pb::type_error(
          "only integers, slices (':'), None, Ellipsis ('...'), bools, and integer or bool "
          "tensors (or lists and arrays of them) are valid tensor indices, got " +
          std::string(pb::str(it.get_type().attr("__name__"))));
    }
  }
  return out;
}

void init_tensor(pb::module_& m) {
  pb::class_<Tensor> cls(m, "Tensor");
  cls.def(pb::init([](const Tensor& t) { return Tensor(t); }), pb::arg("other"),
          "A handle to the same tensor (same data, same autograd slot).")
      .def_property_readonly(
          "shape",
          [](const Tensor& t) { return pb::tuple(pb::cast(std::vector<int64_t>(t.shape()))); })
      .def(
          "size",
          [](const Tensor& t, const pb::object& dim) -> pb::object {
            if (dim.is_none()) return pb::tuple(pb::cast(std::vector<int64_t>(t.shape())));
            return pb::int_(t.size(dim.cast<int64_t>()));
          },
          pb::arg("dim") = pb::none())
      .def(
          "stride",
          [](const Tensor& t, const pb::object& dim) -> pb::object {
            if (dim.is_none()) return pb::tuple(pb::cast(std::vector<int64_t>(t.strides())));
            return pb::int_(t.stride(dim.cast<int64_t>()));
          },
          pb::arg("dim") = pb::none())
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("element_size", &Tensor::element_size)
      .def("storage_offset", &Tensor::offset)
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); })
      .def_property_readonly("is_cuda", [](const Tensor& t) { return t.device().is_cuda(); })
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t.dtype()); })
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& t, bool r) {
                      EMBER_CHECK_VALUE(
                          r || is_leaf(t),
                          "requires_grad: can only be cleared on a leaf tensor; use detach()");
                      requires_grad_(t, r);
                    })
      .def(
          "requires_grad_", [](Tensor& t, bool r) -> Tensor& { return requires_grad_(t, r); },
          pb::arg("requires_grad") = true, pb::return_value_policy::reference_internal)
      .def_property("grad", &grad_of,
                    [](Tensor& t, const pb::object& g) {
                      if (g.is_none()) {
                        zero_grad(t);
                        return;
                      }
                      const Tensor& gt = g.cast<const Tensor&>();
                      EMBER_CHECK_SHAPE(gt.shape() == t.shape(),
                                        "grad: assigned gradient of shape ", gt.shape(),
                                        " to a tensor of shape ", t.shape());
                      autograd_meta(t).grad = gt;
                    })
      .def_property_readonly("is_leaf", [](const Tensor& t) { return is_leaf(t); })
      .def_property_readonly("grad_fn",
                             [](const Tensor& t) -> pb::object {
                               AutogradMeta* meta = autograd_meta_if(t);
                               if (!meta || !meta->grad_fn) return pb::none();
                               return pb::cast(meta->grad_fn);
                             })
      .def_property_readonly("_version", &Tensor::version)
      .def("detach", [](const Tensor& t) { return detach(t); })
      .def("__repr__", &Tensor::to_string)
      .def("__hash__", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()); })
      .def("__len__",
           [](const Tensor& t) {
             if (t.dim() == 0) throw pb::type_error("len() of a 0-d tensor");
             return t.size(0);
           })
      .def("__bool__",
           [](const Tensor& t) {
             if (t.numel() != 1)
               throw pb::value_error("the truth value of a tensor with " +
                                     std::to_string(t.numel()) +
                                     " elements is ambiguous; use .any() or .all()");
             return t.item() != 0.0;
           })
      .def("__float__", [](const Tensor& t) { return t.item(); })
      .def("__int__", [](const Tensor& t) { return static_cast<int64_t>(t.item()); })
      .def("__index__",
           [](const Tensor& t) {
             if (!is_integral(t.dtype()) || t.numel() != 1)
               throw pb::type_error(
                   "only integer tensors of a single element can be converted to an index");
             return static_cast<int64_t>(t.item());
           })
      .def("__getitem__",
           [](const Tensor& t, const pb::object& idx) {
             return index(t, index_items(idx, t.device()));
           })
      .def("__setitem__",
           [](Tensor& t, const pb::object& idx, const pb::object& value) {
             Tensor v = as_tensor_like(value, t);
             if (v.device() != t.device()) v = v.to(t.device());
             index_put_(t, index_items(idx, t.device()), v);
           })
      .def("__add__", &bin<t_add>)
      .def("__radd__", &rbin<t_add>)
      .def("__sub__", &bin<t_sub>)
      .def("__rsub__", &rbin<t_sub>)
      .def("__mul__", &bin<t_mul>)
      .def("__rmul__", &rbin<t_mul>)
      .def("__truediv__", &bin<t_div>)
      .def("__rtruediv__", &rbin<t_div>)
      .def("__matmul__", &bin<t_matmul>)
      .def("__rmatmul__", &rbin<t_matmul>)
      .def("__rpow__", &rbin<t_pow>)
      .def("__pow__",
           [](const Tensor& a, const pb::object& b) -> pb::object {
             if (pb::isinstance<pb::float_>(b) || pb::isinstance<pb::int_>(b)) {
               if (is_integral(a.dtype()) && pb::isinstance<pb::int_>(b))
                 return pb::cast(ops::pow(a, b.cast<double>()));
               return pb::cast(pow(a, b.cast<double>()));
             }
             return bin<t_pow>(a, b);
           })
      .def("__eq__", &bin<t_eq>)
      .def("__ne__", &bin<t_ne>)
      .def("__lt__", &bin<t_lt>)
      .def("__le__", &bin<t_le>)
      .def("__gt__", &bin<t_gt>)
      .def("__ge__", &bin<t_ge>)
      .def("__neg__", [](const Tensor& a) { return neg(a); })
      .def("__pos__", [](const Tensor& a) { return a; })
      .def("__abs__", [](const Tensor& a) { return abs(a); })
      .def("__iadd__", &inplace<t_add>, pb::return_value_policy::reference_internal)
      .def("__isub__", &inplace<t_sub>, pb::return_value_policy::reference_internal)
      .def("__imul__", &inplace<t_mul>, pb::return_value_policy::reference_internal)
      .def("__itruediv__", &inplace<t_div>, pb::return_value_policy::reference_internal)
      .def("__mod__", &bin<t_remainder>)
      .def("__rmod__", &rbin<t_remainder>)
      .def("__imod__", &inplace<t_remainder>, pb::return_value_policy::reference_internal)
      .def("__floordiv__", &bin<t_floordiv>)
      .def("__rfloordiv__", &rbin<t_floordiv>)
      .def("__ifloordiv__", &inplace<t_floordiv>, pb::return_value_policy::reference_internal);
  init_tensor_methods(cls);
  init_interop(m, cls);
}

}  // namespace ember::py
