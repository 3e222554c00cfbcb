#include "kernels/kernel_table.h"

#include <cmath>
#include <limits>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {

namespace {

// Columns of one outer block processed together when inner > 1, so that reads along the
// softmax dim stay contiguous across the chunk.
constexpr int64_t kChunk = 64;

template <typename T>
void fwd_row(int64_t d, bool log, const T* x, T* y) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < d; ++i) m = std::max(m, x[i]);
  if (std::isinf(m) && m < 0) m = 0;  // all -inf: avoid inf - inf
  double s = 0;
  if (log) {
    for (int64_t i = 0; i < d; ++i) s += std::exp(x[i] - m);
    const T lse = static_cast<T>(m + std::log(s));
    for (int64_t i = 0; i < d; ++i) y[i] = x[i] - lse;
  } else {
    for (int64_t i = 0; i < d; ++i) {
      y[i] = std::exp(x[i] - m);
      s += y[i];
    }
    const T inv = static_cast<T>(1.0 / s);
    for (int64_t i = 0; i < d; ++i) y[i] *= inv;
  }
}

template <typename T>
void bwd_row(int64_t d, bool log, const T* y, const T* dy, T* dx) {
  double s = 0;
  if (log) {
    for (int64_t i = 0; i < d; ++i) s += dy[i];
    const T ts = static_cast<T>(s);
    for (int64_t i = 0; i < d; ++i) dx[i] = dy[i] - std::exp(y[i]) * ts;
  } else {
    for (int64_t i = 0; i < d; ++i) s += static_cast<double>(dy[i]) * y[i];
    const T ts = static_cast<T>(s);
    for (int64_t i = 0; i < d; ++i) dx[i] = y[i] * (dy[i] - ts);
  }
}

// Columns [j0, j0 + w) of outer block o, stride `inner` along the dim.
template <typename T>
void fwd_cols(const SoftmaxShape& sh, bool log, int64_t w, const T* x, T* y) {
  const int64_t d = sh.dim, st = sh.inner;
  T m[kChunk];
  double s[kChunk];
  for (int64_t j = 0; j < w; ++j) m[j] = -std::numeric_limits<T>::infinity(), s[j] = 0;
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < w; ++j) m[j] = std::max(m[j], x[i * st + j]);
  for (int64_t j = 0; j < w; ++j)
    if (std::isinf(m[j]) && m[j] < 0) m[j] = 0;
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < w; ++j) {
      const T e = std::exp(x[i * st + j] - m[j]);
      s[j] += e;
      if (!log) y[i * st + j] = e;
    }
  for (int64_t j = 0; j < w; ++j) s[j] = log ? m[j] + std::log(s[j]) : 1.0 / s[j];
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < w; ++j) {
      if (log)
        y[i * st + j] = x[i * st + j] - static_cast<T>(s[j]);
      else
        y[i * st + j] *= static_cast<T>(s[j]);
    }
}

template <typename T>
void bwd_cols(const SoftmaxShape& sh, bool log, int64_t w, const T* y, const T* dy, T* dx) {
  const int64_t d = sh.dim, st = sh.inner;
  double s[kChunk] = {};
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < w; ++j)
      s[j] += log ? static_cast<double>(dy[i * st + j])
                  : static_cast<double>(dy[i * st + j]) * y[i * st + j];
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < w; ++j) {
      const int64_t k = i * st + j;
      const T ts = static_cast<T>(s[j]);
      dx[k] = log ? dy[k] - std::exp(y[k]) * ts : y[k] * (dy[k] - ts);
    }
}

// Runs body(o, j0, w) over every outer block o and column chunk [j0, j0 + w), in parallel when
// the tensor is large.
template <typename F>
void for_tasks(const SoftmaxShape& sh, F&& body) {
  const int64_t chunks = sh.inner == 1 ? 1 : (sh.inner + kChunk - 1) / kChunk;
  const int64_t tasks = sh.outer * chunks;
  const bool par = sh.outer * sh.dim * sh.inner >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (par)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t o = t / chunks, j0 = (t % chunks) * kChunk;
    body(o, j0, std::min(kChunk, sh.inner - j0));
  }
}

template <typename T>
void fwd(const SoftmaxShape& sh, bool log, const T* x, T* y) {
  for_tasks(sh, [&](int64_t o, int64_t j0, int64_t w) {
    const int64_t base = o * sh.dim * sh.inner + j0;
    if (sh.inner == 1)
      fwd_row(sh.dim, log, x + base, y + base);
    else
      fwd_cols(sh, log, w, x + base, y + base);
  });
}

template <typename T>
void bwd(const SoftmaxShape& sh, bool log, const T* y, const T* dy, T* dx) {
  for_tasks(sh, [&](int64_t o, int64_t j0, int64_t w) {
    const int64_t base = o * sh.dim * sh.inner + j0;
    if (sh.inner == 1)
      bwd_row(sh.dim, log, y + base, dy + base, dx + base);
    else
      bwd_cols(sh, log, w, y + base, dy + base, dx + base);
  });
}

}  // namespace

// float16 and bfloat16 run the float kernel on float copies and round once into the output.
void softmax_fwd(DType t, const SoftmaxShape& shape, bool log, const void* x, void* y, Stream) {
  const int64_t n = shape.outer * shape.dim * shape.inner;
  run_widened(t, log ? "log_softmax" : "softmax", x, n, y, n,
              [&](const auto* in, auto* out) { fwd(shape, log, in, out); });
}

void softmax_bwd(DType t, const SoftmaxShape& shape, bool log, const void* y, const void* dy,
                 void* dx, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, log ? "log_softmax_backward" : "softmax_backward", [&] {
    const auto* ys = static_cast<const scalar_t*>(y);
    const auto* gs = static_cast<const scalar_t*>(dy);
    auto* ds = static_cast<scalar_t*>(dx);
    if constexpr (kIsHalf<scalar_t>) {
      const int64_t n = shape.outer * shape.dim * shape.inner;
      const std::vector<float> yf = float_copy(ys, n), gf = float_copy(gs, n);
      std::vector<float> df(yf.size());
      bwd<float>(shape, log, yf.data(), gf.data(), df.data());
      round_into(df, ds);
    } else {
      bwd<scalar_t>(shape, log, ys, gs, ds);
    }
  });
}

}  // namespace ember::kernels::cpu
