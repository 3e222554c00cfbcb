// SyncBatchNorm: batch normalisation whose training statistics are those of the global batch,
// all ranks together (torch.nn.SyncBatchNorm), and the differentiable all-reduce it is built on.
//
// Note [SyncBatchNorm]: each rank sums its part of the batch per channel; an all-reduce of the
// sums and of the element counts gives the global mean; a second all-reduce of the sums of
// squared deviations from it gives the global (biased) variance, the two-pass formula of the
// single-process batch norm. The layer is written with differentiable ops around
// all_reduce_sum, whose backward is again an all-reduce of the gradients: the gradient of the
// whole job's loss flows through the shared statistics to every rank's inputs. So a model with
// SyncBatchNorm trained by DistributedDataParallel on W ranks computes what one process computes
// with BatchNorm2d over the global batch (up to float rounding), forward and backward, running
// statistics included (unbiased variance from the global count). Ranks may hold different
// numbers of samples. Eval mode uses the running statistics and communicates nothing.
#pragma once

#include "dist/process_group.h"
#include "nn/layers.h"

namespace ember::dist {

// The sum of x over the ranks of `group`, differentiable: the gradient of the output is summed
// over the ranks too. requires: every rank calls it (and its backward) with x of the same shape.
Tensor all_reduce_sum(const Tensor& x, const ProcessGroupPtr& group);

// Global-batch statistics for a BatchNorm2d (nn::BatchNormStatistics).
class SyncBatchNormStatistics : public nn::BatchNormStatistics {
 public:
  // group null: the default group, looked up at the first forward.
  explicit SyncBatchNormStatistics(ProcessGroupPtr group = nullptr) : group_(std::move(group)) {}
  Tensor forward(nn::BatchNorm2d& bn, const Tensor& x) override;
  std::string name() const override { return "SyncBatchNorm"; }

 private:
  ProcessGroupPtr group_;
};

// Makes every BatchNorm2d of `module` a SyncBatchNorm over `group` (default: the default group),
// keeping its parameters and buffers (torch.nn.SyncBatchNorm.convert_sync_batchnorm). Returns
// the number of layers converted.
int convert_sync_batchnorm(nn::Module& module, ProcessGroupPtr group = nullptr);

}  // namespace ember::dist
