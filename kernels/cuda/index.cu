// Indexing kernels (kernels/index_shape.h). A gather is one grid-stride loop: each thread reads
// its position's index values, checks them and copies one element. A scatter must combine the
// values that land on one element in position order on every device (Note [Scatter order]), so
// it runs in three steps: each position's destination offset, a stable sort of the offsets
// (kernels/cuda/sort.cu), then one thread per run of equal offsets that folds the run in order.
// No atomics touch the data, so the result never depends on thread timing.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

constexpr int kOps = 2 + kMaxDims;
// The key of a position whose index is out of range: sorts after every real offset.
constexpr int64_t kBadOffset = std::numeric_limits<int64_t>::max();

// The element offset in the indexed tensor (operand 1) that position i addresses, and the offset
// of i in operand 0; -1 when an index value is out of range.
__device__ __forceinline__ int64_t indexed_offset(const IndexIteration& it, const IndexedDims& dims,
                                                  const IndexPointers& idx, int64_t i,
                                                  int64_t& data_offset) {
  int64_t off[kOps];
  strided_offsets(it, i, off);
  data_offset = off[0];
  int64_t at = off[1];
  for (int k = 0; k < dims.count; ++k) {
    int64_t v = idx.p[k][off[2 + k]];
    if (v < 0) v += dims.sizes[k];
    if (v < 0 || v >= dims.sizes[k]) return -1;
    at += v * dims.strides[k];
  }
  return at;
}

// The smallest faulting position wins: positions are stored complemented, so the largest word.
__device__ __forceinline__ void lower_fault(uint64_t* fault, int64_t i) {
  atomicMax(reinterpret_cast<unsigned long long*>(fault),
            static_cast<unsigned long long>(~static_cast<uint64_t>(i)));
}

template <typename E>
__global__ void index_gather_kernel(IndexIteration it, IndexedDims dims, IndexPointers idx,
                                    int64_t n, E* __restrict__ out, const E* __restrict__ src,
                                    uint64_t* fault) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    int64_t o;
    const int64_t at = indexed_offset(it, dims, idx, i, o);
    if (at < 0)
      lower_fault(fault, i);
    else
      out[o] = src[at];
  }
}

__global__ void index_offsets_kernel(IndexIteration it, IndexedDims dims, IndexPointers idx,
                                     int64_t n, int64_t* __restrict__ keys, uint64_t* fault) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    int64_t unused;
    const int64_t at = indexed_offset(it, dims, idx, i, unused);
    if (at < 0) lower_fault(fault, i);
    keys[i] = at < 0 ? kBadOffset : at;
  }
}

// The offset in operand 0 (the scatter's source) of position i.
__device__ __forceinline__ int64_t source_offset(const IndexIteration& it, int64_t i) {
  int64_t off = 0;
  for (int d = it.ndim - 1; d >= 0; --d) {
    off += (i % it.sizes[d]) * it.strides[0][d];
    i /= it.sizes[d];
  }
  return off;
}

// One thread per run of equal sorted keys: the run's last value (assign) or the destination plus
// the run's values in position order (add), in the compute type, stored once.
template <typename T>
__global__ void index_scatter_runs_kernel(ScatterMode mode, IndexIteration it, int64_t n,
                                          const int64_t* __restrict__ keys,
                                          const int64_t* __restrict__ order, T* __restrict__ dst,
                                          const T* __restrict__ src) {
  using C = compute_t<T>;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const int64_t key = keys[i];
    if (key == kBadOffset || (i > 0 && keys[i - 1] == key)) continue;
    int64_t end = i + 1;
    while (end < n && keys[end] == key) ++end;
    if (mode == ScatterMode::assign) {
      dst[key] = src[source_offset(it, order[end - 1])];
      continue;
    }
    C acc = static_cast<C>(dst[key]);
    for (int64_t j = i; j < end; ++j) acc = acc + static_cast<C>(src[source_offset(it, order[j])]);
    dst[key] = narrow<T>(acc);
  }
}

template <typename E>
void launch_gather(const IndexIteration& it, const IndexedDims& dims, const IndexPointers& idx,
                   int64_t n, void* out, const void* src, uint64_t* fault, gpu::Stream stream) {
  EMBER_LAUNCH(index_gather_kernel<E>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, it, dims, idx,
               n, static_cast<E*>(out), static_cast<const E*>(src), fault);
}

