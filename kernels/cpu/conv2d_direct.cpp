// Direct convolution: one output element per loop iteration, summing over its window. Every
// output element is owned by one iteration, so the loops parallelise without atomics and the
// result does not depend on the thread count. The sums are kernels/conv2d_direct_math.h's, which
// the GPU kernels share.
#include "kernels/kernel_table.h"

#include <algorithm>
#include <vector>

#include "kernels/conv2d_direct_math.h"
#include "kernels/cpu/conv2d_direct.h"
#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

// Depthwise (groups == C == K: one filter per channel): each output plane is a 2-D stencil of
// one input plane, computed as a 1-D stencil (Note [Polyphase depthwise]).
//
// Note [Polyphase depthwise]
// The input plane is copied into a zero-bordered buffer that holds every position a window
// reaches, split by stride into its phases: phase (a, b) holds the bordered rows a, a + sh, ...
// and columns b, b + sw, ..., as a plane of hp x wp. Tap (r, q) of output (oh, ow) then reads
// phase ((r dh) mod sh, (q dw) mod sw) at row oh + (r dh) div sh, column ow + (q dw) div sw: with
// the output laid out wp wide, output i = oh wp + ow reads element i + offset(r, q) of the
// phase buffer, whatever the stride or dilation. So every output is a sum of R S products at
// fixed offsets, and the loop runs over blocks of kLanes consecutive outputs (the vector
// registers) with the taps inside, storing each block once. The columns ow >= OW of the wide
// output are not outputs (their windows run past the border) and are dropped in the copy out.
// The border is the same for every plane, so each thread zeroes its buffer once and per plane
// copies in only the input's own elements. Sums in conv2d_direct_fwd_at's order: bias, then r,
// then q.
template <typename T>
void fwd_depthwise(const ConvShape& s, const T* x, const T* w, const T* bias, T* y,
                   const OutputClamp* clamp) {
  // kLanes consecutive outputs: two vectors of GCC's vector extension, as wide as the build's
  // registers (so no vector is split into halves through the integer registers), aligned as T
  // (the loads start anywhere) and allowed to alias T. Two accumulators keep two FMA chains in
  // flight.
  typedef T Vec __attribute__((vector_size(kVectorBytes), aligned(alignof(T)), may_alias));
  constexpr int64_t kVec = kVectorBytes / sizeof(T), kLanes = 2 * kVec;
  const int64_t sh = s.stride_h, sw = s.stride_w;
  // The bordered plane: rows and columns from -pad up to the last one a window reaches.
  const int64_t ph = (s.oh - 1) * sh + (s.r - 1) * s.dil_h + 1;
  const int64_t pw = (s.ow - 1) * sw + (s.s - 1) * s.dil_w + 1;
  const int64_t hp = (ph + sh - 1) / sh, wp = (pw + sw - 1) / sw;  // one phase
  const int64_t phase = hp * wp;
  std::vector<int64_t> offset(static_cast<size_t>(s.r * s.s));
  for (int64_t r = 0; r < s.r; ++r)
    for (int64_t q = 0; q < s.s; ++q) {
      const int64_t dr = r * s.dil_h, dq = q * s.dil_w;
      offset[r * s.s + q] = ((dr % sh) * sw + dq % sw) * phase + (dr / sh) * wp + dq / sw;
    }
  const int64_t wide = (s.oh * wp + kLanes - 1) / kLanes * kLanes;  // the wide output, blocked
  // Reads of the last block run past the phases by less than a block and a row plus a window.
  const int64_t buffer = sh * sw * phase + wide + wp + s.s * s.dil_w;
  // The input rows and columns that land inside the bordered plane.
  const int64_t i0 = std::max<int64_t>(0, -s.pad_h), i1 = std::min(s.h, ph - s.pad_h);
  const int64_t c0 = std::max<int64_t>(0, -s.pad_w), c1 = std::min(s.w, pw - s.pad_w);
  const int64_t taps = s.r * s.s;
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel if (par)
  {
    std::vector<T> in(static_cast<size_t>(buffer), T(0)), out(static_cast<size_t>(wide));
    std::vector<T> row(static_cast<size_t>(sw * wp), T(0));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < s.n * s.c; ++p) {
      const int64_t c = p % s.c;
      const T* xp = x + p * s.h * s.w;
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t bi = i + s.pad_h;  // the bordered row
        T* dst = in.data() + (bi % sh) * sw * phase + (bi / sh) * wp;
        const T* src = xp + i * s.w;
        if (sw == 1) {
          std::copy(src + c0, src + c1, dst + c0 + s.pad_w);
          continue;
        }
        // The bordered row (its border zero from the start), then its sw phases.
        std::copy(src + c0, src + c1, row.data() + c0 + s.pad_w);
        if (sw == 2) {
          for (int64_t j = 0; j < wp; ++j) {
            dst[j] = row[2 * j];
            dst[phase + j] = row[2 * j + 1];
          }
        } else {
          for (int64_t b = 0; b < sw; ++b)
            for (int64_t j = 0; j < wp; ++j) dst[b * phase + j] = row[j * sw + b];
        }
      }
      const T* wc = w + c * taps;
      const T bv = bias != nullptr ? bias[c] : T(0);
      const T* base = in.data();
      for (int64_t o = 0; o < wide; o += kLanes) {
        Vec a0 = Vec{} + bv, a1 = a0;
        for (int64_t t = 0; t < taps; ++t) {
          const T* src = base + offset[t] + o;
          a0 += *reinterpret_cast<const Vec*>(src) * wc[t];
          a1 += *reinterpret_cast<const Vec*>(src + kVec) * wc[t];
        }
        *reinterpret_cast<Vec*>(out.data() + o) = a0;
        *reinterpret_cast<Vec*>(out.data() + o + kVec) = a1;
      }
      T* yp = y + p * s.oh * s.ow;
      for (int64_t oh = 0; oh < s.oh; ++oh)
        std::copy(out.data() + oh * wp, out.data() + oh * wp + s.ow, yp + oh * s.ow);
      if (clamp != nullptr) clamp_span(yp, s.oh * s.ow, T(clamp->lo), T(clamp->hi));
    }
  }
}

