// Sorting and scans (kernels/sort_shape.h).
//
// Sort: a merge sort on (key, position) pairs, which are all distinct, so the order is total and
// the result stable and the same on every device. Step 1 sorts tiles of up to 1024 pairs per block
// with a bitonic network in shared memory; step 2 merges pairs of sorted runs, doubling the run
// length each pass: every element finds its place in the merged run as its rank in its own run
// plus its rank in the other one (a binary search), so each pass is one embarrassingly parallel
// kernel. Passes ping-pong between two buffers of the workspace; the last one writes the outputs.
//
// Scan: one thread per column when the scanned dim is strided (columns read side by side, so the
// loads coalesce), one block per row when it is the innermost: the block scans chunks of
// blockDim.x elements (Hillis-Steele in shared memory) and carries the running total between them.
// Floating values accumulate in double, integers in int64.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"
#include "kernels/scan_math.h"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

constexpr int kTile = 1024;  // pairs sorted per block in step 1
constexpr int kSortThreads = 256;
// Step 1's shared tile (Note [Tiles in dynamic shared memory]).
template <typename C>
struct SortTile {
  int64_t pos[kTile];
  C key[kTile];
};
// Positions of the padding past a row's end in a tile: after every real pair.
constexpr int64_t kPad = std::numeric_limits<int64_t>::max();

// Whether pair (a, ia) sorts before (b, ib): NaN above every number, then the key order, then the
// position, so that no two pairs are equal.
template <typename C>
__device__ __forceinline__ bool before(C a, int64_t ia, C b, int64_t ib, bool descending) {
  if (ia == kPad || ib == kPad) return ib == kPad && ia != kPad;
  const bool an = a != a, bn = b != b;  // NaN (never true for integers)
  if (an || bn) {
    if (an && bn) return ia < ib;
    return descending ? an : bn;
  }
  if (a == b) return ia < ib;
  return descending ? a > b : a < b;
}

// Step 1: block b sorts tile (b % tiles) of row (b / tiles).
template <typename T>
__global__ void sort_tiles_kernel(SortShape s, int tile, int64_t tiles, const T* __restrict__ keys,
                                  T* __restrict__ out_keys, int64_t* __restrict__ out_pos) {
  using C = compute_t<T>;
  EMBER_DYNAMIC_SHARED(SortTile<C>, shared);
  int64_t* pos = shared->pos;
  C* key = shared->key;
  for (int64_t b = blockIdx.x; b < s.rows * tiles; b += gridDim.x) {
    const int64_t row = b / tiles, first = (b % tiles) * tile;
    const T* in = keys + row * s.n;
    for (int t = threadIdx.x; t < tile; t += blockDim.x) {
      const int64_t p = first + t;
      key[t] = p < s.n ? static_cast<C>(in[p]) : C(0);
      pos[t] = p < s.n ? p : kPad;
    }
    __syncthreads();
    for (int k = 2; k <= tile; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        for (int t = threadIdx.x; t < tile; t += blockDim.x) {
          const int u = t ^ j;
          if (u <= t) continue;
          const bool ascending_pair = (t & k) == 0;
          const bool swap = before(key[u], pos[u], key[t], pos[t], s.descending);
          if (swap == ascending_pair) {
            const C kt = key[t];
            key[t] = key[u];
            key[u] = kt;
            const int64_t pt = pos[t];
            pos[t] = pos[u];
            pos[u] = pt;
          }
        }
        __syncthreads();
      }
    }
    for (int t = threadIdx.x; t < tile; t += blockDim.x) {
      const int64_t p = first + t;
      if (p >= s.n) continue;
      if (out_keys) out_keys[row * s.n + p] = in[pos[t]];
      out_pos[row * s.n + p] = pos[t];
    }
    __syncthreads();
  }
}

// The number of pairs of the sorted run [lo, hi) that sort before (k, p).
template <typename T>
__device__ __forceinline__ int64_t rank_in(const T* keys, const int64_t* pos, int64_t lo,
                                           int64_t hi, compute_t<T> k, int64_t p,
                                           bool descending) {
  int64_t a = lo, b = hi;
  while (a < b) {
    const int64_t m = a + (b - a) / 2;
    if (before(static_cast<compute_t<T>>(keys[m]), pos[m], k, p, descending))
      a = m + 1;
    else
      b = m;
  }
  return a - lo;
}

