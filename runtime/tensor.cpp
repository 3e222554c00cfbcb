// Tensor's core: shapes and strides, dims, the basic properties of a view, item() and set_data().
// Factories, views and copies have files of their own (tensor_factories.cpp, tensor_views.cpp,
// tensor_copy.cpp).
#include "runtime/tensor.h"

#include <algorithm>

namespace ember {

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os << ']';
}

int64_t checked_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) {
    EMBER_CHECK_SHAPE(s >= 0, "negative size ", s, " in shape ", shape);
    EMBER_CHECK_SHAPE(!__builtin_mul_overflow(n, s, &n), "shape ", shape,
                      " has more elements than fit in int64");
  }
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    st[d] = s;
    s *= std::max<int64_t>(shape[d], 1);
  }
  return st;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  EMBER_CHECK_INDEX(dim >= lo && dim <= hi, op, ": dimension ", dim, " out of range for a ",
                    ndim, "-D tensor (expected ", lo, "..", hi, ")");
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

// ---------------------------------------------------------------------------------------------
// Basic properties

// A 0-D tensor has no sizes (wrap_dim lets dim 0 through for the ops that take it as "all").
int64_t Tensor::size(int64_t d) const {
  EMBER_CHECK_INDEX(dim() > 0, "size: dimension ", d, " of a 0-D tensor (it has no dimensions)");
  return shape()[wrap_dim(d, dim(), "size")];
}
int64_t Tensor::stride(int64_t d) const {
  EMBER_CHECK_INDEX(dim() > 0, "stride: dimension ", d, " of a 0-D tensor (it has no dimensions)");
  return strides()[wrap_dim(d, dim(), "stride")];
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape()) n *= s;
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  const Shape& sh = shape();
  const Shape& st = strides();
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sh[d] == 1) continue;
    if (sh[d] == 0) return true;
    if (st[d] != expected) return false;
    expected *= sh[d];
  }
  return true;
}

void* Tensor::data_ptr() const {
  const auto& s = storage();
  if (!s->data) return nullptr;
  return static_cast<char*>(s->data.get()) + offset() * static_cast<int64_t>(element_size());
}

void Tensor::set_data(const Tensor& other) const {
  TensorImpl& me = checked();
  const TensorImpl& src = *other.impl();
  me.storage = src.storage;
  me.offset = src.offset;
  me.shape = src.shape;
  me.strides = src.strides;
  me.dtype = src.dtype;
}

double Tensor::item() const {
  EMBER_CHECK_VALUE(numel() == 1, "item(): expected a tensor with one element, got shape ", shape(),
                    " (", numel(), " elements)");
  Tensor c = to(kCPU, kFloat64).contiguous();
  return *static_cast<const double*>(c.data_ptr());
}

}  // namespace ember
