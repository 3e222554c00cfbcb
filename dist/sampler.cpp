// DistributedSampler (dist/sampler.h).
#include "dist/sampler.h"

#include <numeric>

#include "dist/process_group.h"
#include "nn/data.h"

namespace ember::dist {

DistributedSampler::DistributedSampler(int64_t dataset_size, int num_replicas, int rank,
                                       bool shuffle, uint64_t seed, bool drop_last)
    : size_(dataset_size),
      replicas_(num_replicas < 0 ? get_world_size() : num_replicas),
      rank_(rank < 0 ? get_rank() : rank),
      shuffle_(shuffle),
      drop_last_(drop_last),
      seed_(seed) {
  EMBER_CHECK_VALUE(dataset_size >= 0, "DistributedSampler: negative dataset size ", dataset_size);
  EMBER_CHECK_VALUE(replicas_ >= 1, "DistributedSampler: num_replicas must be >= 1, got ",
                    replicas_);
  EMBER_CHECK_VALUE(rank_ >= 0 && rank_ < replicas_, "DistributedSampler: invalid rank ", rank_,
                    ", rank should be in the interval [0, ", replicas_ - 1, "]");
  // drop_last cuts to the largest multiple of the replicas; otherwise pad up to the next one.
  num_samples_ = drop_last_ ? size_ / replicas_ : (size_ + replicas_ - 1) / replicas_;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> order;
  if (shuffle_) {
    order = shuffled_indices(size_, seed_, epoch_);
  } else {
    order.resize(static_cast<size_t>(size_));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const int64_t total = total_size();
  if (static_cast<int64_t>(order.size()) < total && !order.empty()) {
    // Pad with the permutation's own first indices, repeated as often as needed.
    const size_t n = order.size();
    for (size_t i = 0; static_cast<int64_t>(order.size()) < total; ++i)
      order.push_back(order[i % n]);
  }
  order.resize(static_cast<size_t>(total));
  std::vector<int64_t> mine;
  for (int64_t i = rank_; i < total; i += replicas_) mine.push_back(order[static_cast<size_t>(i)]);
  return mine;
}

}  // namespace ember::dist
