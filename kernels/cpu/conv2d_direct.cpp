// Direct convolution: one output element per loop iteration, summing over its window. Every
// output element is owned by one iteration, so the loops parallelise without atomics and the
// result does not depend on the thread count. The sums are kernels/conv2d_direct_math.h's, which
// the GPU kernels share.
#include "kernels/kernel_table.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/conv2d_direct_math.h"
#include "kernels/cpu/conv2d_direct.h"
#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

// Depthwise (groups == C == K: one filter per channel): each output plane is a 2-D stencil of
// one input plane, computed as a 1-D stencil (Note [Polyphase depthwise]), or for 3x3 filters of
// stride 1 and 2 straight from the input in registers (Note [3x3 depthwise in registers]).
//
// Note [Polyphase depthwise]
// The input plane is copied into a zero-bordered buffer that holds every position a window
// reaches, split by stride into its phases: phase (a, b) holds the bordered rows a, a + sh, ...
// and columns b, b + sw, ..., as a plane of hp x wp. Tap (r, q) of output (oh, ow) then reads
// phase ((r dh) mod sh, (q dw) mod sw) at row oh + (r dh) div sh, column ow + (q dw) div sw: with
// the rows laid out wp apart, output (oh, ow) reads element oh wp + ow + offset(r, q) of the
// phase buffer, whatever the stride or dilation. So every output is a sum of R S products at
// fixed offsets. Each output row is computed a vector of kVec consecutive outputs at a time,
// with the taps inside, and stored (bias added and clamp applied in the registers) straight into
// the output; the last vector of a row stores only the row's own outputs (its other lanes read
// the next row's border or the buffer's slack). For the common 3x3 and 5x5 filters the tap
// count is a constant, so the weights stay in registers across the plane. The border is the
// same for every plane, so each thread zeroes its buffer once and per plane copies in only the
// input's own elements. Sums in conv2d_direct_fwd_at's order: bias, then r, then q.
// Measured on MobileNet-style layers of 32 images on one AVX2 core (3x3 on 192 x 8x8, 144 x
// 16x16, its stride 2, and 96 x 32x32 stride 2): 2.2x, 1.8x, 1.8-2.1x and 1.2x faster than blocks
// of a wide output copied out row by row (docs/conv.md, "Depthwise convolution on the cpu").

// One plane's output rows from its phase buffer `in`, in vectors of kBytes. kTaps: R S when a
// constant, else 0.
template <int kTaps, int kBytes, typename T>
void depthwise_plane(const ConvShape& s, const T* in, const int64_t* offset, const T* wc, T bv,
                     int64_t pitch, const OutputClamp* clamp, T* y) {
  // A vector of GCC's vector extension of kBytes (depthwise_bytes: at most as wide as the
  // build's registers, so that none is split into halves through the integer registers),
  // aligned as T (the loads start anywhere) and allowed to alias T.
  typedef T Vec __attribute__((vector_size(kBytes), aligned(alignof(T)), may_alias));
  constexpr int64_t kVec = kBytes / sizeof(T);
  constexpr int64_t kHeld = kTaps > 0 ? kTaps : 1;
  const int64_t taps = kTaps > 0 ? kTaps : s.r * s.s;
  Vec wv[kHeld];
  int64_t off[kHeld];
  if constexpr (kTaps > 0)
    for (int64_t t = 0; t < kTaps; ++t) {
      wv[t] = Vec{} + wc[t];
      off[t] = offset[t];
    }
  const Vec lo = Vec{} + T(clamp != nullptr ? clamp->lo : 0);
  const Vec hi = Vec{} + T(clamp != nullptr ? clamp->hi : 0);
  auto vector_at = [&](const T* src) {
    Vec a = Vec{} + bv;
    for (int64_t t = 0; t < taps; ++t) {
      if constexpr (kTaps > 0)
        a += *reinterpret_cast<const Vec*>(src + off[t]) * wv[t];
      else
        a += *reinterpret_cast<const Vec*>(src + offset[t]) * wc[t];
    }
    if (clamp != nullptr) {  // clamp_value's order: a NaN passes through
      a = a < lo ? lo : a;
      a = a > hi ? hi : a;
    }
    return a;
  };
  const int64_t full = s.ow / kVec * kVec, rest = s.ow - full;
  for (int64_t oh = 0; oh < s.oh; ++oh) {
    const T* row = in + oh * pitch;
    T* yr = y + oh * s.ow;
    for (int64_t o = 0; o < full; o += kVec)
      *reinterpret_cast<Vec*>(yr + o) = vector_at(row + o);
    if (rest > 0) {
      const Vec a = vector_at(row + full);
      for (int64_t j = 0; j < rest; ++j) yr[full + j] = a[j];
    }
  }
}

// Elements j.. of src to dst while a vector of kBytes fits below n, then the same with vectors
// of half the size, down to 16 bytes; j ends at the first element not copied. The empty asm hides
// the loop's counter from GCC, which otherwise turns the loop into a call to memmove.
template <int kBytes, typename T>
inline void copy_vectors(const T* src, int64_t n, T* dst, int64_t& j) {
  typedef T Vec __attribute__((vector_size(kBytes), aligned(alignof(T)), may_alias));
  constexpr int64_t kVec = kBytes / sizeof(T);
  for (; j + kVec <= n; j += kVec) {
    *reinterpret_cast<Vec*>(dst + j) = *reinterpret_cast<const Vec*>(src + j);
    asm("" : "+r"(j));
  }
  if constexpr (kBytes > 16) copy_vectors<kBytes / 2>(src, n, dst, j);
}

// n elements from src to dst, as few vectors as fit, then one at a time: rows of a few vectors,
// where a call to memmove cost as much as the copy (15% of an 8x8 plane's time). A row of 8
// floats is one store of 32 bytes on AVX-512 too, so that a load of it can be forwarded.
template <typename T>
inline void copy_short(const T* src, int64_t n, T* dst) {
  int64_t j = 0;
  copy_vectors<kVectorBytes>(src, n, dst, j);
  for (; j < n; ++j) {
    dst[j] = src[j];
    asm("" : "+r"(j));
  }
}

// f(std::integral_constant<int, bytes>{}): `bytes` one of the vector widths the build has (16, 32
// and with AVX-512 64), as a constant a kernel's template can take.
template <typename F>
auto at_vector_width(int bytes, F&& f) {
  if constexpr (kVectorBytes >= 64)
    if (bytes == 64) return f(std::integral_constant<int, 64>{});
  if constexpr (kVectorBytes >= 32)
    if (bytes == 32) return f(std::integral_constant<int, 32>{});
  return f(std::integral_constant<int, 16>{});
}

// The vector width in bytes for a depthwise plane of `ow` output columns: the build's widest,
// halved (down to 16 bytes) while half of it still holds a row. Lanes past a row's end are
// wasted work: on AVX-512, 16-lane strips over 8x8 planes took 5x the time of 8-lane ones, and
// 4-lane strips over 7x7 planes (two a row) 1.5x that of 8-lane ones.
template <typename T>
int depthwise_bytes(int64_t ow) {
  int bytes = kVectorBytes;
  while (bytes > 16 && bytes / 2 / static_cast<int64_t>(sizeof(T)) >= ow) bytes /= 2;
  return bytes;
}

// even[k] = src[2k], odd[k] = src[2k + 1] for k < n: a stride-2 row split into its two phases,
// two vectors in and two out at a time.
template <typename Vec, size_t... I>
inline Vec even_lanes(Vec a, Vec b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (2 * I)...);
}
template <typename Vec, size_t... I>
inline Vec odd_lanes(Vec a, Vec b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (2 * I + 1)...);
}
// The even and odd lanes of the 2 kVec elements a, b (a first): a stride-2 row split into its
// two phases.
template <typename Vec>
inline void split_phases(Vec a, Vec b, Vec* even, Vec* odd) {
  constexpr size_t kVec = sizeof(Vec) / sizeof(a[0]);
  if constexpr (kVec == 8 && sizeof(a[0]) == 4) {
    // AVX's floats: a shuffle within each 128-bit half, then the four pairs into order (two
    // instructions a vector, where the one-step shuffle took three).
    const Vec e = __builtin_shufflevector(a, b, 0, 2, 8, 10, 4, 6, 12, 14);
    const Vec o = __builtin_shufflevector(a, b, 1, 3, 9, 11, 5, 7, 13, 15);
    *even = __builtin_shufflevector(e, e, 0, 1, 4, 5, 2, 3, 6, 7);
    *odd = __builtin_shufflevector(o, o, 0, 1, 4, 5, 2, 3, 6, 7);
  } else {
    constexpr auto lanes = std::make_index_sequence<kVec>();
    *even = even_lanes(a, b, lanes);
    *odd = odd_lanes(a, b, lanes);
  }
}

// even[k] = src[2k], odd[k] = src[2k + 1] for k < n, two vectors in and two out at a time.
template <typename T>
inline void deinterleave(const T* src, int64_t n, T* even, T* odd) {
  typedef T Vec __attribute__((vector_size(kVectorBytes), aligned(alignof(T)), may_alias));
  constexpr int64_t kVec = kVectorBytes / sizeof(T);
  int64_t k = 0;
  for (; k + kVec <= n; k += kVec)
    split_phases(*reinterpret_cast<const Vec*>(src + 2 * k),
                 *reinterpret_cast<const Vec*>(src + 2 * k + kVec),
                 reinterpret_cast<Vec*>(even + k), reinterpret_cast<Vec*>(odd + k));
  for (; k < n; ++k) {
    even[k] = src[2 * k];
    odd[k] = src[2 * k + 1];
  }
}

// Note [3x3 depthwise in registers]
// A 3x3 depthwise filter of stride 1 or 2 with one column of padding each side (the layers of
// MobileNet-style networks) reads input columns st ow - 1, st ow and st ow + 1 for output ow.
// The plane is done in strips of kVec output columns, top to bottom, straight from x: no copy of
// the plane into a bordered buffer, whose stores the next loads would wait on (a load that spans
// two stores is not forwarded). For a strip of the outputs from ow = kVec j, the taps of one
// input row are
// - stride 1: the vectors at columns kVec j - 1, kVec j and kVec j + 1;
// - stride 2: the 2 kVec columns from 2 kVec j, loaded as two vectors, hold columns 2 ow in
//   their even lanes and 2 ow + 1 in their odd lanes (split_phases); columns 2 ow - 1 are the
//   even lanes of the two vectors one column earlier;
// and at the plane's edges the padding's zeros come in by moving lanes: in the first strip the
// left taps are the middle (stride 1) or right (stride 2) taps moved up one lane, and at stride 1
// a strip ending at the row's end has its right taps the middle ones moved down one lane. A strip
// whose loads would run past the row's end otherwise has the lanes past it zeroed after the
// loads, or, where the loads would run past the end of x, is copied first into a buffer holding
// zeros there. Rows outside the input are zeros. The input rows that two output rows share stay in
// registers. Sums in conv2d_direct_fwd_at's order.
template <typename Vec, size_t... I>
inline Vec up_one_lane(Vec v, std::index_sequence<I...>) {  // {0, v[0], ..., v[kVec - 2]}
  return __builtin_shufflevector(Vec{}, v, (I + sizeof...(I) - 1)...);
}
template <typename Vec, size_t... I>
inline Vec down_one_lane(Vec v, std::index_sequence<I...>) {  // {v[1], ..., v[kVec - 1], 0}
  return __builtin_shufflevector(v, Vec{}, (I + 1)...);
}

