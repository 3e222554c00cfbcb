// The shared-memory FFTs of the FFT convolution (kernels/cuda/conv2d_fft.cu): complex numbers, a
// twiddle table, batched in-place radix-2 transforms and the 2-D real-to-complex transform of one
// n x n tile into its half spectrum (n x (n/2 + 1) complex numbers) and back. Every function is
// called by all threads of a block and ends with a barrier, so its results are visible to all.
// Included by .cu files after kernels/cuda/compat.h.
//
// Conventions: X[k] = sum_j x[j] exp(-2 pi i jk / n) forward; the inverse uses exp(+2 pi i jk / n)
// and does not divide by n (the caller scales once, by 1/n^2, for a 2-D round trip).
#pragma once

#include <cmath>

namespace ember::kernels::EMBER_KERNEL_NS::fft {

template <typename T>
struct alignas(2 * sizeof(T)) Complex {
  T re, im;
};

template <typename T>
__device__ __forceinline__ Complex<T> operator+(Complex<T> a, Complex<T> b) {
  return {a.re + b.re, a.im + b.im};
}
template <typename T>
__device__ __forceinline__ Complex<T> operator-(Complex<T> a, Complex<T> b) {
  return {a.re - b.re, a.im - b.im};
}
template <typename T>
__device__ __forceinline__ Complex<T> operator*(Complex<T> a, Complex<T> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
// acc + a * conj(b), the product of a correlation's spectra (the filter's conjugated), as four
// explicit fused multiply-adds, real part first: compilers contract a * b + c into an FMA where
// they choose, and may choose differently in an unrolled loop's body and its remainder, which would
// make a sum's rounding depend on how its terms are chunked.
__device__ __forceinline__ float fused(float a, float b, float c) {
  return fmaf(a, b, c);
}
__device__ __forceinline__ double fused(double a, double b, double c) {
  return fma(a, b, c);
}
template <typename T>
__device__ __forceinline__ Complex<T> mul_conj_add(Complex<T> acc, Complex<T> a, Complex<T> b) {
  return {fused(a.im, b.im, fused(a.re, b.re, acc.re)),
          fused(-a.re, b.im, fused(a.im, b.re, acc.im))};
}
template <typename T>
__device__ __forceinline__ Complex<T> conj(Complex<T> a) {
  return {a.re, -a.im};
}

// Shared memory of one 2-D transform of an n x n tile: the tile's rows packed in pairs
// (n/2 x n), its half spectrum (n x (n/2 + 1)) and the twiddles (n/2).
__host__ __device__ constexpr int shared_elements(int n) {
  return n / 2 * n + n * (n / 2 + 1) + n / 2;
}

// The twiddle table: tw[j] = exp(-2 pi i j / n) for j < n/2, computed in double and rounded to T
// once, so every transform uses correctly rounded factors (no recurrence that accumulates error).
template <typename T>
__device__ void load_twiddles(Complex<T>* tw, int n) {
  const double kTwoPi = 6.283185307179586476925286766559;
  for (int j = threadIdx.x; j < n / 2; j += blockDim.x) {
    const double angle = -kTwoPi * j / n;
    tw[j] = {static_cast<T>(cos(angle)), static_cast<T>(sin(angle))};
  }
}

// The index i with its low `bits` bits in reverse order.
__device__ __forceinline__ int bit_reverse(int i, int bits) {
  int r = 0;
  for (int b = 0; b < bits; ++b, i >>= 1) r = (r << 1) | (i & 1);
  return r;
}

// `count` in-place transforms of length n = 2^log2n, element i of transform t at
// data[t * tstride + i * estride]: decimation in time (Cooley-Tukey), radix 4 while two stages
// remain, then one radix-2 stage when log2 n is odd (16 points: 2 stages, 32: 3, 64: 3; one
// barrier each).
// requires: tw holds the n/2 twiddles of load_twiddles(n), visible to every thread.
template <typename T>
__device__ void fft_batch(Complex<T>* data, int count, int log2n, int tstride, int estride,
                          const Complex<T>* tw, bool inverse) {
  const int n = 1 << log2n, half = n / 2;
  // 1. Bit reversal: element i trades places with element bitrev(i), each pair swapped once.
  for (int idx = threadIdx.x; idx < count * n; idx += blockDim.x) {
    const int i = idx & (n - 1), r = bit_reverse(i, log2n);
    if (i < r) {
      Complex<T>* p = data + (idx >> log2n) * tstride;
      const Complex<T> a = p[i * estride];
      p[i * estride] = p[r * estride];
      p[r * estride] = a;
    }
  }
  __syncthreads();
  // 2. Radix-4 stages. The stage of span h merges four transforms of length h into one of 4h:
  //    for j < h, the two radix-2 stages of spans h and 2h on x_q = a[j + q h] at once,
  //      b0, b1 = x0 +- W_2h^j x1,   b2, b3 = x2 +- W_2h^j x3,
  //      y0, y2 = b0 +- W_4h^j b2,   y1, y3 = b1 +- W_4h^(j+h) b3,  W_4h^(j+h) = -i W_4h^j,
  //    W_m = exp(-2 pi i / m) (conjugated, and +i, for the inverse): the multiply by -i is a
  //    swap, the radix-4 saving, and the two stages need one barrier.
  int h = 1;
  for (; 4 * h <= n; h *= 4) {
    const int quarter = n / 4, step1 = n / (2 * h), step2 = n / (4 * h);
    for (int idx = threadIdx.x; idx < count * quarter; idx += blockDim.x) {
      const int b = idx & (quarter - 1), j = b & (h - 1);
      const int i0 = (b - j) * 4 + j;  // group b / h starts at (b / h) * 4h
      Complex<T>* p = data + (idx >> (log2n - 2)) * tstride;
      Complex<T> w1 = tw[j * step1], w2 = tw[j * step2];
      if (inverse) w1 = conj(w1), w2 = conj(w2);
      const Complex<T> x0 = p[i0 * estride], x1 = p[(i0 + h) * estride] * w1;
      const Complex<T> x2 = p[(i0 + 2 * h) * estride], x3 = p[(i0 + 3 * h) * estride] * w1;
      const Complex<T> b0 = x0 + x1, b1 = x0 - x1, b2 = (x2 + x3) * w2, b3 = (x2 - x3) * w2;
      // -i b3 forward, +i b3 inverse.
      const Complex<T> r3 = inverse ? Complex<T>{-b3.im, b3.re} : Complex<T>{b3.im, -b3.re};
      p[i0 * estride] = b0 + b2;
      p[(i0 + h) * estride] = b1 + r3;
      p[(i0 + 2 * h) * estride] = b0 - b2;
      p[(i0 + 3 * h) * estride] = b1 - r3;
    }
    __syncthreads();
  }
  // 3. A last radix-2 stage when log2 n is odd: span h merges transforms of length h into ones
  //    of length 2h: for j < h, (u, v) = (a[j], a[j + h] * W_2h^j) becomes (u + v, u - v).
  for (; h < n; h *= 2) {
    const int step = n / (2 * h);
    for (int idx = threadIdx.x; idx < count * half; idx += blockDim.x) {
      const int b = idx & (half - 1), j = b & (h - 1);
      const int i0 = (b - j) * 2 + j;  // group b / h starts at (b / h) * 2h
      Complex<T>* p = data + (idx >> (log2n - 1)) * tstride;
      Complex<T> w = tw[j * step];
      if (inverse) w = conj(w);
      const Complex<T> u = p[i0 * estride], v = p[(i0 + h) * estride] * w;
      p[i0 * estride] = u + v;
      p[(i0 + h) * estride] = u - v;
    }
    __syncthreads();
  }
}

// The half spectrum of the real n x n tile load(y, x): spec[fy * (n/2 + 1) + fx] = sum over y, x
// of tile[y][x] exp(-2 pi i (fy y + fx x) / n), for fx <= n/2 (the rest is its conjugate mirror).
// Rows first: rows 2j and 2j+1 travel as one complex row z = a + i b through one transform, and
// are separated afterwards (A[k] = (Z[k] + conj Z[n-k]) / 2, B[k] = (Z[k] - conj Z[n-k]) / 2i);
// then the n/2 + 1 columns.
// requires: tw loaded for n; rows and spec as shared_elements() lays them out.
template <typename T, typename Load>
__device__ void forward_2d(int log2n, Load load, Complex<T>* rows, Complex<T>* spec,
                           const Complex<T>* tw) {
  const int n = 1 << log2n, half = n / 2, width = half + 1;
  // 1. Pack row pairs.
  for (int idx = threadIdx.x; idx < half * n; idx += blockDim.x) {
    const int j = idx >> log2n, x = idx & (n - 1);
    rows[idx] = {load(2 * j, x), load(2 * j + 1, x)};
  }
  __syncthreads();
  // 2. Row transforms.
  fft_batch(rows, half, log2n, n, 1, tw, false);
  // 3. Separate the pairs into the half spectra of rows 2j and 2j+1.
  for (int idx = threadIdx.x; idx < half * width; idx += blockDim.x) {
    const int j = idx / width, k = idx % width;
    const Complex<T> z = rows[j * n + k], zm = rows[j * n + ((n - k) & (n - 1))];
    const T h = T(0.5);
    spec[2 * j * width + k] = {(z.re + zm.re) * h, (z.im - zm.im) * h};
    spec[(2 * j + 1) * width + k] = {(z.im + zm.im) * h, (zm.re - z.re) * h};
  }
  __syncthreads();
  // 4. Column transforms.
  fft_batch(spec, width, log2n, 1, width, tw, false);
}

// The inverse of forward_2d, times n^2: from the half spectrum in `spec` (overwritten), the real
// tile, row y at rows[(y / 2) * n + x].re for even y and .im for odd y. Columns first; then rows
// 2j and 2j+1, whose spectra are Hermitian (A[n-k] = conj A[k]), travel as Z = A + i B through one
// inverse transform, whose real and imaginary parts are the two rows. The imaginary parts of the
// bins 0 and n/2, zero in exact arithmetic, are dropped, as a real inverse transform does.
// requires: tw loaded for n; spec holds the spectrum, visible to every thread.
template <typename T>
__device__ void inverse_2d(int log2n, Complex<T>* rows, Complex<T>* spec, const Complex<T>* tw) {
  const int n = 1 << log2n, half = n / 2, width = half + 1;
  // 1. Column transforms.
  fft_batch(spec, width, log2n, 1, width, tw, true);
  // 2. Pack the row pairs' full spectra.
  for (int idx = threadIdx.x; idx < half * n; idx += blockDim.x) {
    const int j = idx >> log2n, k = idx & (n - 1);
    const bool mirrored = k > half;
    const int kk = mirrored ? n - k : k;
    Complex<T> a = spec[2 * j * width + kk], b = spec[(2 * j + 1) * width + kk];
    if (mirrored) a = conj(a), b = conj(b);
    if (kk == 0 || kk == half) a.im = T(0), b.im = T(0);
    rows[idx] = {a.re - b.im, a.im + b.re};
  }
  __syncthreads();
  // 3. Row transforms.
  fft_batch(rows, half, log2n, n, 1, tw, true);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS::fft
