// Tensor views: new shapes, strides and offsets over the same storage (view, reshape, permute,
// transpose, slice, select, expand, squeeze, unsqueeze, flatten, as_strided). Only reshape and
// flatten may copy, when the strides cannot express the new shape.
#include <algorithm>

#include "runtime/tensor.h"

namespace ember {

Tensor Tensor::make_view(Shape shape, Shape strides, int64_t offset) const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage();
  impl->offset = offset;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->dtype = dtype();
  impl->base = checked().base ? checked().base : impl_ptr();
  return Tensor(std::move(impl));
}

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, int64_t off) const {
  EMBER_CHECK_SHAPE(shape.size() == strides.size(), "as_strided: shape ", shape,
                    " and strides ", strides, " differ in length");
  int64_t n = checked_numel(shape);
  if (n > 0) {
    int64_t hi = off;
    for (size_t d = 0; d < shape.size(); ++d) {
      EMBER_CHECK_SHAPE(strides[d] >= 0, "as_strided: negative stride in ", strides);
      hi += (shape[d] - 1) * strides[d];
    }
    EMBER_CHECK_SHAPE(off >= 0 && static_cast<size_t>(hi + 1) * element_size() <= storage()->nbytes,
                      "as_strided: view with shape ", shape, ", strides ", strides, ", offset ",
                      off, " reaches outside its storage of ", storage()->nbytes, " bytes");
  }
  return make_view(shape, strides, off);
}

namespace {
// Infers a -1 entry and checks the element count.
Shape infer_shape(const Shape& requested, int64_t numel, const Shape& from, const char* op) {
  Shape s = requested;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      EMBER_CHECK_SHAPE(infer < 0, op, ": only one dimension can be -1, got ", requested);
      infer = static_cast<int64_t>(i);
    } else {
      EMBER_CHECK_SHAPE(s[i] >= 0, op, ": invalid size ", s[i], " in shape ", requested);
      EMBER_CHECK_SHAPE(!__builtin_mul_overflow(known, s[i], &known), op, ": shape ", requested,
                        " overflows int64");
    }
  }
  if (infer >= 0) {
    EMBER_CHECK_SHAPE(known != 0 && numel % known == 0, op, ": shape ", requested,
                      " is invalid for input of size ", numel, " (shape ", from, ")");
    s[infer] = numel / known;
  } else {
    EMBER_CHECK_SHAPE(known == numel, op, ": shape ", requested, " is invalid for input of size ",
                      numel, " (shape ", from, ")");
  }
  return s;
}

// Strides for viewing (old_shape, old_strides) as new_shape without a copy, if possible
// (PyTorch's computeStride): each chunk of old dims that are contiguous with each other may be
// split into new dims freely.
bool view_strides(const Shape& oldshape, const Shape& oldstride, const Shape& newshape,
                  Shape& newstride) {
  newstride.assign(newshape.size(), 0);
  if (oldshape.empty()) {
    for (size_t i = 0; i < newshape.size(); ++i) newstride[i] = 1;
    return true;
  }
  int64_t numel = 1;
  for (int64_t s : oldshape) numel *= s;
  if (numel == 0) {
    newstride = contiguous_strides(newshape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 &&
                          oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}
}  // namespace

Tensor Tensor::view(const Shape& shape_req) const {
  Shape s = infer_shape(shape_req, numel(), shape(), "view");
  Shape st;
  EMBER_CHECK_SHAPE(view_strides(shape(), strides(), s, st), "view: cannot view a tensor of shape ",
                    shape(), " and strides ", strides(), " as shape ", s,
                    " without copying; use reshape() instead");
  return make_view(s, st, offset());
}

Tensor Tensor::reshape(const Shape& shape_req) const {
  Shape s = infer_shape(shape_req, numel(), shape(), "reshape");
  Shape st;
  if (view_strides(shape(), strides(), s, st)) return make_view(s, st, offset());
  return clone().view(s);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  const int64_t n = dim();
  EMBER_CHECK_SHAPE(static_cast<int64_t>(dims.size()) == n, "permute: expected ", n,
                    " dims for a tensor of shape ", shape(), ", got ", Shape(dims));
  Shape s(n), st(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n, "permute");
    EMBER_CHECK_SHAPE(!seen[d], "permute: dimension ", d, " repeats in ", Shape(dims));
    seen[d] = true;
    s[i] = shape()[d];
    st[i] = strides()[d];
  }
  return make_view(s, st, offset());
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  a = wrap_dim(a, dim(), "transpose");
  b = wrap_dim(b, dim(), "transpose");
  Shape s = shape(), st = strides();
  if (dim() > 0) {
    std::swap(s[a], s[b]);
    std::swap(st[a], st[b]);
  }
  return make_view(s, st, offset());
}