// The column stride (1 or 2) of a convolution that Note [3x3 depthwise in registers] takes, or 0.
// Stride 1 only for rows of up to two strips: strip after strip down a wider plane was slower
// than the phase buffer's row after row (16 planes of 32x32 on AVX2: 0.30 against 0.26 ms at
// batch 32, where planes of 8x8 went 0.42 -> 0.27 ms and of 16x16 0.76 -> 0.66 ms).
template <typename T>
int64_t depthwise3x3_stride(const ConvShape& s) {
  const int64_t lanes = depthwise_bytes<T>(s.ow) / static_cast<int64_t>(sizeof(T));
  const bool applies = s.r == 3 && s.s == 3 && s.stride_h == s.stride_w && s.dil_h == 1 &&
                       s.dil_w == 1 && s.pad_w == 1 &&
                       (s.stride_w == 2 || (s.stride_w == 1 && s.ow <= 2 * lanes));
  return applies ? s.stride_w : 0;
}

// {0, 1, ..., kVec - 1}: each lane's index, as T.
template <typename Vec, size_t... I>
inline Vec lane_indices(std::index_sequence<I...>) {
  return Vec{static_cast<decltype(Vec{}[0] + 0)>(I)...};
}

// One plane of a convolution that depthwise3x3_stride gives kStride, in vectors of kBytes
// (depthwise_bytes): xp its input, x_end the end of the whole input, y its output. `tail` holds
// 2 kVec + 1 elements that are zero past the last strip's input.
template <int kStride, int kBytes, typename T>
void depthwise3x3_plane(const ConvShape& s, const T* xp, const T* x_end, const T* wc, T bv,
                        const OutputClamp* clamp, T* tail, T* y) {
  typedef T Vec __attribute__((vector_size(kBytes), aligned(alignof(T)), may_alias));
  constexpr int64_t kVec = kBytes / sizeof(T);
  constexpr auto lanes = std::make_index_sequence<kVec>();
  // The input columns a strip's loads reach from its first one (the left taps' one before it).
  constexpr int64_t kSpan = kStride == 1 ? kVec + 1 : 2 * kVec;
  struct Taps {
    Vec left, mid, right;  // input columns st ow - 1, st ow, st ow + 1
  };
  auto load = [](const T* p) { return *reinterpret_cast<const Vec*>(p); };
  const Vec lane = lane_indices<Vec>(lanes);
  Vec wv[9];
  for (int t = 0; t < 9; ++t) wv[t] = Vec{} + wc[t];
  const Vec lo = Vec{} + T(clamp != nullptr ? clamp->lo : 0);
  const Vec hi = Vec{} + T(clamp != nullptr ? clamp->hi : 0);
  const int64_t strips = (s.ow + kVec - 1) / kVec;
  for (int64_t j = 0; j < strips; ++j) {
    const int64_t col = kStride * kVec * j;  // the strip's first input column
    // Stride 1: a strip of whole vectors that ends at the row's end needs no copy.
    const bool ends_row = kStride == 1 && col + kVec == s.w;
    const bool staged = col + kSpan > s.w && !ends_row;
    auto taps_of = [&](int64_t i) {  // the taps of input row i
      if (i < 0 || i >= s.h) return Taps{Vec{}, Vec{}, Vec{}};
      const T* p = xp + i * s.w + col;
      // A strip reaching past its row: whole vectors loaded and the lanes past the row zeroed,
      // where the loads stay inside x; else the row's part copied into `tail`, whose stores the
      // loads then wait on (a third of the time of 7x7 planes).
      const bool masked = staged && p + kSpan <= x_end;
      if (staged && !masked) {
        tail[0] = j > 0 ? p[-1] : T(0);
        copy_short(p, s.w - col, tail + 1);
        p = tail + 1;
      }
      auto at = [&](int64_t o) {  // the vector of input columns col + o, ...
        const Vec v = load(p + o);
        return masked ? (lane < Vec{} + T(s.w - col - o) ? v : Vec{}) : v;
      };
      Taps t;
      if constexpr (kStride == 1) {
        t.mid = at(0);
        t.left = j == 0 ? up_one_lane(t.mid, lanes) : at(-1);
        t.right = ends_row ? down_one_lane(t.mid, lanes) : at(1);
      } else {
        split_phases(at(0), at(kVec), &t.mid, &t.right);
        Vec unused;
        if (j == 0)
          t.left = up_one_lane(t.right, lanes);
        else
          split_phases(at(-1), at(kVec - 1), &t.left, &unused);
      }
      return t;
    };
    auto add = [&](Vec a, const Taps& t, const Vec* w) {
      a += t.left * w[0];
      a += t.mid * w[1];
      a += t.right * w[2];
      return a;
    };
    const int64_t outputs = std::min(kVec, s.ow - kVec * j);
    // Output row oh reads input rows st oh - pad_h + {0, 1, 2}: at stride 1 the next output row
    // shares two of them, at stride 2 one.
    Taps top = taps_of(-s.pad_h), mid = kStride == 1 ? taps_of(1 - s.pad_h) : Taps{};
    for (int64_t oh = 0; oh < s.oh; ++oh) {
      const int64_t i = kStride * oh - s.pad_h;
      if constexpr (kStride == 2) mid = taps_of(i + 1);
      const Taps bottom = taps_of(i + 2);
      Vec a = add(add(add(Vec{} + bv, top, wv), mid, wv + 3), bottom, wv + 6);
      if (clamp != nullptr) {  // clamp_value's order: a NaN passes through
        a = a < lo ? lo : a;
        a = a > hi ? hi : a;
      }
      T* yr = y + oh * s.ow + kVec * j;
      if (outputs == kVec)
        *reinterpret_cast<Vec*>(yr) = a;
      else
        for (int64_t o = 0; o < outputs; ++o) yr[o] = a[o];
      if constexpr (kStride == 1) {
        top = mid;
        mid = bottom;
      } else {
        top = bottom;
      }
    }
  }
}

template <typename T>
void fwd_depthwise(const ConvShape& s, const T* x, const T* w, const T* bias, T* y,
                   const OutputClamp* clamp) {
  constexpr int64_t kVec = kVectorBytes / sizeof(T);
  const int64_t sh = s.stride_h, sw = s.stride_w;
  // The bordered plane: rows and columns from -pad up to the last one a window reaches.
  const int64_t ph = (s.oh - 1) * sh + (s.r - 1) * s.dil_h + 1;
  const int64_t pw = (s.ow - 1) * sw + (s.s - 1) * s.dil_w + 1;
  const int64_t hp = (ph + sh - 1) / sh, wp = (pw + sw - 1) / sw;  // one phase
  // A phase's rows lie `pitch` apart: for stride 2, wp rounded up to whole vectors, so that a
  // bordered row splits into its two phases a whole vector at a time (the columns from wp on are
  // slack that only the lanes past a row's outputs read).
  const int64_t pitch = sw == 2 ? (wp + kVec - 1) / kVec * kVec : wp;
  const int64_t phase = hp * pitch;
  std::vector<int64_t> offset(static_cast<size_t>(s.r * s.s));
  for (int64_t r = 0; r < s.r; ++r)
    for (int64_t q = 0; q < s.s; ++q) {
      const int64_t dr = r * s.dil_h, dq = q * s.dil_w;
      offset[r * s.s + q] = ((dr % sh) * sw + dq % sw) * phase + (dr / sh) * pitch + dq / sw;
    }
  // A row's last vector reads at most kVec - 1 elements past the row's window, so past the last
  // phase by less than a vector.
  const int64_t buffer = sh * sw * phase + kVec;
  // The input rows and columns that land inside the bordered plane.
  const int64_t i0 = std::max<int64_t>(0, -s.pad_h), i1 = std::min(s.h, ph - s.pad_h);
  const int64_t c0 = std::max<int64_t>(0, -s.pad_w), c1 = std::min(s.w, pw - s.pad_w);
  const int64_t taps = s.r * s.s;
  // Where each input row i0 <= i < i1 goes in the phase buffer (computed once: a division per
  // row and plane cost a third of an 8x8 plane's time).
  std::vector<int64_t> row_at(static_cast<size_t>(std::max<int64_t>(i1 - i0, 0)));
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t bi = i + s.pad_h;  // the bordered row
    row_at[i - i0] = (bi % sh) * sw * phase + (bi / sh) * pitch;
  }
  // Stride 2: the input rows are first copied into a bordered plane (rows 2 pitch apart), all of
  // them before any is split, so that the splits' loads do not wait on the copies' stores.
  const int64_t bordered = sw == 2 ? ph * 2 * pitch : 0;
  // Stride sw > 2: the columns of phase b that come from the input, b + sw j - pad_w in [c0, c1).
  std::vector<int64_t> j0(static_cast<size_t>(sw)), j1(static_cast<size_t>(sw));
  for (int64_t b = 0; b < sw; ++b) {
    auto first_at = [&](int64_t col) {  // the first j with b + sw j - pad_w >= col
      return std::max<int64_t>(0, (col + s.pad_w - b + sw - 1) / sw);
    };
    j0[b] = first_at(c0);
    j1[b] = std::min(wp, std::max(j0[b], first_at(c1)));
  }
  const int64_t in_registers = depthwise3x3_stride<T>(s);  // 0: through the phase buffer
  // The plane's kernel at its vector width: in registers, else from the phase buffer with the
  // tap count a constant for 3x3 and 5x5 filters.
  using InRegisters = void (*)(const ConvShape&, const T*, const T*, const T*, T,
                               const OutputClamp*, T*, T*);
  using FromBuffer = void (*)(const ConvShape&, const T*, const int64_t*, const T*, T, int64_t,
                              const OutputClamp*, T*);
  InRegisters plane3x3 = nullptr;
  FromBuffer plane = nullptr;
  at_vector_width(depthwise_bytes<T>(s.ow), [&](auto width) {
    constexpr int kBytes = decltype(width)::value;
    if (in_registers == 1) plane3x3 = depthwise3x3_plane<1, kBytes, T>;
    if (in_registers == 2) plane3x3 = depthwise3x3_plane<2, kBytes, T>;
    plane = taps == 9    ? depthwise_plane<9, kBytes, T>
            : taps == 25 ? depthwise_plane<25, kBytes, T>
                         : depthwise_plane<0, kBytes, T>;
  });
  const T* const x_end = x + s.n * s.c * s.h * s.w;
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel if (par)
  {
    std::vector<T> in(static_cast<size_t>(in_registers > 0 ? 0 : buffer), T(0));
    std::vector<T> bp(static_cast<size_t>(in_registers > 0 ? 0 : bordered), T(0));
    std::vector<T> tail(static_cast<size_t>(in_registers > 0 ? 2 * kVec + 1 : 0), T(0));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < s.n * s.c; ++p) {
      const int64_t c = p % s.c;
      const T* xp = x + p * s.h * s.w;
      if (in_registers > 0) {
        const T* wc = w + c * s.r * s.s;
        const T bv = bias != nullptr ? bias[c] : T(0);
        T* yp = y + p * s.oh * s.ow;
        plane3x3(s, xp, x_end, wc, bv, clamp, tail.data(), yp);
        continue;
      }
      if (sw == 2) {
        for (int64_t i = i0; i < i1; ++i) {
          T* dst = bp.data() + (i + s.pad_h) * 2 * pitch + s.pad_w;
          copy_short(xp + i * s.w + c0, c1 - c0, dst + c0);
        }
        for (int64_t i = i0; i < i1; ++i) {
          T* dst = in.data() + row_at[i - i0];
          deinterleave(bp.data() + (i + s.pad_h) * 2 * pitch, pitch, dst, dst + phase);
        }
      } else {
        for (int64_t i = i0; i < i1; ++i) {
          T* dst = in.data() + row_at[i - i0];
          const T* src = xp + i * s.w;
          if (sw == 1) {
            copy_short(src + c0, c1 - c0, dst + c0 + s.pad_w);
            continue;
          }
          for (int64_t b = 0; b < sw; ++b) {
            T* db = dst + b * phase;
            const T* sb = src + b - s.pad_w;
            for (int64_t j = j0[b]; j < j1[b]; ++j) db[j] = sb[sw * j];
          }
        }
      }
      const T* wc = w + c * taps;
      const T bv = bias != nullptr ? bias[c] : T(0);
      T* yp = y + p * s.oh * s.ow;
      plane(s, in.data(), offset.data(), wc, bv, pitch, clamp, yp);
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
