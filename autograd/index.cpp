// Basic indexing (autograd/index.h): the items are resolved once against x's shape into a list of
// select/slice/unsqueeze steps, which the forward applies to x and the backward replays on zeros.
#include "autograd/index.h"

#include "autograd/function.h"

namespace ember {
namespace {

// One step on the partial result; `dim` counts in the partial result's dims.
struct Step {
  TensorIndex::Kind kind;
  int64_t dim, start = 0, stop = 0, step = 1;
};

std::vector<Step> resolve(const Tensor& x, const std::vector<TensorIndex>& items) {
  int64_t consumed = 0, ellipses = 0;
  for (const TensorIndex& it : items) {
    if (it.kind() == TensorIndex::Kind::kEllipsis) ++ellipses;
    if (it.kind() == TensorIndex::Kind::kInteger || it.kind() == TensorIndex::Kind::kSlice)
      ++consumed;
  }
  EMBER_CHECK_INDEX(ellipses <= 1, "index: an index can only have a single ellipsis ('...')");
  EMBER_CHECK_INDEX(consumed <= x.dim(), "index: too many indices for a tensor of dimension ",
                    x.dim(), " (", consumed, " given)");
  std::vector<Step> steps;
  Shape shape = x.shape();  // of the partial result, to check integers against
  int64_t d = 0;
  for (const TensorIndex& it : items) {
    switch (it.kind()) {
      case TensorIndex::Kind::kNewAxis:
        steps.push_back({it.kind(), d});
        shape.insert(shape.begin() + d, 1);
        ++d;
        break;
      case TensorIndex::Kind::kEllipsis:
        d += x.dim() - consumed;
        break;
      case TensorIndex::Kind::kSlice: {
        const Slice& s = it.slice();
        EMBER_CHECK_VALUE(s.step > 0, "index: slice step must be greater than zero, got ", s.step);
        const int64_t n = shape[d];
        // Tensor::slice counts negative bounds from the end and clamps them to the dim.
        steps.push_back({it.kind(), d, s.start.value_or(0), s.stop.value_or(n), s.step});
        ++d;
        break;
      }
      case TensorIndex::Kind::kInteger: {
        const int64_t i = it.integer(), n = shape[d];
        EMBER_CHECK_INDEX(i >= -n && i < n, "index: index ", i, " is out of bounds for dimension ",
                          d, " with size ", n);
        steps.push_back({it.kind(), d, i < 0 ? i + n : i});
        shape.erase(shape.begin() + d);
        break;
      }
    }
  }
  return steps;
}

Tensor apply(Tensor t, const std::vector<Step>& steps) {
  for (const Step& s : steps) {
    if (s.kind == TensorIndex::Kind::kInteger)
      t = t.select(s.dim, s.start);
    else if (s.kind == TensorIndex::Kind::kSlice)
      t = t.slice(s.dim, s.start, s.stop, s.step);
    else
      t = t.unsqueeze(s.dim);
  }
  return t;
}

}  // namespace

Tensor index(const Tensor& x, const std::vector<TensorIndex>& items) {
  std::vector<Step> steps = resolve(x, items);
  return record_view("SliceBackward", x, [steps](const Tensor& t) { return apply(t, steps); });
}

}  // namespace ember
