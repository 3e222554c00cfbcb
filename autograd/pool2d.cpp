#include "autograd/pool2d.h"

#include "autograd/function.h"

namespace ember {

namespace {

// Max pooling's backward from the indices of Ember's forward.
Tensor record_by_indices(const Tensor& x, const Tensor& y, const Tensor& idx) {
  const Shape xs = x.shape();
  return record("MaxPool2dBackward", y, {x}, {idx},
                [xs](const Tensor& g, const std::vector<Tensor>& s) {
                  return std::vector<Tensor>{ops::max_pool2d_backward(g, s[0], xs)};
                });
}

}  // namespace

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const ops::MaxPool2dParams& p) {
  auto [y, idx] = ops::max_pool2d(x, p);
  return {record_by_indices(x, y, idx), idx};
}

Tensor max_pool2d(const Tensor& x, const ops::MaxPool2dParams& p) {
  // No indices asked for: on cuda cuDNN may pool, and its backward reads x and y instead.
  auto [y, idx] = ops::max_pool2d(x, p, /*need_indices=*/false);
  if (idx.defined()) return record_by_indices(x, y, idx);
  return record("MaxPool2dBackward", y, {x}, {x, y},
                [p](const Tensor& g, const std::vector<Tensor>& s) {
                  return std::vector<Tensor>{ops::max_pool2d_backward(g, s[0], s[1], p)};
                });
}

Tensor max_pool2d(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding,
                  int64_t dilation, bool ceil_mode) {
  ops::MaxPool2dParams p;
  p.kernel = {kernel, kernel}, p.stride = {stride, stride}, p.padding = {padding, padding};
  p.dilation = {dilation, dilation}, p.ceil_mode = ceil_mode;
  return ember::max_pool2d(x, p);
}

Tensor avg_pool2d(const Tensor& x, const ops::AvgPool2dParams& p) {
  const Shape xs = x.shape();
  return record("AvgPool2dBackward", ops::avg_pool2d(x, p), {x}, {},
                [xs, p](const Tensor& g, const std::vector<Tensor>&) {
                  return std::vector<Tensor>{ops::avg_pool2d_backward(g, xs, p)};
                });
}

Tensor avg_pool2d(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding, bool ceil_mode,
                  bool count_include_pad) {
  ops::AvgPool2dParams p;
  p.kernel = {kernel, kernel}, p.stride = {stride, stride}, p.padding = {padding, padding};
  p.ceil_mode = ceil_mode, p.count_include_pad = count_include_pad;
  return ember::avg_pool2d(x, p);
}

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size) {
  const Shape xs = x.shape();
  return record("AdaptiveAvgPool2dBackward", ops::adaptive_avg_pool2d(x, output_size), {x}, {},
                [xs](const Tensor& g, const std::vector<Tensor>&) {
                  return std::vector<Tensor>{ops::adaptive_avg_pool2d_backward(g, xs)};
                });
}

}  // namespace ember