// With `clamp`, each output plane is clamped once written.
template <typename T>
void fwd(const ConvShape& s, const T* x, const T* w, const T* bias, T* y,
         const OutputClamp* clamp) {
  if (s.groups == s.c && s.k == s.c && s.groups > 1) return fwd_depthwise(s, x, w, bias, y, clamp);
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) collapse(2) if (par)
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k) {
      T* yk = y + (n * s.k + k) * s.oh * s.ow;
      for (int64_t oh = 0; oh < s.oh; ++oh)
        for (int64_t ow = 0; ow < s.ow; ++ow)
          yk[oh * s.ow + ow] = conv2d_direct_fwd_at(s, x, w, bias, n, k, oh, ow);
      if (clamp != nullptr) clamp_span(yk, s.oh * s.ow, T(clamp->lo), T(clamp->hi));
    }
}

template <typename T>
void bwd_data(const ConvShape& s, const T* dy, const T* w, T* dx) {
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) collapse(2) if (par)
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c) {
      T* dxc = dx + (n * s.c + c) * s.h * s.w;
      for (int64_t ih = 0; ih < s.h; ++ih)
        for (int64_t iw = 0; iw < s.w; ++iw)
          dxc[ih * s.w + iw] = conv2d_direct_bwd_data_at(s, dy, w, n, c, ih, iw);
    }
}

template <typename T>
void bwd_filter(const ConvShape& s, const T* dy, const T* x, T* dw) {
  const int64_t cg = s.cg();
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) collapse(2) if (par)
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t r = 0; r < s.r; ++r)
        for (int64_t q = 0; q < s.s; ++q)
          dw[((k * cg + c) * s.r + r) * s.s + q] =
              conv2d_direct_bwd_filter_at(s, dy, x, k, c, r, q);
}

}  // namespace

void conv2d_fwd_direct(DType t, const ConvShape& s, const void* x, const void* w, const void* bias,
                       void* y, Stream) {
  conv2d_fwd_direct_clamped(t, s, x, w, bias, y, nullptr);
}

void conv2d_fwd_direct_clamped(DType t, const ConvShape& s, const void* x, const void* w,
                               const void* bias, void* y, const OutputClamp* clamp) {
  dispatch_float(t, "conv2d", [&](auto z) {
    using T = decltype(z);
    fwd(s, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
        static_cast<T*>(y), clamp);
  });
}

void conv2d_bwd_data_direct(DType t, const ConvShape& s, const void* dy, const void* w, void* dx,
                            Stream) {
  dispatch_float(t, "conv2d_backward_data", [&](auto z) {
    using T = decltype(z);
    bwd_data(s, static_cast<const T*>(dy), static_cast<const T*>(w), static_cast<T*>(dx));
  });
}

void conv2d_bwd_filter_direct(DType t, const ConvShape& s, const void* dy, const void* x, void* dw,
                              Stream) {
  dispatch_float(t, "conv2d_backward_filter", [&](auto z) {
    using T = decltype(z);
    bwd_filter(s, static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dw));
  });
}

}  // namespace ember::kernels::cpu