// Step 2: one pass merging runs of `width` into runs of 2 * width, one thread per element.
template <typename T>
__global__ void merge_pass_kernel(SortShape s, int64_t width, const T* __restrict__ keys,
                                  const int64_t* __restrict__ pos, T* __restrict__ out_keys,
                                  int64_t* __restrict__ out_pos) {
  const int64_t total = s.rows * s.n;
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    const int64_t row = e / s.n, i = e % s.n, base = row * s.n;
    const int64_t start = i / (2 * width) * (2 * width);
    const int64_t mid = start + width < s.n ? start + width : s.n;
    const int64_t end = start + 2 * width < s.n ? start + 2 * width : s.n;
    const compute_t<T> k = static_cast<compute_t<T>>(keys[base + i]);
    const int64_t p = pos[base + i];
    const int64_t place =
        i < mid ? i + rank_in(keys + base, pos + base, mid, end, k, p, s.descending)
                : start + (i - mid) + rank_in(keys + base, pos + base, start, mid, k, p,
                                              s.descending);
    if (out_keys) out_keys[base + place] = keys[base + i];
    out_pos[base + place] = p;
  }
}

int tile_for(int64_t n) {
  int tile = 2;
  while (tile < kTile && tile < n) tile *= 2;
  return tile;
}

int merge_passes(int64_t n) {
  int passes = 0;
  for (int64_t w = tile_for(n); w < n; w *= 2) ++passes;
  return passes;
}

size_t align_up(size_t b) {
  return (b + 255) / 256 * 256;
}

template <typename T>
void sort_typed(const SortShape& s, const void* keys, void* sorted, int64_t* indices,
                void* workspace, gpu::Stream stream) {
  const int tile = tile_for(s.n);
  const int64_t tiles = (s.n + tile - 1) / tile;
  const int passes = merge_passes(s.n);
  const size_t count = size_t(s.rows * s.n);
  // Two buffers of keys and positions; the pass that writes the outputs reads the other one.
  T* key_buf[2] = {nullptr, nullptr};
  int64_t* pos_buf[2] = {nullptr, nullptr};
  if (passes > 0) {
    char* w = static_cast<char*>(workspace);
    const size_t kb = align_up(count * sizeof(T)), pb = align_up(count * sizeof(int64_t));
    key_buf[0] = reinterpret_cast<T*>(w);
    pos_buf[0] = reinterpret_cast<int64_t*>(w + kb);
    key_buf[1] = reinterpret_cast<T*>(w + kb + pb);
    pos_buf[1] = reinterpret_cast<int64_t*>(w + 2 * kb + pb);
  }
  const unsigned blocks = static_cast<unsigned>(s.rows * tiles < kMaxBlocks ? s.rows * tiles
                                                                            : kMaxBlocks);
  // Step 1 writes buffer 0, or the outputs when no merge follows.
  EMBER_LAUNCH(sort_tiles_kernel<T>, dim3(blocks), dim3(kSortThreads),
               sizeof(SortTile<compute_t<T>>), stream, s, tile, tiles, static_cast<const T*>(keys),
               passes ? key_buf[0] : static_cast<T*>(sorted), passes ? pos_buf[0] : indices);
  int from = 0;
  int64_t width = tile;
  for (int pass = 0; pass < passes; ++pass, width *= 2) {
    const bool last = pass + 1 == passes;
    EMBER_LAUNCH(merge_pass_kernel<T>, dim3(blocks_for(int64_t(count))), dim3(kBlock), 0, stream, s,
                 width, key_buf[from], pos_buf[from],
                 last ? static_cast<T*>(sorted) : key_buf[1 - from],
                 last ? indices : pos_buf[1 - from]);
    from = 1 - from;
  }
}

// Scans. The accumulator of T: double for floating T, int64 otherwise; the output type: T for
// floating T, int64 otherwise.
template <typename T>
using acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, int64_t>;
template <typename T>
using scan_out_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, T, int64_t>;

template <typename A>
__device__ __forceinline__ A combine(ScanOp op, A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    return op == ScanOp::sum ? a + b : a * b;
  } else {  // wrap-around, computed unsigned
    const uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);
    return static_cast<A>(op == ScanOp::sum ? x + y : x * y);
  }
}

template <typename T>
__device__ __forceinline__ acc_t<T> load_acc(const T* p) {
  return static_cast<acc_t<T>>(static_cast<compute_t<T>>(*p));
}

template <typename T>
__global__ void scan_columns_kernel(ScanOp op, ScanShape s, const T* __restrict__ in,
                                    scan_out_t<T>* __restrict__ out) {
  using A = acc_t<T>;
  const int64_t lines = s.outer * s.inner;
  for (int64_t l = global_thread(); l < lines; l += grid_threads()) {
    const int64_t base = (l / s.inner) * s.n * s.inner + l % s.inner;
    A acc = op == ScanOp::sum ? A(0) : A(1);
    for (int64_t step = 0; step < s.n; ++step) {
      const int64_t i = s.reverse ? s.n - 1 - step : step;
      acc = combine(op, acc, load_acc(in + base + i * s.inner));
      out[base + i * s.inner] = narrow<scan_out_t<T>>(acc);
    }
  }
}

