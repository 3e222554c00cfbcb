// Dataset, TensorDataset and DataLoader (seeded shuffling, drop_last, one prefetch thread).
#include "nn/data.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

namespace ember {

// --- Datasets ----------------------------------------------------------------------------------

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  EMBER_CHECK_VALUE(!indices.empty(), "Dataset::get_batch: no indices");
  std::vector<int64_t> labels;
  labels.reserve(indices.size());
  Tensor inputs;
  for (size_t b = 0; b < indices.size(); ++b) {
    Example ex = get(indices[b]);
    if (b == 0) {
      Shape shape = ex.input.shape();
      shape.insert(shape.begin(), static_cast<int64_t>(indices.size()));
      inputs = empty(shape, TensorOptions(ex.input.dtype()));
    } else {
      EMBER_CHECK_SHAPE(ex.input.shape() == inputs.select(0, 0).shape(),
                        "Dataset::get_batch: example ", indices[b], " has shape ", ex.input.shape(),
                        ", example ", indices[0], " has ", inputs.select(0, 0).shape());
      EMBER_CHECK_DTYPE(ex.input.dtype() == inputs.dtype(), "Dataset::get_batch: example ",
                        indices[b], " has dtype ", ex.input.dtype(), ", example ", indices[0],
                        " has ", inputs.dtype());
    }
    inputs.select(0, static_cast<int64_t>(b)).copy_(ex.input);
    labels.push_back(ex.label);
  }
  return {inputs, from_vector(labels)};
}

TensorDataset::TensorDataset(Tensor inputs, Tensor labels) {
  EMBER_CHECK_VALUE(inputs.defined() && labels.defined(), "TensorDataset: undefined tensor");
  EMBER_CHECK_SHAPE(inputs.dim() >= 1, "TensorDataset: inputs need a leading example dim, got ",
                    "shape ", inputs.shape());
  EMBER_CHECK_DTYPE(labels.dtype() == kInt64, "TensorDataset: labels must be int64, got ",
                    labels.dtype());
  EMBER_CHECK_SHAPE(labels.dim() == 1 && labels.size(0) == inputs.size(0),
                    "TensorDataset: labels must have shape [", inputs.size(0), "], got ",
                    labels.shape());
  inputs_ = inputs.cpu().contiguous();
  labels_ = labels.cpu().contiguous();
}

Example TensorDataset::get(int64_t i) const {
  EMBER_CHECK_INDEX(i >= 0 && i < size(), "TensorDataset: index ", i, " out of range for ", size(),
                    " examples");
  return {inputs_.select(0, i), labels_.data<int64_t>()[i]};
}

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  EMBER_CHECK_VALUE(!indices.empty(), "TensorDataset::get_batch: no indices");
  Shape shape = inputs_.shape();
  shape[0] = static_cast<int64_t>(indices.size());
  Tensor inputs = empty(shape, TensorOptions(inputs_.dtype()));
  Tensor labels = empty({shape[0]}, kInt64);
  size_t row =
      static_cast<size_t>(inputs_.numel() / std::max<int64_t>(size(), 1)) * inputs_.element_size();
  const char* src = static_cast<const char*>(inputs_.data_ptr());
  char* dst = static_cast<char*>(inputs.data_ptr());
  const int64_t* lsrc = labels_.data<int64_t>();
  int64_t* ldst = labels.data<int64_t>();
  for (size_t b = 0; b < indices.size(); ++b) {
    int64_t i = indices[b];
    EMBER_CHECK_INDEX(i >= 0 && i < size(), "TensorDataset: index ", i, " out of range for ",
                      size(), " examples");
    if (row > 0) std::memcpy(dst + b * row, src + static_cast<size_t>(i) * row, row);
    ldst[b] = lsrc[i];
  }
  return {inputs, labels};
}

// --- Shuffling ---------------------------------------------------------------------------------

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// Uniform in [0, bound) without modulo bias (rejects the low 2^64 mod bound values).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound) {
  uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}
}  // namespace

std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, uint64_t epoch) {
  EMBER_CHECK_VALUE(n >= 0, "shuffled_indices: negative count ", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(splitmix64(seed ^ splitmix64(epoch)));
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(uniform_below(rng, static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

// --- DataLoader --------------------------------------------------------------------------------

// One pass over the data. Without prefetch, batches are made on the caller's thread in next();
// with prefetch, a worker makes them and hands them over through `ready` (at most one waiting).
struct DataLoader::Epoch {
  std::shared_ptr<const Dataset> dataset;
  std::vector<int64_t> order;
  int64_t batch_size = 1, num_batches = 0, next_index = 0;

  std::thread worker;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Batch> ready;
  std::exception_ptr error;
  bool stop = false, worker_done = false;

  Batch make(int64_t b) const {
    auto first = order.begin() + b * batch_size;
    auto last = order.begin() + std::min<int64_t>((b + 1) * batch_size, order.size());
    return dataset->get_batch(std::vector<int64_t>(first, last));
  }

  void start_worker() {
    worker = std::thread([this] {
      for (int64_t b = 0; b < num_batches; ++b) {
        Batch batch;
        try {
          batch = make(b);
        } catch (...) {
          std::lock_guard<std::mutex> g(mu);
          error = std::current_exception();
          break;
        }
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return stop || ready.empty(); });
        if (stop) return;
        ready.push_back(std::move(batch));
        cv.notify_all();
      }
      std::lock_guard<std::mutex> g(mu);
      worker_done = true;
      cv.notify_all();
    });
  }

  // The next batch into *out; false after the last one. Rethrows a failure of make().
  bool next(Batch* out) {
    if (!worker.joinable()) {
      if (next_index >= num_batches) return false;
      *out = make(next_index++);
      return true;
    }
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return !ready.empty() || worker_done; });
    if (!ready.empty()) {
      *out = std::move(ready.front());
      ready.pop_front();
      cv.notify_all();
      return true;
    }
    if (error) {
      std::exception_ptr e = error;
      error = nullptr;
      std::rethrow_exception(e);
    }
    return false;
  }

  ~Epoch() {
    if (!worker.joinable()) return;
    {
      std::lock_guard<std::mutex> g(mu);
      stop = true;
    }
    cv.notify_all();
    worker.join();
  }
};

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, int64_t batch_size, bool shuffle,
                       bool drop_last, uint64_t seed, bool prefetch)
    : dataset_(std::move(dataset)),
      batch_size_(batch_size),
      shuffle_(shuffle),
      drop_last_(drop_last),
      prefetch_(prefetch),
      seed_(seed) {
  EMBER_CHECK_VALUE(dataset_ != nullptr, "DataLoader: null dataset");
  EMBER_CHECK_VALUE(batch_size >= 1, "DataLoader: batch_size must be at least 1, got ", batch_size);
}

int64_t DataLoader::num_batches() const {
  int64_t n = dataset_->size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

std::vector<int64_t> DataLoader::epoch_order(uint64_t epoch) const {
  if (shuffle_) return shuffled_indices(dataset_->size(), seed_, epoch);
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  return order;
}

DataLoader::Iterator DataLoader::begin() {
  auto e = std::make_shared<Epoch>();
  e->dataset = dataset_;
  e->order = epoch_order(next_epoch_++);
  e->batch_size = batch_size_;
  e->num_batches = num_batches();
  if (prefetch_ && e->num_batches > 0) e->start_worker();
  return Iterator(std::move(e));
}

DataLoader::Iterator DataLoader::end() {
  return Iterator();
}

DataLoader::Iterator::Iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)) {
  ++*this;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  if (!epoch_) return *this;
  try {
    if (!epoch_->next(&current_)) {
      epoch_.reset();
      current_ = Batch{};
    }
  } catch (...) {
    epoch_.reset();
    throw;
  }
  return *this;
}

}  // namespace ember
