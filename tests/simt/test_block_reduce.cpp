// kernels/cuda/block_reduce.cuh on the emulator: structs of 8-byte and 4-byte words shuffled
// bit for bit, and the combine order of Note [block_reduce order] reproduced exactly by a host
// model of the same tree, with a combine that is neither commutative nor associative.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/compat.h"  // first: it defines what the kernel header needs

#include "kernels/cuda/block_reduce.cuh"
#include "simt/simt_test_util.h"

namespace ember::simt_test {
namespace {

using kernels::emu::detail::block_reduce;

// 16 bytes, moved as two 8-byte words.
struct Wide {
  double d;
  float f;
  uint32_t n;
};
// 12 bytes, moved as three 4-byte words.
struct Narrow {
  float a;
  uint32_t n;
  float b;
};
// Subtraction and a polynomial hash: any change of order or of operand side changes the bits
// (and no multiply-add that a compiler could contract differently in the two copies).
struct WideOp {
  Wide operator()(Wide a, Wide b) const { return {a.d - b.d, a.f - b.f, a.n * 31u + b.n}; }
};
struct NarrowOp {
  Narrow operator()(Narrow a, Narrow b) const { return {a.a - b.a, a.n * 17u + b.n, a.b - b.b}; }
};

template <typename V, typename Op>
__global__ void block_reduce_kernel(const V* in, V identity, V* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  out[i] = block_reduce(in[i], Op(), identity);
}

// The host model of the note: the warp tree with lane l taking op(own, lane l + off's) (its own
// value when l + off is past 31), then the first warp over the partials padded with identity.
template <typename V, typename Op>
V host_warp(std::vector<V> v, Op op) {
  for (int off = 16; off > 0; off /= 2) {
    const std::vector<V> was = v;
    for (int l = 0; l < 32; ++l) v[l] = op(was[l], was[l + off < 32 ? l + off : l]);
  }
  return v[0];
}
template <typename V, typename Op>
V host_block(const V* in, int threads, V identity, Op op) {
  const int warps = threads / 32;
  std::vector<V> first(32, identity);
  for (int w = 0; w < warps; ++w)
    first[w] = host_warp(std::vector<V>(in + 32 * w, in + 32 * w + 32), op);
  return host_warp(first, op);
}

template <typename V>
bool same_bits(const V& a, const V& b) {
  return std::memcmp(&a, &b, sizeof(V)) == 0;
}

template <typename V, typename Op>
void check_block_reduce(const std::vector<V>& in, V identity) {
  const int blocks = 3;
  for (int threads : {32, 96, 256, 1024}) {
    CAPTURE(threads);
    const std::vector<V> x(in.begin(), in.begin() + blocks * threads);
    for (const Config& c : all_configs()) {
      CAPTURE(c.name());
      ScopedOptions opts(c);
      std::vector<V> out(x.size());
      auto* k = &block_reduce_kernel<V, Op>;
      EMBER_LAUNCH(k, dim3(blocks), dim3(threads), 0, nullptr, x.data(), identity, out.data());
      for (int b = 0; b < blocks; ++b) {
        const V want = host_block(x.data() + b * threads, threads, identity, Op());
        for (int t = 0; t < threads; ++t) REQUIRE(same_bits(out[b * threads + t], want));
      }
    }
  }
}

}  // namespace

TEST_CASE("block_reduce moves structs bit for bit and combines in the documented order") {
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  const size_t n = 3 * 1024;
  std::vector<Wide> wide(n);
  std::vector<Narrow> narrow(n);
  for (size_t i = 0; i < n; ++i) {
    wide[i] = {real(rng), static_cast<float>(real(rng)), static_cast<uint32_t>(rng())};
    narrow[i] = {static_cast<float>(real(rng)), static_cast<uint32_t>(rng()),
                 static_cast<float>(real(rng))};
  }
  static_assert(sizeof(Wide) == 16 && sizeof(Narrow) == 12);
  SUBCASE("8-byte words") {
    check_block_reduce<Wide, WideOp>(wide, Wide{0.0, 0.0f, 7u});
  }
  SUBCASE("4-byte words") {
    check_block_reduce<Narrow, NarrowOp>(narrow, Narrow{0.0f, 5u, 0.0f});
  }
}

}  // namespace ember::simt_test
