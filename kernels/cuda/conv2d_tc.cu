// Tensor Core implicit-GEMM convolution (float16/bfloat16, float32 accumulation): the three
// directions of kernels/cuda/conv2d_implicit_gemm.cu's header as GEMMs per group, each computed
// by the mma.sync block tile of kernels/cuda/gemm_tc.cuh with a gather as its operand loader:
//
//   forward          rows (n, p, q), cols k in the group, reduction (c, r, s):
//                    A = x gathered (zero padding), B^T = w's rows (unit stride along (c, r, s):
//                    cp.async when C/G*R*S is a multiple of 8), out y (+ bias), in T.
//   backward-data    rows (n, h, w), cols c in the group, reduction (k, r, s):
//                    A = dy at ((h + ph - r*dh) / sh, ...) for the taps on the stride grid (the
//                    others zeros), B^T[c][(k, r, s)] = w[k, c, r, s]; out dx, in T.
//   backward-filter  rows (c, r, s), cols k in the group, reduction (n, p, q):
//                    A = x gathered, B^T = dy's planes; out dw in float32 (the weight gradient
//                    keeps float32's precision; ops round it to the weight's dtype).
//
// A gathered tile is staged element by element, consecutive threads along the pixels (the
// tile's unit-stride dimension in NCHW); the stages then feed ldmatrix exactly as the GEMM's do
// (the pixel-major tiles through ldmatrix.trans). Every element of an output is one block's
// float32 sum in a fixed order: deterministic, with no split of the reduction. Any channel count
// runs (no padding to multiples of 8: gathers are per element); groups walk blockIdx.z.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/gemm_tc.cuh"
#include "kernels/cuda/tensor_core.cuh"
#include "kernels/kernel_table.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

// The geometry every problem shares, with the group being computed.
struct ConvGeom {
  ConvShape s;
  int64_t cg = 0, kg = 0;  // channels and filters per group (ConvShape's are host functions)
  int64_t group = 0;
  bool w_async = false;  // forward: w's rows copied by cp.async
};

// Zero of T, for taps outside the input.
template <typename T>
__device__ __forceinline__ T zero() {
  return T(0.0f);
}

// Element (pixel, crs) of x's im2col matrix in the group: the input under tap (r, s) of filter
// channel c for output pixel (n, p, q); 0 in the padding.
template <typename T>
__device__ __forceinline__ T x_patch(const ConvGeom& g, const T* x, int64_t pixel, int64_t crs) {
  const ConvShape& s = g.s;
  const int64_t pq = pixel % (s.oh * s.ow), rs = crs % (s.r * s.s);
  const int64_t h = pq / s.ow * s.stride_h - s.pad_h + rs / s.s * s.dil_h;
  const int64_t w = pq % s.ow * s.stride_w - s.pad_w + rs % s.s * s.dil_w;
  if (h < 0 || h >= s.h || w < 0 || w >= s.w) return zero<T>();
  const int64_t n = pixel / (s.oh * s.ow), c = g.group * g.cg + crs / (s.r * s.s);
  return x[((n * s.c + c) * s.h + h) * s.w + w];
}

template <typename T>
struct Forward {
  int64_t m, n, k;
  ConvGeom g;
  const T* x;
  const T* w;
  const T* bias;
  T* y;

  template <typename Tile, bool KMajor>
  __device__ void stage_a(T* dst, int64_t m0, int64_t k0) const {
    tc::stage_gather<Tile, Tile::kBM, KMajor>(dst, m0, k0, [&](int64_t i, int64_t kk) {
      return i < m && kk < k ? x_patch(g, x, i, kk) : zero<T>();
    });
  }
  template <typename Tile, bool KMajor>
  __device__ void stage_b(T* dst, int64_t n0, int64_t k0) const {
    tc::stage_strided<Tile, Tile::kBN, KMajor>(dst, w + g.group * n * k, n, k, k, 1, n0, k0,
                                               g.w_async);
  }
  __device__ void store(int64_t i, int64_t j, float v) const {
    const ConvShape& s = g.s;
    const int64_t kout = g.group * n + j, pq = i % (s.oh * s.ow);
    if (bias) v += float(bias[kout]);
    y[(i / (s.oh * s.ow) * s.k + kout) * s.oh * s.ow + pq] = T(v);
  }
};

template <typename T>
struct BackwardData {
  int64_t m, n, k;
  ConvGeom g;
  const T* dy;
  const T* w;
  T* dx;

  template <typename Tile, bool KMajor>
  __device__ void stage_a(T* dst, int64_t m0, int64_t k0) const {
    const ConvShape& s = g.s;
    tc::stage_gather<Tile, Tile::kBM, KMajor>(dst, m0, k0, [&](int64_t i, int64_t kk) {
      if (i >= m || kk >= k) return zero<T>();
      const int64_t hw = i % (s.h * s.w), kf = kk / (s.r * s.s), rs = kk % (s.r * s.s);
      const int64_t th = hw / s.w + s.pad_h - rs / s.s * s.dil_h;
      const int64_t tw = hw % s.w + s.pad_w - rs % s.s * s.dil_w;
      if (th < 0 || tw < 0 || th % s.stride_h != 0 || tw % s.stride_w != 0) return zero<T>();
      const int64_t p = th / s.stride_h, q = tw / s.stride_w;
      if (p >= s.oh || q >= s.ow) return zero<T>();
      return dy[((i / (s.h * s.w) * s.k + g.group * g.kg + kf) * s.oh + p) * s.ow + q];
    });
  }
  template <typename Tile, bool KMajor>
  __device__ void stage_b(T* dst, int64_t n0, int64_t k0) const {
    const ConvShape& s = g.s;
    tc::stage_gather<Tile, Tile::kBN, KMajor>(dst, n0, k0, [&](int64_t c, int64_t kk) {
      if (c >= n || kk >= k) return zero<T>();
      const int64_t kf = kk / (s.r * s.s), rs = kk % (s.r * s.s);
      return w[((g.group * g.kg + kf) * g.cg + c) * s.r * s.s + rs];
    });
  }
  __device__ void store(int64_t i, int64_t c, float v) const {
    const ConvShape& s = g.s;
    dx[(i / (s.h * s.w) * s.c + g.group * g.cg + c) * s.h * s.w + i % (s.h * s.w)] = T(v);
  }
};

template <typename T>
struct BackwardFilter {
  int64_t m, n, k;
  ConvGeom g;
  const T* dy;
  const T* x;
  float* dw;

  template <typename Tile, bool KMajor>
  __device__ void stage_a(T* dst, int64_t m0, int64_t k0) const {
    tc::stage_gather<Tile, Tile::kBM, KMajor>(dst, m0, k0, [&](int64_t crs, int64_t l) {
      return crs < m && l < k ? x_patch(g, x, l, crs) : zero<T>();
    });
  }
  template <typename Tile, bool KMajor>
  __device__ void stage_b(T* dst, int64_t n0, int64_t k0) const {
    const ConvShape& s = g.s;
    tc::stage_gather<Tile, Tile::kBN, KMajor>(dst, n0, k0, [&](int64_t j, int64_t l) {
      if (j >= n || l >= k) return zero<T>();
      const int64_t npq = s.oh * s.ow;
      return dy[(l / npq * s.k + g.group * n + j) * npq + l % npq];
    });
  }
  __device__ void store(int64_t crs, int64_t j, float v) const {
    dw[(g.group * n + j) * m + crs] = v;
  }
};

// One problem per group (blockIdx.z) and row tile (blockIdx.y), each looping past the grid.
template <typename Tile, bool AK, bool BK, typename T, typename P>
__global__ void __launch_bounds__(Tile::kThreads)
    conv2d_tc_kernel(P pr, int64_t m_tiles, int64_t groups) {
  if constexpr (tc::kHasTensorCores<T>) {
    EMBER_DYNAMIC_SHARED(T, smem);
    for (int64_t grp = blockIdx.z; grp < groups; grp += gridDim.z)
      for (int64_t t = blockIdx.y; t < m_tiles; t += gridDim.y) {
        P q = pr;
        q.g.group = grp;
        tc::mma_block_tile<Tile, AK, BK>(q, smem, t * Tile::kBM, int64_t(blockIdx.x) * Tile::kBN);
      }
  }
}

// The per-group GEMM's rows, columns and reduction depth of direction d.
void gemm_dims(const ConvShape& s, ConvDirection d, int64_t& m, int64_t& n, int64_t& k) {
  const int64_t rs = s.r * s.s;
  if (d == ConvDirection::forward)
    m = s.n * s.oh * s.ow, n = s.kg(), k = s.cg() * rs;
  else if (d == ConvDirection::backward_data)
    m = s.n * s.h * s.w, n = s.cg(), k = s.kg() * rs;
  else
    m = s.cg() * rs, n = s.kg(), k = s.n * s.oh * s.ow;
}

template <typename Tile, bool AK, typename T, typename P>
void launch(const P& pr, int64_t groups, gpu::Stream stream) {
  const size_t bytes = Tile::shared_bytes(AK, true, sizeof(T));
  auto* kernel = conv2d_tc_kernel<Tile, AK, true, T, P>;
  if (bytes > 48 * 1024) EMBER_SET_MAX_DYNAMIC_SHARED(kernel, bytes);
  const int64_t m_tiles = (pr.m + Tile::kBM - 1) / Tile::kBM, limit = max_grid_yz();
  const dim3 grid(static_cast<unsigned>((pr.n + Tile::kBN - 1) / Tile::kBN),
                  static_cast<unsigned>(m_tiles < limit ? m_tiles : limit),
                  static_cast<unsigned>(groups < limit ? groups : limit));
  EMBER_LAUNCH(kernel, grid, dim3(Tile::kThreads), bytes, stream, pr, m_tiles, groups);
}

// The tile of tc::big_tile's rule (64 x 16 for at most 16 columns, 128 x 128 for large
// products, else 64 x 64).
template <bool AK, typename T, typename P>
void launch_tile(const P& pr, int64_t groups, gpu::Stream stream) {
  if (pr.n <= 16) return launch<tc::MmaTile<64, 16>, AK, T>(pr, groups, stream);
  if (tc::big_tile(pr.m, pr.n, groups, tc::MmaTile<128>::shared_bytes(AK, true, sizeof(T))))
    return launch<tc::MmaTile<128>, AK, T>(pr, groups, stream);
  launch<tc::MmaTile<64>, AK, T>(pr, groups, stream);
}

template <typename T>
void run(const ConvShape& s, ConvDirection d, const void* a, const void* b, const void* bias,
         void* out, gpu::Stream stream) {
  ConvGeom g;
  g.s = s;
  g.cg = s.cg(), g.kg = s.kg();
  int64_t m, n, k;
  gemm_dims(s, d, m, n, k);
  if (m == 0 || n == 0) return;
  if (d == ConvDirection::forward) {
    g.w_async = k % 8 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
    const Forward<T> pr{m,
                        n,
                        k,
                        g,
                        static_cast<const T*>(a),
                        static_cast<const T*>(b),
                        static_cast<const T*>(bias),
                        static_cast<T*>(out)};
    return launch_tile<false, T>(pr, s.groups, stream);
  }
  if (d == ConvDirection::backward_data) {
    const BackwardData<T> pr{
        m, n, k, g, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out)};
    return launch_tile<false, T>(pr, s.groups, stream);
  }
  const BackwardFilter<T> pr{
      m, n, k, g, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<float*>(out)};
  launch_tile<true, T>(pr, s.groups, stream);
}

}  // namespace

const char* conv2d_tc_supports(DType t, const ConvShape&, ConvDirection) {
  if (t != DType::f16 && t != DType::bf16)
    return "the Tensor Core convolution takes float16 or bfloat16 only";
  if (t == DType::bf16 && compute_capability() < 80)
    return "bfloat16 Tensor Cores need sm_80 or newer";
  return "";
}

void conv2d_tc(DType t, const ConvShape& s, ConvDirection d, const void* a, const void* b,
               const void* bias, void* out, gpu::Stream stream) {
  const char* why = conv2d_tc_supports(t, s, d);
  if (*why) throw std::invalid_argument(std::string("conv2d_tc: ") + why);
  if (t == DType::f16)
    run<__half>(s, d, a, b, bias, out, stream);
  else
    run<__nv_bfloat16>(s, d, a, b, bias, out, stream);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS
