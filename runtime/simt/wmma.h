// nvcuda::wmma for kernels under the SIMT emulator: m16n16k16 tiles, __half or __nv_bfloat16
// inputs, float accumulators, row- or column-major memory.
//
// Fragment layout: an A or B fragment holds the whole 16x16 tile in every lane (row-major logical
// order, whatever the memory layout); an accumulator lane holds the 8 elements lane + 32*e
// (e = 0..7) of the row-major tile. Element-wise loops over `x[0..num_elements)` therefore mean
// the same as on a GPU; code that assumes the GPU's lane-to-element mapping does not.
// The *_sync functions are warp collectives: every lane must call them with the same pointer
// and ldm, or the launch ends with a report.
#pragma once

#include <type_traits>

#include "runtime/error.h"
#include "runtime/simt/builtins.h"
#include "runtime/simt/half_types.h"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
class fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulator provides m16n16k16 only");
  static_assert(!std::is_same_v<Use, accumulator> || std::is_same_v<T, float>,
                "the emulator provides float accumulators only");
  static_assert(std::is_same_v<Use, accumulator> || std::is_same_v<T, __half> ||
                    std::is_same_v<T, __nv_bfloat16>,
                "A and B fragments hold __half or __nv_bfloat16");

 public:
  static constexpr bool kWholeTile = !std::is_same_v<Use, accumulator>;
  static constexpr int num_elements = kWholeTile ? 256 : 256 / 32;
  using element_type = T;
  T x[num_elements];
};

namespace detail {

inline int lane_id() {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  return static_cast<int>(t % 32u);
}

// Every lane must pass lane 0's pointer and ldm (a warp collective, so all lanes must be here).
inline void check_uniform(const char* fn, const void* p, unsigned ldm, const char* file, int line) {
  const uint64_t bits = reinterpret_cast<uint64_t>(p);
  const uint64_t p0 = ember::simt::warp_collective(ember::simt::WarpOp::ShflIdx, 0xffffffffu, bits,
                                                   0, 32, file, line);
  const uint64_t l0 = ember::simt::warp_collective(ember::simt::WarpOp::ShflIdx, 0xffffffffu, ldm,
                                                   0, 32, file, line);
  if (p0 != bits || l0 != ldm)
    EMBER_THROW(CudaError, "wmma::", fn, " at ", file, ":", line, ": lane ", lane_id(),
                " passes pointer ", p, " and ldm ", ldm, " but lane 0 passes ",
                reinterpret_cast<const void*>(p0), " and ldm ", l0,
                "; all lanes of a warp must pass the same");
}

template <typename Layout>
constexpr bool is_row_major() {
  return std::is_same_v<Layout, row_major>;
}

}  // namespace detail

template <typename Use, typename T, typename Layout>
void load_matrix_sync_at(fragment<Use, 16, 16, 16, T, Layout>& a, const T* p, unsigned ldm,
                         const char* file, int line) {
  detail::check_uniform("load_matrix_sync", p, ldm, file, line);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c)
      a.x[r * 16 + c] = detail::is_row_major<Layout>() ? p[r * ldm + c] : p[c * ldm + r];
}

inline void load_matrix_sync_at(fragment<accumulator, 16, 16, 16, float>& acc, const float* p,
                                unsigned ldm, layout_t layout, const char* file, int line) {
  detail::check_uniform("load_matrix_sync", p, ldm, file, line);
  const int lane = detail::lane_id();
  for (int e = 0; e < 8; ++e) {
    const int i = lane + 32 * e, r = i / 16, c = i % 16;
    acc.x[e] = layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
  }
}

inline void store_matrix_sync_at(float* p, const fragment<accumulator, 16, 16, 16, float>& acc,
                                 unsigned ldm, layout_t layout, const char* file, int line) {
  detail::check_uniform("store_matrix_sync", p, ldm, file, line);
  const int lane = detail::lane_id();
  for (int e = 0; e < 8; ++e) {
    const int i = lane + 32 * e, r = i / 16, c = i % 16;
    (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = acc.x[e];
  }
}

template <typename Use, int M, int N, int K, typename T, typename Layout, typename V>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const V& v) {
  for (int i = 0; i < f.num_elements; ++i) f.x[i] = T(v);
}

template <typename T, typename LA, typename LB>
void mma_sync_at(fragment<accumulator, 16, 16, 16, float>& d,
                 const fragment<matrix_a, 16, 16, 16, T, LA>& a,
                 const fragment<matrix_b, 16, 16, 16, T, LB>& b,
                 const fragment<accumulator, 16, 16, 16, float>& c, const char* file, int line) {
  ember::simt::warp_collective(ember::simt::WarpOp::Sync, 0xffffffffu, 0, 0, 32, file, line);
  const int lane = detail::lane_id();
  float out[8];
  for (int e = 0; e < 8; ++e) {
    const int i = lane + 32 * e, r = i / 16, col = i % 16;
    float s = c.x[e];
    for (int k = 0; k < 16; ++k) s += float(a.x[r * 16 + k]) * float(b.x[k * 16 + col]);
    out[e] = s;
  }
  for (int e = 0; e < 8; ++e) d.x[e] = out[e];
}

}  // namespace nvcuda::wmma

// Pass the call site, so reports name the line.
#define load_matrix_sync(...) load_matrix_sync_at(__VA_ARGS__, __FILE__, __LINE__)
#define store_matrix_sync(...) store_matrix_sync_at(__VA_ARGS__, __FILE__, __LINE__)
#define mma_sync(...) mma_sync_at(__VA_ARGS__, __FILE__, __LINE__)
