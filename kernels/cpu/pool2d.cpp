// Pooling kernels: one plane (n, c) per parallel iteration, so every write, including the
// scatter of the backward passes, stays inside the iteration's own plane. The value of each
// output and the windows are kernels/pool_math.h's, which the GPU kernels share.
#include "kernels/kernel_table.h"

#include <algorithm>
#include "kernels/cpu/loops.h"
#include "kernels/pool_math.h"

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
        const PoolMax<T> m = max_pool_at(s, xp, i, j);
        y[(p * s.oh + i) * s.ow + j] = m.value;
        idx[(p * s.oh + i) * s.ow + j] = m.index;
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

template <typename T>
void avg_fwd(const PoolShape& s, const T* x, T* y) {
  for_planes(s, s.oh * s.ow * s.kh * s.kw, [&](int64_t p) {
    const T* xp = x + p * s.h * s.w;
    for (int64_t i = 0; i < s.oh; ++i)
      for (int64_t j = 0; j < s.ow; ++j) y[(p * s.oh + i) * s.ow + j] = avg_pool_at(s, xp, i, j);
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
        if (wd.empty()) continue;
        const T g = dy[(p * s.oh + i) * s.ow + j] / static_cast<T>(wd.divisor);
        for (int64_t ih = wd.h0; ih < wd.h1; ++ih)
          for (int64_t iw = wd.w0; iw < wd.w1; ++iw) dxp[ih * s.w + iw] += g;
      }
  });
}

template <typename T>
void adaptive_fwd(const PoolShape& s, const T* x, T* y) {
  for_planes(s, s.h * s.w + s.oh * s.ow, [&](int64_t p) {
    const T* xp = x + p * s.h * s.w;
    for (int64_t i = 0; i < s.oh; ++i) {  // adaptive_avg_pool_at, with the row bounds hoisted
      const int64_t h0 = adaptive_start(i, s.h, s.oh), h1 = adaptive_end(i, s.h, s.oh);
      for (int64_t j = 0; j < s.ow; ++j)
        y[(p * s.oh + i) * s.ow + j] =
            window_mean(s, xp, h0, h1, adaptive_start(j, s.w, s.ow), adaptive_end(j, s.w, s.ow));
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

// Every entry computes float16 and bfloat16 on float copies (run_widened).
void max_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y, int64_t* idx, Stream) {
  run_widened(t, "max_pool2d", x, s.planes() * s.h * s.w, y, s.planes() * s.oh * s.ow,
              [&](const auto* in, auto* out) { max_fwd(s, in, out, idx); });
}
size_t max_pool2d_bwd_workspace_bytes(const PoolShape&) {
  return 0;
}
// The indices come from the host's memory, so they are checked here (a GPU kernel ignores
// indices outside the plane instead: checking them would make the host wait for the device).
void max_pool2d_bwd(DType t, const PoolShape& s, const void* dy, const int64_t* idx, void* dx,
                    int64_t*, Stream) {
  const int64_t count = s.planes() * s.oh * s.ow;
  for (int64_t i = 0; i < count; ++i)
    EMBER_CHECK_INDEX(idx[i] >= -1 && idx[i] < s.h * s.w, "max_pool2d_backward: index ", idx[i],
                      " out of range for an input plane of ", s.h, "x", s.w);
  run_widened(t, "max_pool2d_backward", dy, count, dx, s.planes() * s.h * s.w,
              [&](const auto* in, auto* out) { max_bwd(s, in, idx, out); });
}
void avg_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y, Stream) {
  run_widened(t, "avg_pool2d", x, s.planes() * s.h * s.w, y, s.planes() * s.oh * s.ow,
              [&](const auto* in, auto* out) { avg_fwd(s, in, out); });
}
void avg_pool2d_bwd(DType t, const PoolShape& s, const void* dy, void* dx, Stream) {
  run_widened(t, "avg_pool2d_backward", dy, s.planes() * s.oh * s.ow, dx, s.planes() * s.h * s.w,
              [&](const auto* in, auto* out) { avg_bwd(s, in, out); });
}
void adaptive_avg_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y, Stream) {
  run_widened(t, "adaptive_avg_pool2d", x, s.planes() * s.h * s.w, y, s.planes() * s.oh * s.ow,
              [&](const auto* in, auto* out) { adaptive_fwd(s, in, out); });
}
void adaptive_avg_pool2d_bwd(DType t, const PoolShape& s, const void* dy, void* dx, Stream) {
  run_widened(t, "adaptive_avg_pool2d_backward", dy, s.planes() * s.oh * s.ow, dx,
              s.planes() * s.h * s.w, [&](const auto* in, auto* out) { adaptive_bwd(s, in, out); });
}

}  // namespace ember::kernels::cpu
