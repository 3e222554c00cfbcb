// Data sets and the loader that batches them.
//
// A Dataset is indexable examples (input tensor, int64 label). TensorDataset holds all inputs
// in one tensor [N, ...] and the labels in one int64 tensor [N]. A DataLoader walks a dataset
// in batches {inputs [B, ...], labels [B]}, optionally shuffled by a permutation that depends
// only on (seed, epoch), optionally with one worker thread assembling the next batch while the
// caller works on the current one.
//
//   DataLoader loader(load_digits(default_data_dir(), Split::train), 64, /*shuffle=*/true);
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (const Batch& b : loader) train_step(b.inputs, b.labels);
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <type_traits>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

struct Example {
  Tensor input;
  int64_t label = 0;
};

struct Batch {
  Tensor inputs;  // [B, ...]
  Tensor labels;  // int64 [B]
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // requires: 0 <= i < size() (IndexError otherwise).
  virtual Example get(int64_t i) const = 0;
  // The examples at `indices`, stacked. The default stacks get(i); all inputs must share shape
  // and dtype (ShapeError / DTypeError otherwise). Called from the loader's worker thread when
  // prefetching, so implementations must not mutate shared state without locking.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const;
};

// Inputs [N, ...] (any dtype, kept on the CPU, made contiguous) and int64 labels [N].
class TensorDataset : public Dataset {
 public:
  // requires: inputs.dim() >= 1, labels int64 of shape [inputs.size(0)] (ShapeError/DTypeError).
  TensorDataset(Tensor inputs, Tensor labels);
  int64_t size() const override { return inputs_.size(0); }
  Example get(int64_t i) const override;
  // Gathers rows with one copy each (no per-example tensors).
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  const Tensor& inputs() const { return inputs_; }
  const Tensor& labels() const { return labels_; }

 private:
  Tensor inputs_, labels_;
};

// The order of the examples in epoch `epoch`: a Fisher-Yates shuffle of 0..n-1 driven by
// std::mt19937_64 seeded from (seed, epoch). Fully specified (no std distributions), so it is
// the same on every platform and standard library.
std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, uint64_t epoch);

class DataLoader {
 public:
  // requires: dataset non-null, batch_size >= 1 (ValueError).
  DataLoader(std::shared_ptr<const Dataset> dataset, int64_t batch_size, bool shuffle = false,
             bool drop_last = false, uint64_t seed = 0, bool prefetch = false);
  // Takes a copy of a concrete dataset (TensorDataset copies are cheap handles).
  template <typename D, typename = std::enable_if_t<std::is_base_of_v<Dataset, std::decay_t<D>>>>
  DataLoader(D&& dataset, int64_t batch_size, bool shuffle = false, bool drop_last = false,
             uint64_t seed = 0, bool prefetch = false)
      : DataLoader(std::make_shared<std::decay_t<D>>(std::forward<D>(dataset)), batch_size, shuffle,
                   drop_last, seed, prefetch) {}

  // Batches per epoch: ceil(size / batch_size), or floor with drop_last.
  int64_t num_batches() const;
  const Dataset& dataset() const { return *dataset_; }
  // The epoch the next begin() starts (0 at first; each begin() advances it by one).
  uint64_t epoch() const { return next_epoch_; }
  void set_epoch(uint64_t epoch) { next_epoch_ = epoch; }
  // Dataset indices of epoch `epoch` in visiting order (identity when not shuffling).
  std::vector<int64_t> epoch_order(uint64_t epoch) const;

  class Iterator;
  // Starts the next epoch. With prefetch, the worker thread starts here and is stopped and
  // joined when the last iterator copy of this epoch is destroyed (e.g. on `break`). An
  // exception thrown while assembling a batch in the worker is rethrown by operator++ / begin().
  Iterator begin();
  Iterator end();

 private:
  struct Epoch;
  std::shared_ptr<const Dataset> dataset_;
  int64_t batch_size_;
  bool shuffle_, drop_last_, prefetch_;
  uint64_t seed_, next_epoch_ = 0;
};

class DataLoader::Iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Batch;
  using difference_type = std::ptrdiff_t;
  using pointer = const Batch*;
  using reference = const Batch&;

  Iterator() = default;
  const Batch& operator*() const { return current_; }
  const Batch* operator->() const { return &current_; }
  Iterator& operator++();
  // Only "at end" is compared: all non-end iterators of a live epoch are alike.
  bool operator==(const Iterator& o) const { return done() == o.done(); }
  bool operator!=(const Iterator& o) const { return !(*this == o); }

 private:
  friend class DataLoader;
  explicit Iterator(std::shared_ptr<Epoch> epoch);
  bool done() const { return epoch_ == nullptr; }
  std::shared_ptr<Epoch> epoch_;
  Batch current_;
};

}  // namespace ember
