// Iterating over N strided operands of one shape, the way a CPU kernel walks tensors.
//
// `StridedLoop<N>` merges dimensions that are contiguous in every operand (so a contiguous
// tensor becomes one long run), then calls `inner(ptrs, strides, n)` once per innermost run:
// ptrs[i] points at operand i's first element of the run and strides[i] is its byte stride.
// Kernels write the inner loop themselves so the compiler can vectorise the stride-1 case.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace ember {

template <int N>
struct StridedLoop {
  // shape: sizes; strides[i][d]: operand i's stride along d, in bytes.
  StridedLoop(const std::vector<int64_t>& shape, const std::array<std::vector<int64_t>, N>& strides) {
    // Drop size-1 dims, then merge dim d into d+1 (inner) when contiguous for all operands.
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;
      sizes_.push_back(shape[d]);
      for (int i = 0; i < N; ++i) strides_[i].push_back(strides[i][d]);
    }
    for (int64_t d = static_cast<int64_t>(sizes_.size()) - 2; d >= 0; --d) {
      bool merge = true;
      for (int i = 0; i < N; ++i)
        merge &= strides_[i][d] == strides_[i][d + 1] * sizes_[d + 1];
      if (!merge) continue;
      sizes_[d] *= sizes_[d + 1];
      sizes_.erase(sizes_.begin() + d + 1);
      for (int i = 0; i < N; ++i) {
        strides_[i][d] = strides_[i][d + 1];
        strides_[i].erase(strides_[i].begin() + d + 1);
      }
    }
    for (int64_t s : shape) empty_ |= (s == 0);
  }

  // Number of inner runs and the length of each.
  int64_t outer_count() const {
    int64_t n = 1;
    for (size_t d = 0; d + 1 < sizes_.size(); ++d) n *= sizes_[d];
    return empty_ ? 0 : n;
  }
  int64_t inner_size() const { return sizes_.empty() ? 1 : sizes_.back(); }
  std::array<int64_t, N> inner_strides() const {
    std::array<int64_t, N> s{};
    for (int i = 0; i < N; ++i) s[i] = sizes_.empty() ? 0 : strides_[i].back();
    return s;
  }

  // Byte offsets of outer run `k` for each operand.
  std::array<int64_t, N> outer_offsets(int64_t k) const {
    std::array<int64_t, N> off{};
    for (int64_t d = static_cast<int64_t>(sizes_.size()) - 2; d >= 0; --d) {
      int64_t idx = k % sizes_[d];
      k /= sizes_[d];
      for (int i = 0; i < N; ++i) off[i] += idx * strides_[i][d];
    }
    return off;
  }

  // Serial walk: inner(std::array<char*, N>, std::array<int64_t, N> byte_strides, int64_t n).
  template <typename F>
  void run(const std::array<char*, N>& base, F&& inner) const {
    const int64_t outer = outer_count();
    const auto st = inner_strides();
    const int64_t n = inner_size();
    for (int64_t k = 0; k < outer; ++k) {
      auto off = outer_offsets(k);
      std::array<char*, N> p;
      for (int i = 0; i < N; ++i) p[i] = base[i] + off[i];
      inner(p, st, n);
    }
  }

  std::vector<int64_t> sizes_;
  std::array<std::vector<int64_t>, N> strides_;
  bool empty_ = false;
};

}  // namespace ember
