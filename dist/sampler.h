// DistributedSampler: each rank's share of a data set's indices for an epoch, with PyTorch's
// rules (torch.utils.data.distributed.DistributedSampler): the same (seeded, epoch-dependent)
// permutation on every rank, padded with its own first indices to a multiple of the number of
// replicas (or cut to one with drop_last), and rank r taking positions r, r + W, r + 2W, ...
// The permutation is Ember's (nn/data.h, shuffled_indices), not PyTorch's generator.
#pragma once

#include <cstdint>
#include <vector>

namespace ember::dist {

class DistributedSampler {
 public:
  // num_replicas/rank < 0: the default process group's world size and rank (1 and 0 without
  // one). requires: dataset_size >= 0, 0 <= rank < num_replicas (ValueError).
  DistributedSampler(int64_t dataset_size, int num_replicas = -1, int rank = -1,
                     bool shuffle = true, uint64_t seed = 0, bool drop_last = false);
  // Indices for the current epoch, num_samples() of them.
  std::vector<int64_t> indices() const;
  int64_t num_samples() const { return num_samples_; }
  int64_t total_size() const { return num_samples_ * replicas_; }
  // Every rank must set the same epoch before iterating, or the ranks' shares overlap.
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }
  int num_replicas() const { return replicas_; }
  int rank() const { return rank_; }

 private:
  int64_t size_;
  int replicas_, rank_;
  bool shuffle_, drop_last_;
  uint64_t seed_, epoch_ = 0;
  int64_t num_samples_;
};

}  // namespace ember::dist
