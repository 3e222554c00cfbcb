// DistributedSampler (dist/sampler.h) against PyTorch's rules written out here: the padded or
// cut permutation, rank r taking every W-th index from r.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "dist/sampler.h"
#include "nn/data.h"

using namespace ember;
using namespace ember::dist;

namespace {
// torch.utils.data.distributed.DistributedSampler.__iter__, over a given permutation.
std::vector<int64_t> reference(std::vector<int64_t> order, int w, int r, bool drop_last) {
  const auto n = static_cast<int64_t>(order.size());
  const int64_t num_samples =
      drop_last && n % w != 0 ? (n - w + w - 1) / w : (n + w - 1) / w;  // math.ceil((n - w) / w)
  const int64_t total = num_samples * w;
  if (!drop_last) {
    const int64_t padding = total - n;
    std::vector<int64_t> pad;
    if (padding <= n) {
      pad.assign(order.begin(), order.begin() + padding);
    } else {
      for (int64_t k = 0; k < (padding + n - 1) / n; ++k)
        pad.insert(pad.end(), order.begin(), order.end());
      pad.resize(static_cast<size_t>(padding));
    }
    order.insert(order.end(), pad.begin(), pad.end());
  } else {
    order.resize(static_cast<size_t>(total));
  }
  std::vector<int64_t> out;
  for (int64_t i = r; i < total; i += w) out.push_back(order[static_cast<size_t>(i)]);
  return out;
}
}  // namespace

TEST_CASE("DistributedSampler matches PyTorch's padding, cutting and striding") {
  for (int64_t n : {0, 1, 2, 5, 10, 11, 64, 101})
    for (int w : {1, 2, 3, 4, 7})
      for (bool drop_last : {false, true})
        for (bool shuffle : {false, true}) {
          CAPTURE(n);
          CAPTURE(w);
          CAPTURE(drop_last);
          CAPTURE(shuffle);
          std::vector<int64_t> order(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
          if (shuffle) order = shuffled_indices(n, 42, 3);
          for (int r = 0; r < w; ++r) {
            DistributedSampler s(n, w, r, shuffle, 42, drop_last);
            s.set_epoch(3);
            if (n == 0 && !drop_last) {
              CHECK(s.indices().empty());
              continue;
            }
            const auto mine = s.indices();
            CHECK(mine == reference(order, w, r, drop_last));
            CHECK(static_cast<int64_t>(mine.size()) == s.num_samples());
          }
        }
}

TEST_CASE("DistributedSampler: shares are disjoint and cover the data set; epochs reshuffle") {
  const int64_t n = 103;
  const int w = 4;
  std::multiset<int64_t> all;
  for (int r = 0; r < w; ++r) {
    DistributedSampler s(n, w, r, true, 7);
    for (int64_t i : s.indices()) all.insert(i);
  }
  CHECK(all.size() == 104);  // one padded index
  for (int64_t i = 0; i < n; ++i) CHECK(all.count(i) >= 1);
  DistributedSampler s(n, w, 1, true, 7);
  const auto e0 = s.indices();
  s.set_epoch(1);
  CHECK(s.indices() != e0);
  s.set_epoch(0);
  CHECK(s.indices() == e0);
  DistributedSampler other_seed(n, w, 1, true, 8);
  CHECK(other_seed.indices() != e0);
}

TEST_CASE("DistributedSampler: bad arguments are ValueErrors") {
  CHECK_THROWS_WITH_AS(DistributedSampler(10, 2, 2), doctest::Contains("[0, 1]"), ValueError);
  CHECK_THROWS_AS(DistributedSampler(10, 0, 0), ValueError);
  CHECK_THROWS_AS(DistributedSampler(-1, 2, 0), ValueError);
  // Without a process group: one replica, rank 0.
  DistributedSampler single(5, -1, -1, false);
  CHECK(single.num_replicas() == 1);
  CHECK(single.indices() == std::vector<int64_t>{0, 1, 2, 3, 4});
}
