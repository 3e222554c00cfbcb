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

// In-place arithmetic writes into the tensor's memory, which autograd cannot follow for a leaf
// that requires grad (as in PyTorch).
template <Binary F>
Tensor& inplace(Tensor& a, const pb::object& b) {
  if (GradMode::is_enabled() && a.requires_grad())
    throw pb::value_error(
        "a tensor that requires grad is being used in an in-place operation; "
        "wrap it in `with ember.no_grad():` or use an out-of-place op");
  Tensor r = F(a, as_tensor_like(b, a));
  EMBER_CHECK_DTYPE(promote_types(a.dtype(), r.dtype()) == a.dtype(), "in-place op: result dtype ",
                    r.dtype(), " cannot be stored in a ", a.dtype(), " tensor");
  a.copy_(r);
  return a;
}

pb::object grad_of(const Tensor& t) {
  Tensor g = grad(t);
  if (!g.defined()) return pb::none();
  return pb::cast(g);
}

}  // namespace

std::vector<TensorIndex> index_items(const pb::handle& index) {
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
    } else if (pb::isinstance<pb::int_>(it) || pb::hasattr(it, "__index__")) {
      out.emplace_back(pb::int_(pb::reinterpret_borrow<pb::object>(it)).cast<int64_t>());
    } else {
      throw pb::type_error(
          "only integers, slices (':'), None and Ellipsis ('...') are valid tensor "
          "indices, got " +
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
           [](const Tensor& t, const pb::object& idx) { return index(t, index_items(idx)); })
      .def("__setitem__",
           [](Tensor& t, const pb::object& idx, const pb::object& value) {
             if (GradMode::is_enabled() && t.requires_grad() && is_leaf(t))
               throw pb::value_error(
                   "a leaf tensor that requires grad is being used in an in-place "
                   "operation; wrap it in `with ember.no_grad():`");
             Tensor view;
             {
               NoGradGuard no_grad;  // the write below is not differentiated
               view = index(t, index_items(idx));
             }
             view.copy_(as_tensor_like(value, t));
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
      .def("__itruediv__", &inplace<t_div>, pb::return_value_policy::reference_internal);
  init_tensor_methods(cls);
  init_interop(m, cls);
}

}  // namespace ember::py
