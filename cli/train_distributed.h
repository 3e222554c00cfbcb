// `ember train --distributed`: the process group, the DistributedDataParallel wrapper and the
// split of each global batch over the ranks (docs/distributed.md).
//
// Note [Splitting the global batch]: --batch-size is the global batch, and the batches are the
// ones a single process would take (same seed, same order). Each global batch of B samples is
// cut into W contiguous shares, the first B mod W ranks taking one sample more; each rank's mean
// loss is weighted by W * (its share) / B before the backward pass, so the average of the ranks'
// gradients that DistributedDataParallel computes is the mean over the global batch, as in one
// process, whether or not W divides B. A global batch of fewer than W samples (possible only as
// an epoch's last, partial batch) is skipped by every rank, and rank 0 says so. The loss and
// accuracy rank 0 prints are those of the global batch (one small all-reduce a step).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dist/ddp.h"

namespace ember::cli {

struct DistributedOptions {
  std::string backend = "auto";  // auto: nccl for cuda devices when built in, else mpi
  double timeout_s = 300.0;
  double bucket_mb = 25.0;
  bool sync_bn = false;
};

class DistributedTraining {
 public:
  // Starts the default process group (DistError saying how to launch when the process was not
  // started by mpirun or an env:// launcher), converts batch norms to SyncBatchNorm when asked,
  // and wraps the model in DistributedDataParallel (which broadcasts rank 0's weights).
  DistributedTraining(const DistributedOptions& o, const nn::ModulePtr& model, Device device);
  ~DistributedTraining();
  int rank() const { return group_->rank(); }
  int world_size() const { return group_->size(); }
  std::string describe() const;
  nn::Module& ddp() { return *ddp_; }
  // This rank's part of a global batch (Note [Splitting the global batch]); empty for all ranks
  // when the batch has fewer samples than ranks.
  std::vector<int64_t> share(const std::vector<int64_t>& global) const;
  // W * share / B: the factor of this rank's mean loss.
  double loss_weight(int64_t share, int64_t global) const;
  // Sums `values` over the ranks (float64, on the host).
  std::vector<double> sum(const std::vector<double>& values);

 private:
  DistributedOptions options_;
  Device device_;  // where the collectives' tensors live (the nccl group takes cuda ones only)
  dist::ProcessGroupPtr group_;
  std::shared_ptr<dist::DistributedDataParallel> ddp_;
  int converted_bn_ = 0;
};

}  // namespace ember::cli