Tensor Tensor::t() const {
  EMBER_CHECK_SHAPE(dim() <= 2, "t(): expected a tensor with at most 2 dims, got shape ", shape());
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_dim(d, dim(), "slice");
  EMBER_CHECK_VALUE(step > 0, "slice: step must be positive, got ", step);
  EMBER_CHECK_INDEX(dim() > 0, "slice: cannot slice a 0-D tensor");
  const int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape s = shape(), st = strides();
  s[d] = (end - start + step - 1) / step;
  st[d] *= step;
  return make_view(s, st, offset() + start * strides()[d]);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  EMBER_CHECK_INDEX(dim() > 0, "select: cannot index a 0-D tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = shape()[d];
  EMBER_CHECK_INDEX(index >= -n && index < n, "select: index ", index,
                    " is out of bounds for dimension ", d, " with size ", n);
  if (index < 0) index += n;
  Shape s = shape(), st = strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return make_view(s, st, offset() + index * strides()[d]);
}

Tensor Tensor::expand(const Shape& target) const {
  const int64_t n = dim(), m = static_cast<int64_t>(target.size());
  EMBER_CHECK_SHAPE(m >= n, "expand: the target shape ", target, " has fewer dims than ", shape());
  Shape s(m), st(m);
  for (int64_t i = m - 1; i >= 0; --i) {
    int64_t j = i - (m - n);
    int64_t want = target[i];
    if (j < 0) {
      EMBER_CHECK_SHAPE(want >= 0, "expand: size -1 is not allowed in a new leading dim of ", target);
      s[i] = want;
      st[i] = 0;
      continue;
    }
    int64_t have = shape()[j];
    if (want == -1) want = have;
    EMBER_CHECK_SHAPE(have == want || have == 1, "expand: the size of dim ", i, " (", have,
                      ") of shape ", shape(), " must match the target ", target,
                      " or be 1");
    s[i] = want;
    st[i] = have == want ? strides()[j] : 0;
  }
  return make_view(s, st, offset());
}

Tensor Tensor::squeeze() const {
  Shape s, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (shape()[d] != 1) {
      s.push_back(shape()[d]);
      st.push_back(strides()[d]);
    }
  return make_view(s, st, offset());
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");
  if (dim() == 0 || shape()[d] != 1) return make_view(shape(), strides(), offset());
  Shape s = shape(), st = strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return make_view(s, st, offset());
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape s = shape(), st = strides();
  int64_t stride = d < dim() ? strides()[d] * shape()[d] : 1;
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return make_view(s, st, offset());
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  EMBER_CHECK_SHAPE(start <= end, "flatten: start_dim ", start, " comes after end_dim ", end);
  Shape s;
  for (int64_t d = 0; d < start; ++d) s.push_back(shape()[d]);
  int64_t m = 1;
  for (int64_t d = start; d <= end; ++d) m *= shape()[d];
  s.push_back(m);
  for (int64_t d = end + 1; d < dim(); ++d) s.push_back(shape()[d]);
  return reshape(s);
}

}  // namespace ember