template <typename T>
__global__ void scan_rows_kernel(ScanOp op, ScanShape s, const T* __restrict__ in,
                                 scan_out_t<T>* __restrict__ out) {
  using A = acc_t<T>;
  __shared__ A part[kBlock];
  const A identity = op == ScanOp::sum ? A(0) : A(1);
  for (int64_t row = blockIdx.x; row < s.outer; row += gridDim.x) {
    A carry = identity;
    for (int64_t first = 0; first < s.n; first += blockDim.x) {
      const int64_t step = first + threadIdx.x;
      const int64_t i = s.reverse ? s.n - 1 - step : step;  // position `step` of the scan order
      part[threadIdx.x] = step < s.n ? load_acc(in + row * s.n + i) : identity;
      __syncthreads();
      for (unsigned step = 1; step < blockDim.x; step *= 2) {
        const A v = threadIdx.x >= step ? part[threadIdx.x - step] : identity;
        __syncthreads();
        part[threadIdx.x] = combine(op, v, part[threadIdx.x]);
        __syncthreads();
      }
      if (step < s.n)
        out[row * s.n + i] = narrow<scan_out_t<T>>(combine(op, carry, part[threadIdx.x]));
      carry = combine(op, carry, part[blockDim.x - 1]);
      __syncthreads();
    }
  }
}

template <typename T>
void scan_typed(ScanOp op, const ScanShape& s, const void* in, void* out, gpu::Stream stream) {
  const T* x = static_cast<const T*>(in);
  auto* y = static_cast<scan_out_t<T>*>(out);
  if (s.inner == 1 && s.n > 32) {
    int threads = 32;
    while (threads < kBlock && threads < s.n) threads *= 2;
    const unsigned grid = static_cast<unsigned>(s.outer < kMaxBlocks ? s.outer : kMaxBlocks);
    EMBER_LAUNCH(scan_rows_kernel<T>, dim3(grid), dim3(threads), 0, stream, op, s, x, y);
  } else {
    EMBER_LAUNCH(scan_columns_kernel<T>, dim3(blocks_for(s.outer * s.inner)), dim3(kBlock), 0,
                 stream, op, s, x, y);
  }
}

// One thread per column (kernels/scan_math.h): ops/ widens half types to float32 first.
template <typename T>
__global__ void cumprod_backward_kernel(ScanShape s, const T* __restrict__ x,
                                        const T* __restrict__ g, T* __restrict__ dx) {
  const int64_t lines = s.outer * s.inner;
  for (int64_t l = global_thread(); l < lines; l += grid_threads()) {
    const int64_t base = (l / s.inner) * s.n * s.inner + l % s.inner;
    cumprod_backward_line(s.n, s.inner, x + base, g + base, dx + base);
  }
}

}  // namespace

size_t sort_workspace_bytes(DType t, const SortShape& s) {
  if (merge_passes(s.n) == 0) return 0;
  const size_t count = size_t(s.rows * s.n);
  return 2 * (align_up(count * itemsize(t)) + align_up(count * sizeof(int64_t)));
}

void sort_rows(DType t, const SortShape& s, const void* keys, void* sorted, int64_t* indices,
               void* workspace, size_t workspace_bytes, gpu::Stream stream) {
  if (s.rows == 0 || s.n == 0) return;
  if (workspace_bytes < sort_workspace_bytes(t, s))
    throw std::invalid_argument("sort_rows: workspace too small");
  dispatch_compute(t, "sort_rows", [&](auto z) {
    sort_typed<decltype(z)>(s, keys, sorted, indices, workspace, stream);
  });
}

void scan(ScanOp op, DType t, const ScanShape& s, const void* in, void* out, gpu::Stream stream) {
  if (s.outer == 0 || s.n == 0 || s.inner == 0) return;
  dispatch_compute(
      t, "scan", [&](auto z) { scan_typed<decltype(z)>(op, s, in, out, stream); },
      /*bytes_too=*/true);
}

void cumprod_backward(DType t, const ScanShape& s, const void* x, const void* g, void* dx,
                      gpu::Stream stream) {
  if (s.outer == 0 || s.n == 0 || s.inner == 0) return;
  dispatch_float(t, "cumprod_backward", [&](auto z) {
    using T = decltype(z);
    EMBER_LAUNCH(cumprod_backward_kernel<T>, dim3(blocks_for(s.outer * s.inner)), dim3(kBlock), 0,
                 stream, s, static_cast<const T*>(x), static_cast<const T*>(g),
                 static_cast<T*>(dx));
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS
