// TensorDataset and DataLoader: batching, drop_last, seeded shuffling, the prefetch thread.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <optional>

#include "nn/data.h"
#include "nn_test_util.h"

using namespace ember;
using ember_test::check_throws_with;

namespace {

// n examples of shape [2, 3]; example i is filled with i and labelled i.
TensorDataset numbered(int64_t n) {
  std::vector<float> x;
  for (int64_t i = 0; i < n; ++i) x.insert(x.end(), 6, static_cast<float>(i));
  std::vector<int64_t> y(static_cast<size_t>(n));
  std::iota(y.begin(), y.end(), 0);
  return TensorDataset(from_vector(x, {n, 2, 3}), from_vector(y));
}

// Each batch's labels, checking on the way that every input row matches its label.
std::vector<std::vector<int64_t>> collect(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (const Batch& b : loader) {
    std::vector<int64_t> labels = b.labels.to_vector<int64_t>();
    REQUIRE(b.inputs.dim() == 3);
    REQUIRE(b.inputs.size(0) == static_cast<int64_t>(labels.size()));
    std::vector<float> x = b.inputs.to_vector<float>();
    for (size_t i = 0; i < labels.size(); ++i)
      for (int k = 0; k < 6; ++k) CHECK(x[i * 6 + k] == static_cast<float>(labels[i]));
    out.push_back(labels);
  }
  return out;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

// A dataset that computes its examples and fails on one index.
class Failing : public Dataset {
 public:
  explicit Failing(int64_t bad) : bad_(bad) {}
  int64_t size() const override { return 20; }
  Example get(int64_t i) const override {
    EMBER_CHECK_VALUE(i != bad_, "example ", i, " is corrupt");
    return {full({2}, static_cast<double>(i)), i};
  }

 private:
  int64_t bad_;
};

}  // namespace

TEST_CASE("TensorDataset checks its tensors and returns examples") {
  TensorDataset ds = numbered(5);
  CHECK(ds.size() == 5);
  Example e = ds.get(3);
  CHECK(e.label == 3);
  CHECK(e.input.shape() == Shape{2, 3});
  CHECK(e.input.to_vector<float>() == std::vector<float>(6, 3.0f));
  CHECK_THROWS_AS(ds.get(5), IndexError);
  CHECK_THROWS_AS(ds.get(-1), IndexError);
  CHECK_THROWS_AS(ds.get_batch({0, 7}), IndexError);
  check_throws_with<DTypeError>([] { TensorDataset(zeros({3, 2}), zeros({3})); }, {"int64"});
  check_throws_with<ShapeError>(
      [] {
        TensorDataset(zeros({3, 2}), zeros({4}, kInt64));
      },
      {"[3]", "[4]"});
  CHECK_THROWS_AS(TensorDataset(zeros({}), zeros({1}, kInt64)), ShapeError);
  // A non-contiguous input tensor is copied into row-major order.
  TensorDataset t(arange(6.0, 0.0, -1.0).view({3, 2}).t().contiguous().t(), arange(3));
  CHECK(t.get(0).input.to_vector<float>() == std::vector<float>{6, 5});
}

TEST_CASE("DataLoader batches in order, with and without drop_last") {
  DataLoader loader(numbered(10), 4);
  CHECK(loader.num_batches() == 3);
  auto batches = collect(loader);
  REQUIRE(batches.size() == 3);
  CHECK(batches[0] == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(batches[2] == std::vector<int64_t>{8, 9});

  DataLoader dropping(numbered(10), 4, false, /*drop_last=*/true);
  CHECK(dropping.num_batches() == 2);
  CHECK(flat(collect(dropping)) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  DataLoader exact(numbered(8), 4, false, true);
  CHECK(collect(exact).size() == 2);
  DataLoader too_big(numbered(3), 4, false, true);
  CHECK(collect(too_big).empty());
  CHECK_THROWS_AS(DataLoader(numbered(3), 0), ValueError);
}

TEST_CASE("DataLoader shuffling: reproducible by seed, new each epoch, every sample once") {
  const int64_t n = 37;
  DataLoader a(numbered(n), 5, /*shuffle=*/true, false, /*seed=*/42);
  DataLoader b(numbered(n), 5, true, false, 42);
  DataLoader c(numbered(n), 5, true, false, 43);
  std::vector<int64_t> identity(n);
  std::iota(identity.begin(), identity.end(), 0);
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 3; ++e) {
    CHECK(a.epoch() == static_cast<uint64_t>(e));
    auto ea = flat(collect(a));
    CHECK(ea == flat(collect(b)));
    CHECK(ea != flat(collect(c)));
    CHECK(ea != identity);
    CHECK(ea == a.epoch_order(e));
    auto sorted = ea;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == identity);
    epochs.push_back(ea);
  }
  CHECK(epochs[0] != epochs[1]);
  CHECK(epochs[1] != epochs[2]);
  // set_epoch replays an epoch; the order is a function of (seed, epoch) alone.
  a.set_epoch(1);
  CHECK(flat(collect(a)) == epochs[1]);
  CHECK(shuffled_indices(n, 42, 2) == epochs[2]);
  // drop_last with shuffling drops the tail of the permutation, not always the same samples.
  DataLoader d(numbered(n), 5, true, true, 42);
  auto kept = flat(collect(d));
  CHECK(kept.size() == 35);
  CHECK(std::vector<int64_t>(epochs[0].begin(), epochs[0].begin() + 35) == kept);
}

TEST_CASE("DataLoader prefetch thread yields the same batches as the caller's thread") {
  for (bool drop_last : {false, true}) {
    DataLoader plain(numbered(23), 4, true, drop_last, 7, /*prefetch=*/false);
    DataLoader ahead(numbered(23), 4, true, drop_last, 7, /*prefetch=*/true);
    for (int e = 0; e < 3; ++e) CHECK(collect(plain) == collect(ahead));
  }
  // Leaving an epoch early stops the worker; so does dropping the loader first.
  DataLoader ahead(numbered(100), 3, true, false, 1, true);
  int seen = 0;
  for (const Batch& b : ahead) {
    CHECK(b.labels.numel() == 3);
    if (++seen == 2) break;
  }
  std::optional<DataLoader::Iterator> it;
  {
    DataLoader temp(numbered(50), 2, false, false, 0, true);
    it = temp.begin();
  }
  CHECK((*it)->labels.to_vector<int64_t>() == std::vector<int64_t>{0, 1});
  ++*it;
  CHECK((*it)->labels.to_vector<int64_t>() == std::vector<int64_t>{2, 3});
  it.reset();
}

TEST_CASE("DataLoader rethrows a dataset failure on the caller's thread") {
  for (bool prefetch : {false, true}) {
    INFO("prefetch ", prefetch);
    DataLoader loader(std::make_shared<Failing>(9), 4, false, false, 0, prefetch);
    std::vector<int64_t> got;
    check_throws_with<ValueError>(
        [&] {
          for (const Batch& b : loader) {
            auto l = b.labels.to_vector<int64_t>();
            got.insert(got.end(), l.begin(), l.end());
          }
        },
        {"example 9 is corrupt"});
    CHECK(got == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});  // the batches before it
    // The next epoch starts afresh (and fails the same way).
    CHECK_THROWS_AS(
        [&] {
          for (const Batch& b : loader) (void)b;
        }(),
        ValueError);
  }
}

TEST_CASE("Dataset::get_batch stacks get(i) and checks the examples agree") {
  DataLoader loader(std::make_shared<Failing>(-1), 8, true, false, 5, true);
  std::vector<int64_t> all;
  for (const Batch& b : loader) {
    auto labels = b.labels.to_vector<int64_t>();
    auto x = b.inputs.to_vector<float>();
    REQUIRE(b.inputs.shape() == Shape{static_cast<int64_t>(labels.size()), 2});
    for (size_t i = 0; i < labels.size(); ++i) {
      CHECK(x[2 * i] == labels[i]);
      CHECK(x[2 * i + 1] == labels[i]);
    }
    all.insert(all.end(), labels.begin(), labels.end());
  }
  std::sort(all.begin(), all.end());
  CHECK(all.size() == 20);
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());

  struct Ragged : Dataset {
    int64_t size() const override { return 2; }
    Example get(int64_t i) const override { return {zeros({i + 1}), i}; }
  };
  check_throws_with<ShapeError>([] { Ragged().get_batch({0, 1}); }, {"[2]", "[1]"});
}
