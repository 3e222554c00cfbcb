// Pooling kernels: one plane (n, c) per parallel iteration, so every write, including the
// scatter of the backward passes, stays inside the iteration's own plane.
#include "kernels/cpu/pool2d.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

// Runs body(plane) for every plane, in parallel when the work is large.
template <typename F>
void for_planes(const PoolShape& s, int64_t work_per_plane, F&& body) {
  const bool par =
      s.planes() > 1 && s.planes() * work_per_plane >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (par)
  for (int64_t p = 0; p < s.planes(); ++p) body(p);
}

template <typename T>
void max_fwd(const PoolShape& s, const T* x, T* y, int64_t* idx) {
  for_planes(s, s.oh * s.ow * s.kh * s.kw, [&](int64_t p) {
    const T* xp = x + p * s.h * s.w;
    for (int64_t i = 0; i < s.oh; ++i)
      for (int64_t j = 0; j < s.ow; ++j) {
        T best = -std::numeric_limits<T>::infinity();
        int64_t at = -1;
        for (int64_t a = 0; a < s.kh; ++a) {
          const int64_t ih = i * s.sh - s.ph + a * s.dh;
          if (ih < 0 || ih >= s.h) continue;
          for (int64_t b = 0; b < s.kw; ++b) {
            const int64_t iw = j * s.sw - s.pw + b * s.dw;
            if (iw < 0 || iw >= s.w) continue;
            const T v = xp[ih * s.w + iw];
            if (at < 0 || v > best || std::isnan(v)) {
              best = v;
              at = ih * s.w + iw;
            }
          }
        }
        y[(p * s.oh + i) * s.ow + j] = best;
        idx[(p * s.oh + i) * s.ow + j] = at;
      }
  });
}

template <typename T>
void max_bwd(const PoolShape& s, const T* dy, const int64_t* idx, T* dx) {
  for_planes(s, s.h * s.w + s.oh * s.ow, [&](int64_t p) {
    T* dxp = dx + p * s.h * s.w;
    std::fill(dxp, dxp + s.h * s.w, T(0));
    for (int64_t o = p * s.oh * s.ow; o < (p + 1) * s.oh * s.ow; ++o)
      if (idx[o] >= 0) dxp[idx[o]] += dy[o];
  });
}

// The clipped window of output (i, j) and its divisor, as PyTorch's avg_pool2d computes them.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};
AvgWindow avg_window(const PoolShape& s, int64_t i, int64_t j) {
  int64_t h0 = i * s.sh - s.ph, w0 = j * s.sw - s.pw;
  int64_t h1 = std::min(h0 + s.kh, s.h + s.ph), w1 = std::min(w0 + s.kw, s.w + s.pw);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, s.h), w1 = std::min(w1, s.w);
  const int64_t inside = std::max<int64_t>(h1 - h0, 0) * std::max<int64_t>(w1 - w0, 0);
  const int64_t divisor = s.divisor_override > 0 ? s.divisor_override
                          : s.count_include_pad  ? padded
                                                 : inside;
  return {h0, h1, w0, w1, divisor};
}

template <typename T>
void avg_fwd(const PoolShape& s, const T* x, T* y) {
  for_planes(s, s.oh * s.ow * s.kh * s.kw, [&](int64_t p) {
    const T* xp = x + p * s.h * s.w;
    for (int64_t i = 0; i < s.oh; ++i)
      for (int64_t j = 0; j < s.ow; ++j) {
        const AvgWindow wd = avg_window(s, i, j);
        T acc = 0;
        for (int64_t ih = wd.h0; ih < wd.h1; ++ih)
          for (int64_t iw = wd.w0; iw < wd.w1; ++iw) acc += xp[ih * s.w + iw];
        const bool empty = wd.h0 >= wd.h1 || wd.w0 >= wd.w1;
        y[(p * s.oh + i) * s.ow + j] = empty ? T(0) : acc / static_cast<T>(wd.divisor);
      }
  });
}

template <typename T>
void avg_bwd(const PoolShape& s, const T* dy, T* dx) {
  for_planes(s, s.h * s.w + s.oh * s.ow * s.kh * s.kw, [&](int64_t p) {
    T* dxp = dx + p * s.h * s.w;
    std::fill(dxp, dxp + s.h * s.w, T(0));
    for (int64_t i = 0; i < s.oh; ++i)
      for (int64_t j = 0; j < s.ow; ++j) {
        const AvgWindow wd = avg_window(s, i, j);
        if (wd.h0 >= wd.h1 || wd.w0 >= wd.w1) continue;
        const T g = dy[(p * s.oh + i) * s.ow + j] / static_cast<T>(wd.divisor);
        for (int64_t ih = wd.h0; ih < wd.h1; ++ih)
          for (int64_t iw = wd.w0; iw < wd.w1; ++iw) dxp[ih * s.w + iw] += g;
      }
  });
}

int64_t adaptive_start(int64_t o, int64_t in, int64_t out) {
  return (o * in) / out;
}
int64_t adaptive_end(int64_t o, int64_t in, int64_t out) {
  return ((o + 1) * in + out - 1) / out;
}

template <typename T>
void adaptive_fwd(const PoolShape& s, const T* x, T* y) {
  for_planes(s, s.h * s.w + s.oh * s.ow, [&](int64_t p) {
    const T* xp = x + p * s.h * s.w;
    for (int64_t i = 0; i < s.oh; ++i) {
      const int64_t h0 = adaptive_start(i, s.h, s.oh), h1 = adaptive_end(i, s.h, s.oh);
      for (int64_t j = 0; j < s.ow; ++j) {
        const int64_t w0 = adaptive_start(j, s.w, s.ow), w1 = adaptive_end(j, s.w, s.ow);
        T acc = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) acc += xp[ih * s.w + iw];
        y[(p * s.oh + i) * s.ow + j] = acc / static_cast<T>((h1 - h0) * (w1 - w0));
      }
    }
  });
}

template <typename T>
void adaptive_bwd(const PoolShape& s, const T* dy, T* dx) {
  for_planes(s, s.h * s.w + s.oh * s.ow, [&](int64_t p) {
    T* dxp = dx + p * s.h * s.w;
    std::fill(dxp, dxp + s.h * s.w, T(0));
    for (int64_t i = 0; i < s.oh; ++i) {
      const int64_t h0 = adaptive_start(i, s.h, s.oh), h1 = adaptive_end(i, s.h, s.oh);
      for (int64_t j = 0; j < s.ow; ++j) {
        const int64_t w0 = adaptive_start(j, s.w, s.ow), w1 = adaptive_end(j, s.w, s.ow);
        const T g = dy[(p * s.oh + i) * s.ow + j] / static_cast<T>((h1 - h0) * (w1 - w0));
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) dxp[ih * s.w + iw] += g;
      }
    }
  });
}

}  // namespace

#define EMBER_POOL_ENTRY(op, body)    \
  dispatch_float(t, op, [&](auto z) { \
    using T = decltype(z);            \
    body;                             \
  })

void max_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y, int64_t* idx) {
  EMBER_POOL_ENTRY("max_pool2d", max_fwd(s, static_cast<const T*>(x), static_cast<T*>(y), idx));
}
void max_pool2d_bwd(DType t, const PoolShape& s, const void* dy, const int64_t* idx, void* dx) {
  EMBER_POOL_ENTRY("max_pool2d_backward",
                   max_bwd(s, static_cast<const T*>(dy), idx, static_cast<T*>(dx)));
}
void avg_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y) {
  EMBER_POOL_ENTRY("avg_pool2d", avg_fwd(s, static_cast<const T*>(x), static_cast<T*>(y)));
}
void avg_pool2d_bwd(DType t, const PoolShape& s, const void* dy, void* dx) {
  EMBER_POOL_ENTRY("avg_pool2d_backward",
                   avg_bwd(s, static_cast<const T*>(dy), static_cast<T*>(dx)));
}
void adaptive_avg_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y) {
  EMBER_POOL_ENTRY("adaptive_avg_pool2d",
                   adaptive_fwd(s, static_cast<const T*>(x), static_cast<T*>(y)));
}
void adaptive_avg_pool2d_bwd(DType t, const PoolShape& s, const void* dy, void* dx) {
  EMBER_POOL_ENTRY("adaptive_avg_pool2d_backward",
                   adaptive_bwd(s, static_cast<const T*>(dy), static_cast<T*>(dx)));
}
#undef EMBER_POOL_ENTRY

}  // namespace ember::kernels::cpu
