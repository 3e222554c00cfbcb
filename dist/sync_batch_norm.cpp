// SyncBatchNorm (dist/sync_batch_norm.h; Note [SyncBatchNorm]).
#include "dist/sync_batch_norm.h"

#include "autograd/function.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"

namespace ember::dist {

Tensor all_reduce_sum(const Tensor& x, const ProcessGroupPtr& group) {
  Tensor out;
  {
    NoGradGuard ng;
    out = detach(x).contiguous().clone();
  }
  group->all_reduce(out, ReduceOp::sum)->wait();
  return record("AllReduceSum", out, {x}, {},
                [group](const Tensor& grad_out, const std::vector<Tensor>&) {
                  Tensor g = grad_out.contiguous().clone();
                  group->all_reduce(g, ReduceOp::sum)->wait();
                  return std::vector<Tensor>{g};
                });
}

Tensor SyncBatchNormStatistics::forward(nn::BatchNorm2d& bn, const Tensor& input) {
  if (!group_) group_ = default_group_ptr();
  const int64_t c = bn.num_features;
  // In float64 whatever the input's dtype: the sums over N x H x W values (and, in the backward
  // pass, the sums of the gradient terms that cancel) lose too much in float32 for the result to
  // match batch_norm's kernels, which accumulate in double.
  const DType dt = kFloat64;
  const Tensor x = input.dtype() == dt ? input : ember::to(input, dt);
  const Shape per_channel{1, c, 1, 1};
  Tensor count = full({1}, static_cast<double>(x.numel() / c), {kFloat64, x.device()});
  group_->all_reduce(count, ReduceOp::sum)->wait();
  const double n = count.item();
  EMBER_CHECK_VALUE(n > 1, "SyncBatchNorm(", c,
                    "): expected more than 1 value per channel over "
                    "all ranks in training, got ",
                    n);
  const Tensor mean = all_reduce_sum(sum(x, {0, 2, 3}), group_) / n;
  // ember::reshape, the differentiable one (Tensor::reshape would cut the graph).
  const Tensor centred = x - ember::reshape(mean, per_channel);
  const Tensor var = all_reduce_sum(sum(centred * centred, {0, 2, 3}), group_) / n;
  Tensor y = centred * ember::reshape(pow(var + bn.eps, -0.5), per_channel);
  if (bn.weight.defined())
    y = y * ember::reshape(ember::to(bn.weight, dt), per_channel) +
        ember::reshape(ember::to(bn.bias, dt), per_channel);
  if (bn.running_mean.defined()) {
    NoGradGuard ng;
    const double m = bn.momentum;
    bn.running_mean.copy_(detach(bn.running_mean).to(dt) * (1 - m) + detach(mean) * m);
    bn.running_var.copy_(detach(bn.running_var).to(dt) * (1 - m) + detach(var) * (m * n / (n - 1)));
  }
  return input.dtype() == dt ? y : ember::to(y, input.dtype());
}

int convert_sync_batchnorm(nn::Module& module, ProcessGroupPtr group) {
  if (!group) group = default_group_ptr();
  auto stats = std::make_shared<SyncBatchNormStatistics>(group);
  int converted = 0;
  for (auto& [name, m] : module.named_modules())
    if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(m.get())) {
      bn->statistics = stats;
      ++converted;
    }
  return converted;
}

}  // namespace ember::dist