// Scratch memory of a scatter over n positions: sorted keys, their positions, the unsorted keys
// and the sort's own workspace, each 256-byte aligned.
constexpr size_t align_up(size_t b) {
  return (b + 255) / 256 * 256;
}
size_t scatter_parts(int64_t n, size_t* sort_bytes) {
  const SortShape s{1, n, false};
  *sort_bytes = sort_workspace_bytes(DType::i64, s);
  return 3 * align_up(size_t(n) * sizeof(int64_t)) + align_up(*sort_bytes);
}

template <typename T>
void launch_runs(ScatterMode mode, const IndexIteration& it, int64_t n, const int64_t* keys,
                 const int64_t* order, void* dst, const void* src, gpu::Stream stream) {
  EMBER_LAUNCH(index_scatter_runs_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, mode,
               it, n, keys, order, static_cast<T*>(dst), static_cast<const T*>(src));
}

__global__ void nonzero_coords_kernel(NonzeroShape s, int64_t n, const int64_t* __restrict__ prefix,
                                      int64_t* __restrict__ out) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const int64_t before = i == 0 ? 0 : prefix[i - 1];
    if (prefix[i] == before) continue;
    int64_t* row = out + before * s.ndim;
    int64_t r = i;
    for (int d = s.ndim - 1; d >= 0; --d) {
      row[d] = r % s.sizes[d];
      r /= s.sizes[d];
    }
  }
}

}  // namespace

void index_gather(int elem_bytes, const IndexIteration& it, const IndexedDims& dims,
                  const IndexPointers& idx, void* out, const void* src, uint64_t* fault,
                  gpu::Stream stream) {
  const int64_t n = it.numel();
  if (n == 0) return;
  switch (elem_bytes) {
    case 1:
      return launch_gather<uint8_t>(it, dims, idx, n, out, src, fault, stream);
    case 2:
      return launch_gather<uint16_t>(it, dims, idx, n, out, src, fault, stream);
    case 4:
      return launch_gather<uint32_t>(it, dims, idx, n, out, src, fault, stream);
    case 8:
      return launch_gather<uint64_t>(it, dims, idx, n, out, src, fault, stream);
  }
  throw std::invalid_argument("index_gather: elements of " + std::to_string(elem_bytes) +
                              " bytes");
}

size_t index_scatter_workspace_bytes(const IndexIteration& it) {
  size_t sort_bytes;
  return scatter_parts(it.numel(), &sort_bytes);
}

void index_scatter(ScatterMode mode, DType t, const IndexIteration& it, const IndexedDims& dims,
                   const IndexPointers& idx, void* dst, const void* src, uint64_t* fault,
                   void* workspace, size_t workspace_bytes, gpu::Stream stream) {
  const int64_t n = it.numel();
  if (n == 0) return;
  size_t sort_bytes;
  if (workspace_bytes < scatter_parts(n, &sort_bytes))
    throw std::invalid_argument("index_scatter: workspace too small");
  char* w = static_cast<char*>(workspace);
  const size_t part = align_up(size_t(n) * sizeof(int64_t));
  int64_t* unsorted = reinterpret_cast<int64_t*>(w);
  int64_t* keys = reinterpret_cast<int64_t*>(w + part);
  int64_t* order = reinterpret_cast<int64_t*>(w + 2 * part);
  void* sort_ws = w + 3 * part;
  EMBER_LAUNCH(index_offsets_kernel, dim3(blocks_for(n)), dim3(kBlock), 0, stream, it, dims, idx,
               n, unsorted, fault);
  sort_rows(DType::i64, SortShape{1, n, false}, unsorted, keys, order, sort_ws, sort_bytes, stream);
  // An assignment only moves elements, so it takes every dtype; a sum the compute dtypes.
  dispatch_compute(
      t, "index_scatter",
      [&](auto z) { launch_runs<decltype(z)>(mode, it, n, keys, order, dst, src, stream); },
      /*bytes_too=*/mode == ScatterMode::assign);
}

void nonzero_coords(const NonzeroShape& s, int64_t n, const int64_t* prefix, int64_t* out,
                    gpu::Stream stream) {
  if (n == 0) return;
  EMBER_LAUNCH(nonzero_coords_kernel, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s, n, prefix,
               out);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS
