// FFT convolution by overlap-save (docs/conv.md, "FFT convolution"): forward and backward-data,
// both one correlation of an input with filters (kernels/conv_fft_plan.h). The output is cut into
// tiles of out_h x out_w; each tile's input window, T x T with T = out_h + R - 1, and each filter,
// zero-padded to T x T, go through a 2-D real-to-complex FFT (kernels/cuda/conv2d_fft.cuh). Their
// circular correlation, the inverse transform of sum over channels of X * conj(W), equals the
// linear one wherever the filter does not wrap around the tile: the first out_h x out_w outputs,
// which are kept (the rest is discarded: "save" the valid part).
//
// Four kernels per chunk of images, input channels and output channels (the plan's chunks keep the
// workspace under kConvFftWorkspaceCap):
//   1. conv2d_fft_filter_kernel   the filter spectra, one block per (output, input) channel pair;
//   2. conv2d_fft_input_kernel    the input tiles' spectra, one block per (channel, image, tile);
//   3. conv2d_fft_product_kernel  per output channel, tile and frequency, the sum over input
//                                 channels of X * conj(W), in channel order, added to the sum of
//                                 the chunks before it: one thread per sum, no atomics, so the
//                                 result does not depend on scheduling (deterministic);
//   4. conv2d_fft_inverse_kernel  the inverse transform of each product, cropped to the tile's
//                                 valid outputs, scaled by 1/T^2, plus the bias.
// Offsets are 64-bit; blocks loop over their items, so no grid dimension limits the sizes.
// Work counted (EMBER_COUNT_WORK): 8 flops per complex multiply-add of the products, and the
// elements each thread loads from and stores to global memory (a complex number counts both
// parts; the bias as often as it is read, once per thread of an inverse block and item); the
// transforms' arithmetic in shared memory is not counted (the cost model prices it per transform).
#include "kernels/cuda/compat.h"
#include "kernels/cuda/conv2d_fft.cuh"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;
using fft::Complex;

// One correlation problem (kernels/conv_fft_plan.h) and the plan's tile, as the kernels see it.
struct FftGeometry {
  int log2n;         // the tile is n = 2^log2n points per side
  int out_h, out_w;  // valid outputs per tile
  int64_t tiles_h, tiles_w;
  int64_t ca, ha, wa;    // input channels and size
  int64_t ko, ho, wo;    // output channels and size
  int r, s;              // filter size
  int64_t pad_h, pad_w;  // the input row / column of output 0 is -pad
  int64_t w_out, w_in;   // filter element strides along the output and the input channel
  bool rotate;           // the filter is read rotated by 180 degrees (backward-data)
  int64_t spectrum;      // n * (n/2 + 1)
};

__host__ __device__ inline int64_t tiles_of(const FftGeometry& g) {
  return g.tiles_h * g.tiles_w;
}

// The shared memory of one block: the buffers of fft::shared_elements().
template <typename T>
struct TileBuffers {
  Complex<T>* rows;
  Complex<T>* spec;
  Complex<T>* tw;
  __device__ explicit TileBuffers(Complex<T>* base, int n)
      : rows(base), spec(base + n / 2 * n), tw(base + n / 2 * n + n * (n / 2 + 1)) {}
};

// Copies the block's half spectrum to global memory.
template <typename T>
__device__ void store_spectrum(const FftGeometry& g, const Complex<T>* spec, Complex<T>* out) {
  for (int64_t f = threadIdx.x; f < g.spectrum; f += blockDim.x) {
    out[f] = spec[f];
    EMBER_COUNT_WORK(0, sizeof(Complex<T>));
  }
}

// 1. The spectra of the filters o0 + o (o < oc) against input channels a0 + a (a < ac), zero-padded
//    to n x n: wf[(o * ac + a) * spectrum + f].
template <typename T>
__global__ void conv2d_fft_filter_kernel(FftGeometry g, const T* __restrict__ w,
                                         Complex<T>* __restrict__ wf, int64_t o0, int64_t oc,
                                         int64_t a0, int64_t ac) {
  EMBER_DYNAMIC_SHARED(Complex<T>, shared);
  const int n = 1 << g.log2n;
  TileBuffers<T> buf(shared, n);
  fft::load_twiddles(buf.tw, n);
  for (int64_t item = blockIdx.x; item < oc * ac; item += gridDim.x) {
    const int64_t o = item / ac, a = item % ac;
    const T* f = w + (o0 + o) * g.w_out + (a0 + a) * g.w_in;
    auto load = [&](int y, int x) -> T {
      if (y >= g.r || x >= g.s) return T(0);
      EMBER_COUNT_WORK(0, sizeof(T));
      return g.rotate ? f[(g.r - 1 - y) * g.s + (g.s - 1 - x)] : f[y * g.s + x];
    };
    fft::forward_2d(g.log2n, load, buf.rows, buf.spec, buf.tw);
    store_spectrum(g, buf.spec, wf + item * g.spectrum);
  }
}

// 2. The spectra of the input windows of images n0 + i (i < images), channels a0 + a (a < ac):
//    xf[(a * P + p) * spectrum + f], p = i * tiles + tile, the window of tile (ti, tj) starting
//    at input row ti * out_h - pad_h and column tj * out_w - pad_w (zeros outside the input).
template <typename T>
__global__ void conv2d_fft_input_kernel(FftGeometry g, const T* __restrict__ in,
                                        Complex<T>* __restrict__ xf, int64_t n0, int64_t images,
                                        int64_t a0, int64_t ac) {
  EMBER_DYNAMIC_SHARED(Complex<T>, shared);
  const int n = 1 << g.log2n;
  TileBuffers<T> buf(shared, n);
  fft::load_twiddles(buf.tw, n);
  const int64_t tiles = tiles_of(g), P = images * tiles;
  for (int64_t item = blockIdx.x; item < ac * P; item += gridDim.x) {
    const int64_t a = item / P, p = item % P, img = n0 + p / tiles, tile = p % tiles;
    const int64_t y0 = tile / g.tiles_w * g.out_h - g.pad_h;
    const int64_t x0 = tile % g.tiles_w * g.out_w - g.pad_w;
    const T* plane = in + (img * g.ca + a0 + a) * g.ha * g.wa;
    auto load = [&](int y, int x) -> T {
      const int64_t iy = y0 + y, ix = x0 + x;
      if (iy < 0 || iy >= g.ha || ix < 0 || ix >= g.wa) return T(0);
      EMBER_COUNT_WORK(0, sizeof(T));
      return plane[iy * g.wa + ix];
    };
    fft::forward_2d(g.log2n, load, buf.rows, buf.spec, buf.tw);
    store_spectrum(g, buf.spec, xf + item * g.spectrum);
  }
}

// 3. yf[(o * P + p) * spectrum + f] = (accumulate ? yf[...] : 0) + sum over a < ac, in order, of
//    xf[(a * P + p) * spectrum + f] * conj(wf[(o * ac + a) * spectrum + f]). Neighbouring threads
//    take neighbouring frequencies, so every load is coalesced.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_fft_product_kernel(const Complex<T>* __restrict__ wf, const Complex<T>* __restrict__ xf,
                              Complex<T>* __restrict__ yf, int64_t oc, int64_t ac, int64_t P,
                              int64_t spectrum, bool accumulate) {
  const int64_t total = oc * P * spectrum;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t f = i % spectrum, p = (i / spectrum) % P, o = i / (spectrum * P);
    Complex<T> acc = accumulate ? yf[i] : Complex<T>{T(0), T(0)};
    const Complex<T>* x = xf + p * spectrum + f;
    const Complex<T>* w = wf + o * ac * spectrum + f;
    for (int64_t a = 0; a < ac; ++a)
      acc = fft::mul_conj_add(acc, x[a * P * spectrum], w[a * spectrum]);
    yf[i] = acc;
    EMBER_COUNT_WORK(8 * ac, (2 * ac + (accumulate ? 2 : 1)) * sizeof(Complex<T>));
  }
}

// 4. out[img][o0 + o][ti * out_h + y][tj * out_w + x] = the inverse transform of product (o, p)
//    at (y, x) / n^2 (+ bias), for y < out_h, x < out_w inside the output.
template <typename T>
__global__ void conv2d_fft_inverse_kernel(FftGeometry g, const Complex<T>* __restrict__ yf,
                                          const T* __restrict__ bias, T* __restrict__ out,
                                          int64_t n0, int64_t images, int64_t o0, int64_t oc) {
  EMBER_DYNAMIC_SHARED(Complex<T>, shared);
  const int n = 1 << g.log2n;
  TileBuffers<T> buf(shared, n);
  fft::load_twiddles(buf.tw, n);
  const int64_t tiles = tiles_of(g), P = images * tiles;
  const T scale = static_cast<T>(1.0 / (double(n) * double(n)));
  for (int64_t item = blockIdx.x; item < oc * P; item += gridDim.x) {
    const int64_t o = item / P, p = item % P, img = n0 + p / tiles, tile = p % tiles;
    const Complex<T>* src = yf + item * g.spectrum;
    for (int64_t f = threadIdx.x; f < g.spectrum; f += blockDim.x) {
      buf.spec[f] = src[f];
      EMBER_COUNT_WORK(0, sizeof(Complex<T>));
    }
    __syncthreads();
    fft::inverse_2d(g.log2n, buf.rows, buf.spec, buf.tw);
    const int64_t y0 = tile / g.tiles_w * g.out_h, x0 = tile % g.tiles_w * g.out_w;
    const T b = bias != nullptr ? bias[o0 + o] : T(0);
    if (bias != nullptr) EMBER_COUNT_WORK(0, sizeof(T));
    T* plane = out + (img * g.ko + o0 + o) * g.ho * g.wo;
    for (int idx = threadIdx.x; idx < g.out_h * g.out_w; idx += blockDim.x) {
      const int y = idx / g.out_w, x = idx % g.out_w;
      if (y0 + y >= g.ho || x0 + x >= g.wo) continue;
      const Complex<T> v = buf.rows[(y / 2) * n + x];
      plane[(y0 + y) * g.wo + x0 + x] = (y % 2 == 0 ? v.re : v.im) * scale + b;
      EMBER_COUNT_WORK(0, sizeof(T));
    }
    __syncthreads();  // buf.rows is read above before the next item's transform overwrites it
  }
}

// --- the plan -----------------------------------------------------------------------------------

// The correlation a direction computes (kernels/conv_fft_plan.h).
struct Problem {
  int64_t n, ca, ha, wa, ko, ho, wo;
  int64_t r, s, pad_h, pad_w;
  bool backward;
};

Problem problem_of(const ConvShape& s, ConvDirection d) {
  if (d == ConvDirection::backward_data)
    return {s.n, s.k, s.oh, s.ow, s.c, s.h, s.w, s.r, s.s, s.r - 1 - s.pad_h, s.s - 1 - s.pad_w,
            true};
  return {s.n, s.c, s.h, s.w, s.k, s.oh, s.ow, s.r, s.s, s.pad_h, s.pad_w, false};
}

int log2_of(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

size_t item_bytes(DType t) {
  return t == DType::f64 ? sizeof(double) : sizeof(float);
}

// The cap in effect: kConvFftWorkspaceCap, or EMBER_CONV_FFT_CAP (bytes) when it is set, which the
// tests use to make small shapes run in several chunks.
size_t workspace_cap() {
  const char* env = std::getenv("EMBER_CONV_FFT_CAP");
  if (env == nullptr || *env == '\0') return kConvFftWorkspaceCap;
  return static_cast<size_t>(std::strtoull(env, nullptr, 10));
}

size_t plan_bytes(DType t, const ConvFftPlan& p) {
  const int64_t pc = p.images * p.tiles_h * p.tiles_w;
  const int64_t spectra = p.out_chunk * p.in_chunk + (p.in_chunk + p.out_chunk) * pc;
  return 2 * item_bytes(t) * size_t(p.spectrum) * size_t(spectra);
}

// Threads per transform block: a 16-point tile has 64 butterflies per row stage, the others 256
// or more.
int threads_for(int tile) {
  return tile <= 16 ? 64 : 256;
}

// Note [Choosing the FFT tile]
// Each candidate T (16, 32, 64; at least the filter's size; its blocks' shared memory within the
// device's opt-in limit: float64 64-point tiles need 67 KB, more than a Turing GPU's 64 KiB) is
// costed by its arithmetic per output image: per tile, (C + K) transforms of ~T^2 log2 T and C*K
// complex products over the half spectrum, T (T/2 + 1) each. A bigger tile keeps more of each
// window (T - R + 1 of T per side) but pays for more frequencies; the cheapest wins, the smaller on
// a tie (less rounding, less workspace). Then the chunks: while the workspace is over the cap,
// halve whichever of the filter spectra (out_chunk x in_chunk) and the tile spectra ((in + out) x
// images x tiles) is bigger: the image chunk first for the tiles, then the larger of the channel
// chunks.
ConvFftPlan make_plan(DType t, const Problem& q) {
  ConvFftPlan p;
  const int64_t ho = q.ho > 0 ? q.ho : 1, wo = q.wo > 0 ? q.wo : 1;
  double best = 0;
  const size_t shared_limit = max_shared_optin();
  for (int n : kConvFftTiles) {
    if (n < q.r || n < q.s) continue;
    if (size_t(fft::shared_elements(n)) * 2 * item_bytes(t) > shared_limit) continue;
    const int64_t th = ceil_div(ho, n - q.r + 1), tw = ceil_div(wo, n - q.s + 1);
    const double area = double(n) * n, freq = double(n) * (n / 2 + 1);
    const double cost = double(th * tw) * (area * log2_of(n) * double(q.ca + q.ko) +
                                           4.0 * freq * double(q.ca) * double(q.ko));
    if (p.tile != 0 && cost >= best) continue;
    best = cost;
    p.tile = n, p.out_h = int(n - q.r + 1), p.out_w = int(n - q.s + 1), p.tiles_h = th,
    p.tiles_w = tw;
  }
  if (p.tile == 0) return p;
  p.spectrum = int64_t(p.tile) * (p.tile / 2 + 1);
  p.threads = threads_for(p.tile);
  p.images = q.n > 0 ? q.n : 1;
  p.in_chunk = q.ca > 0 ? q.ca : 1;
  p.out_chunk = q.ko > 0 ? q.ko : 1;
  const int64_t tiles = p.tiles_h * p.tiles_w;
  const size_t cap = workspace_cap();
  while (plan_bytes(t, p) > cap) {
    const bool filters_bigger =
        p.out_chunk * p.in_chunk >= (p.in_chunk + p.out_chunk) * p.images * tiles;
    int64_t& larger = p.in_chunk >= p.out_chunk ? p.in_chunk : p.out_chunk;
    if (!filters_bigger && p.images > 1)
      p.images = ceil_div(p.images, 2);
    else if (larger > 1)
      larger = ceil_div(larger, 2);
    else
      break;  // one image, one channel of each: unsupported (conv2d_fft_supports)
  }
  p.chunks[0] = ceil_div(q.n, p.images);
  p.chunks[1] = ceil_div(q.ca, p.in_chunk);
  p.chunks[2] = ceil_div(q.ko, p.out_chunk);
  p.workspace_bytes = q.n * q.ko * q.ho * q.wo == 0 ? 0 : plan_bytes(t, p);
  return p;
}

// Why the FFT kernels cannot run (t, s, d), or nullptr.
const char* unsupported(DType t, const ConvShape& s, ConvDirection d) {
  if (t != DType::f32 && t != DType::f64) return "float32 and float64 only";
  if (d == ConvDirection::backward_filter)
    return "backward-filter is not implemented (forward and backward-data only)";
  if (s.stride_h != 1 || s.stride_w != 1) return "stride 1 only";
  if (s.dil_h != 1 || s.dil_w != 1) return "dilation 1 only";
  if (s.groups != 1) return "groups 1 only";
  if (s.r > 32 || s.s > 32) return "filters up to 32 x 32 only";
  const Problem q = problem_of(s, d);
  if (make_plan(t, q).workspace_bytes > workspace_cap())
    return "the workspace cap (256 MiB, or EMBER_CONV_FFT_CAP) cannot be met even with one image, "
           "one input and one output channel per chunk";
  return nullptr;
}

FftGeometry geometry_of(const ConvShape& s, ConvDirection d, const ConvFftPlan& p) {
  const Problem q = problem_of(s, d);
  FftGeometry g{};
  g.log2n = log2_of(p.tile);
  g.out_h = p.out_h, g.out_w = p.out_w, g.tiles_h = p.tiles_h, g.tiles_w = p.tiles_w;
  g.ca = q.ca, g.ha = q.ha, g.wa = q.wa, g.ko = q.ko, g.ho = q.ho, g.wo = q.wo;
  g.r = int(q.r), g.s = int(q.s), g.pad_h = q.pad_h, g.pad_w = q.pad_w;
  // The filter is K x C x R x S: forward reads w[o][a], backward-data w[a][o] rotated.
  const int64_t rs = s.r * s.s;
  g.w_out = q.backward ? rs : s.c * rs;
  g.w_in = q.backward ? s.c * rs : rs;
  g.rotate = q.backward;
  g.spectrum = p.spectrum;
  return g;
}

unsigned blocks_for_items(int64_t items) {
  return static_cast<unsigned>(items < 1 ? 1 : items < 8192 ? items : 8192);
}

// The kernels' shared memory, opted in above 48 KiB (float64 64-point tiles need 67 KB).
template <typename T>
size_t shared_bytes_for(int tile) {
  const size_t shared = size_t(fft::shared_elements(tile)) * sizeof(Complex<T>);
  if (shared > 48 * 1024) {
    EMBER_SET_MAX_DYNAMIC_SHARED(conv2d_fft_filter_kernel<T>, shared);
    EMBER_SET_MAX_DYNAMIC_SHARED(conv2d_fft_input_kernel<T>, shared);
    EMBER_SET_MAX_DYNAMIC_SHARED(conv2d_fft_inverse_kernel<T>, shared);
  }
  return shared;
}

// Runs the chunks of the plan (the top of the file), all on `stream`.
template <typename T>
void run_fft(const ConvShape& s, ConvDirection d, const void* a_v, const void* w_v,
             const void* bias_v, void* out_v, void* ws, size_t ws_bytes, gpu::Stream stream) {
  const Problem q = problem_of(s, d);
  if (q.n * q.ko * q.ho * q.wo == 0) return;
  const ConvFftPlan plan = make_plan(sizeof(T) == 8 ? DType::f64 : DType::f32, q);
  if (ws_bytes < plan.workspace_bytes || (plan.workspace_bytes > 0 && ws == nullptr))
    throw std::invalid_argument("conv2d_fft: the workspace is too small");
  const FftGeometry g = geometry_of(s, d, plan);
  const T* a = static_cast<const T*>(a_v);
  const T* w = static_cast<const T*>(w_v);
  const T* bias = static_cast<const T*>(bias_v);
  T* out = static_cast<T*>(out_v);
  const int64_t tiles = tiles_of(g), F = plan.spectrum;
  Complex<T>* wf = static_cast<Complex<T>*>(ws);
  Complex<T>* xf = wf + plan.out_chunk * plan.in_chunk * F;
  Complex<T>* yf = xf + plan.in_chunk * plan.images * tiles * F;
  const size_t shared = shared_bytes_for<T>(plan.tile);
  const dim3 block(plan.threads);
  for (int64_t n0 = 0; n0 < q.n; n0 += plan.images) {
    const int64_t images = q.n - n0 < plan.images ? q.n - n0 : plan.images;
    const int64_t P = images * tiles;
    for (int64_t o0 = 0; o0 < q.ko; o0 += plan.out_chunk) {
      const int64_t oc = q.ko - o0 < plan.out_chunk ? q.ko - o0 : plan.out_chunk;
      // With no input channels the product is zero (one pass writes it) and y is the bias.
      for (int64_t a0 = 0; a0 == 0 || a0 < q.ca; a0 += plan.in_chunk) {
        const int64_t ac = q.ca - a0 < plan.in_chunk ? q.ca - a0 : plan.in_chunk;
        if (ac > 0) {
          EMBER_LAUNCH(conv2d_fft_filter_kernel<T>, dim3(blocks_for_items(oc * ac)), block, shared,
                       stream, g, w, wf, o0, oc, a0, ac);
          EMBER_LAUNCH(conv2d_fft_input_kernel<T>, dim3(blocks_for_items(ac * P)), block, shared,
                       stream, g, a, xf, n0, images, a0, ac);
        }
        EMBER_LAUNCH(conv2d_fft_product_kernel<T>, dim3(blocks_for(oc * P * F)), dim3(kBlock), 0,
                     stream, wf, xf, yf, oc, ac, P, F, a0 > 0);
      }
      EMBER_LAUNCH(conv2d_fft_inverse_kernel<T>, dim3(blocks_for_items(oc * P)), block, shared,
                   stream, g, yf, bias, out, n0, images, o0, oc);
    }
  }
}

// The transforms alone (conv2d_fft_tiles): `count` whole tiles, each an image of one channel
// and one tile with no padding, through the same input and inverse kernels.
template <typename T>
void run_tiles(int tile, int64_t count, bool inverse, const void* in, void* out,
               gpu::Stream stream) {
  FftGeometry g{};
  g.log2n = log2_of(tile);
  g.out_h = g.out_w = tile, g.tiles_h = g.tiles_w = 1;
  g.ca = g.ko = 1, g.ha = g.wa = g.ho = g.wo = tile;
  g.spectrum = int64_t(tile) * (tile / 2 + 1);
  const size_t shared = shared_bytes_for<T>(tile);
  const dim3 grid(blocks_for_items(count)), block(threads_for(tile));
  if (inverse)
    EMBER_LAUNCH(conv2d_fft_inverse_kernel<T>, grid, block, shared, stream, g,
                 static_cast<const Complex<T>*>(in), static_cast<const T*>(nullptr),
                 static_cast<T*>(out), int64_t(0), count, int64_t(0), int64_t(1));
  else
    EMBER_LAUNCH(conv2d_fft_input_kernel<T>, grid, block, shared, stream, g,
                 static_cast<const T*>(in), static_cast<Complex<T>*>(out), int64_t(0), count,
                 int64_t(0), int64_t(1));
}

}  // namespace

bool conv2d_fft_supports(DType t, const ConvShape& s, ConvDirection d, const char** why) {
  const char* reason = unsupported(t, s, d);
  if (reason != nullptr && why != nullptr) *why = reason;
  return reason == nullptr;
}

ConvFftPlan conv2d_fft_plan(DType t, const ConvShape& s, ConvDirection d) {
  if (t != DType::f32 && t != DType::f64)
    throw std::invalid_argument("conv2d_fft_plan: kernels exist for float32 and float64 only");
  return make_plan(t, problem_of(s, d));
}

size_t conv2d_fft_workspace_bytes(DType t, const ConvShape& s, ConvDirection d) {
  if (unsupported(t, s, d) != nullptr) return 0;
  return make_plan(t, problem_of(s, d)).workspace_bytes;
}

void conv2d_fwd_fft(DType t, const ConvShape& s, const void* x, const void* w, const void* bias,
                    void* y, void* workspace, size_t workspace_bytes, gpu::Stream stream) {
  if (const char* why = unsupported(t, s, ConvDirection::forward))
    throw std::invalid_argument(std::string("conv2d_fwd_fft: ") + why);
  dispatch_float(t, "conv2d_fwd_fft", [&](auto z) {
    run_fft<decltype(z)>(s, ConvDirection::forward, x, w, bias, y, workspace, workspace_bytes,
                         stream);
  });
}

void conv2d_bwd_data_fft(DType t, const ConvShape& s, const void* dy, const void* w, void* dx,
                         void* workspace, size_t workspace_bytes, gpu::Stream stream) {
  if (const char* why = unsupported(t, s, ConvDirection::backward_data))
    throw std::invalid_argument(std::string("conv2d_bwd_data_fft: ") + why);
  dispatch_float(t, "conv2d_bwd_data_fft", [&](auto z) {
    run_fft<decltype(z)>(s, ConvDirection::backward_data, dy, w, nullptr, dx, workspace,
                         workspace_bytes, stream);
  });
}

void conv2d_fft_tiles(DType t, int tile, int64_t count, bool inverse, const void* in, void* out,
                      gpu::Stream stream) {
  if (tile != 16 && tile != 32 && tile != 64)
    throw std::invalid_argument("conv2d_fft_tiles: tiles of 16, 32 or 64 points only");
  if (count <= 0) return;
  dispatch_float(t, "conv2d_fft_tiles",
                 [&](auto z) { run_tiles<decltype(z)>(tile, count, inverse, in, out, stream); });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS
