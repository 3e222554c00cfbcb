// Winograd convolution F(m x m, 3 x 3) (Lavin & Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2015): the transform matrices as the paper's tables and the three per-tile
// transforms, shared by the CPU kernels (kernels/cpu/conv2d_winograd.cpp) and the GPU kernels
// (kernels/cuda/conv2d_winograd.cu).
//
// Each m x m output tile Y comes from an alpha x alpha input tile d (alpha = m + 2; neighbouring
// tiles overlap by 2) and the 3 x 3 filter g:
//   Y = A^T [ (G g G^T) (.) (B^T d B) ] A
// The non-fused algorithm (its geometry and workspace: kernels/winograd_shape.h) transforms
// every filter once (U = G g G^T), every input tile of every channel once (V = B^T d B),
// multiplies element-wise position by position, which summed over the channels is alpha^2
// independent matrix products M[xi] = U[xi] (K x C) . V[xi] (C x tiles), and transforms M back
// tile by tile (Y = A^T M A).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/winograd_shape.h"
#include "runtime/host_device.h"

// Every loop of the transforms is unrolled, so each coefficient is a constant and the zero
// tests below vanish.
// (nvcc's device pass takes `unroll`; its host pass, which runs no transform, takes neither.)
#if defined(__CUDA_ARCH__)
#define EMBER_WINOGRAD_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define EMBER_WINOGRAD_UNROLL
#else
#define EMBER_WINOGRAD_UNROLL _Pragma("GCC unroll 8")
#endif

namespace ember::kernels {

// F(M x M, 3 x 3)'s tables: B^T (alpha x alpha), G (alpha x 3) and A^T (M x alpha).
template <int M>
struct Winograd;

// F(2x2, 3x3) on the points 0, 1, -1 and infinity, exactly as Lavin & Gray give it.
template <>
struct Winograd<2> {
  static constexpr int kM = 2, kAlpha = 4;
  static constexpr EMBER_HOST_DEVICE double bt(int i, int j) {
    // clang-format off
    constexpr double t[4][4] = {
        {1,  0, -1,  0},
        {0,  1,  1,  0},
        {0, -1,  1,  0},
        {0,  1,  0, -1},
    };
    // clang-format on
    return t[i][j];
  }
  static constexpr EMBER_HOST_DEVICE double g(int i, int j) {
    // clang-format off
    constexpr double t[4][3] = {
        {1.0,   0.0,  0.0},
        {0.5,   0.5,  0.5},
        {0.5,  -0.5,  0.5},
        {0.0,   0.0,  1.0},
    };
    // clang-format on
    return t[i][j];
  }
  static constexpr EMBER_HOST_DEVICE double at(int i, int j) {
    // clang-format off
    constexpr double t[2][4] = {
        {1,  1,  1,  0},
        {0,  1, -1, -1},
    };
    // clang-format on
    return t[i][j];
  }
};

// Note [Winograd points]
// F(4x4, 3x3) needs five finite interpolation points and infinity. Lavin & Gray use
// 0, 1, -1, 2, -2; replacing 2 by 1/2 gives 0, 1, -1, 1/2, -2, whose transforms have smaller
// entries at the far end (A^T's last row 1/8, -8 instead of 8, -8), which shrinks the rounding
// that the largest coefficients amplify. bench/winograd_points.cpp builds both sets (Toom-Cook:
// A^T[i][j] = p_j^i, G[j][k] = p_j^k / prod_{l != j} (p_j - p_l), B^T solved so that the
// product reproduces correlation; for 0, +-1, +-2 that gives Lavin & Gray's tables exactly) and
// runs the kernels' float32 arithmetic (U, V rounded to float, channel sums in float) against
// float64 direct correlation on the same random N(0, 1) data, relative RMS error:
//   points                  C = 64    C = 128   C = 256
//   0, +-1, +-2  (Lavin)    1.77e-6   2.20e-6   3.25e-6
//   0, +-1, 1/2, -2         1.13e-6   1.47e-6   2.03e-6
// (F(2x2, 3x3), for scale: 2.6e-7, 3.4e-7, 4.8e-7.) So F(4x4, 3x3) uses 0, 1, -1, 1/2, -2:
// about a third less error for the same work.
template <>
struct Winograd<4> {
  static constexpr int kM = 4, kAlpha = 6;
  static constexpr EMBER_HOST_DEVICE double bt(int i, int j) {
    // clang-format off
    constexpr double t[6][6] = {
        {1, -1.5, -2.0,  1.5,  1.0, 0},
        {0, -1.0,  0.5,  2.5,  1.0, 0},
        {0,  1.0, -2.5,  0.5,  1.0, 0},
        {0, -2.0, -1.0,  2.0,  1.0, 0},
        {0,  0.5, -1.0, -0.5,  1.0, 0},
        {0,  1.0, -1.5, -2.0,  1.5, 1},
    };
    // clang-format on
    return t[i][j];
  }
  static constexpr EMBER_HOST_DEVICE double g(int i, int j) {
    // clang-format off
    constexpr double t[6][3] = {
        {       1.0,        0.0,        0.0},
        {  1.0 / 3,    1.0 / 3,    1.0 / 3},
        { -1.0 / 3,    1.0 / 3,   -1.0 / 3},
        {-16.0 / 15,  -8.0 / 15,  -4.0 / 15},
        {  1.0 / 15,  -2.0 / 15,   4.0 / 15},
        {       0.0,        0.0,        1.0},
    };
    // clang-format on
    return t[i][j];
  }
  static constexpr EMBER_HOST_DEVICE double at(int i, int j) {
    // clang-format off
    constexpr double t[4][6] = {
        {1,  1,  1,  1.0,    1,  0},
        {0,  1, -1,  0.5,   -2,  0},
        {0,  1,  1,  0.25,   4,  0},
        {0,  1, -1,  0.125, -8,  1},
    };
    // clang-format on
    return t[i][j];
  }
};

// The per-tile transforms, written as the matrix products they are. Zero coefficients are
// skipped (with the loops unrolled the tests are on constants and fold away), so the loops do the
// textbook's additions and no multiplications by 0; the sums run in index order.

// u = G g G^T (alpha x alpha) from the 3 x 3 filter g.
template <int M, typename T>
EMBER_HOST_DEVICE void winograd_filter_transform(const T (&g)[3][3],
                                                 T (&u)[Winograd<M>::kAlpha][Winograd<M>::kAlpha]) {
  using W = Winograd<M>;
  constexpr int A = W::kAlpha;
  T gg[A][3];  // G g
  EMBER_WINOGRAD_UNROLL
  for (int i = 0; i < A; ++i) {
    EMBER_WINOGRAD_UNROLL
    for (int j = 0; j < 3; ++j) {
      T acc = T(0);
      EMBER_WINOGRAD_UNROLL
      for (int k = 0; k < 3; ++k)
        if (W::g(i, k) != 0) acc += T(W::g(i, k)) * g[k][j];
      gg[i][j] = acc;
    }
  }
  EMBER_WINOGRAD_UNROLL
  for (int i = 0; i < A; ++i) {
    EMBER_WINOGRAD_UNROLL
    for (int j = 0; j < A; ++j) {
      T acc = T(0);
      EMBER_WINOGRAD_UNROLL
      for (int k = 0; k < 3; ++k)
        if (W::g(j, k) != 0) acc += gg[i][k] * T(W::g(j, k));
      u[i][j] = acc;
    }
  }
}

// v = B^T d B (alpha x alpha) from the input tile d.
template <int M, typename T>
EMBER_HOST_DEVICE void winograd_input_transform(
    const T (&d)[Winograd<M>::kAlpha][Winograd<M>::kAlpha],
    T (&v)[Winograd<M>::kAlpha][Winograd<M>::kAlpha]) {
  using W = Winograd<M>;
  constexpr int A = W::kAlpha;
  T bd[A][A];  // B^T d
  EMBER_WINOGRAD_UNROLL
  for (int i = 0; i < A; ++i) {
    EMBER_WINOGRAD_UNROLL
    for (int j = 0; j < A; ++j) {
      T acc = T(0);
      EMBER_WINOGRAD_UNROLL
      for (int k = 0; k < A; ++k)
        if (W::bt(i, k) != 0) acc += T(W::bt(i, k)) * d[k][j];
      bd[i][j] = acc;
    }
  }
  EMBER_WINOGRAD_UNROLL
  for (int i = 0; i < A; ++i) {
    EMBER_WINOGRAD_UNROLL
    for (int j = 0; j < A; ++j) {
      T acc = T(0);
      EMBER_WINOGRAD_UNROLL
      for (int k = 0; k < A; ++k)
        if (W::bt(j, k) != 0) acc += bd[i][k] * T(W::bt(j, k));
      v[i][j] = acc;
    }
  }
}

// y = A^T m A (M x M) from the element-wise products summed over the channels.
template <int M, typename T>
EMBER_HOST_DEVICE void winograd_output_transform(
    const T (&m)[Winograd<M>::kAlpha][Winograd<M>::kAlpha], T (&y)[M][M]) {
  using W = Winograd<M>;
  constexpr int A = W::kAlpha;
  T am[M][A];  // A^T m
  EMBER_WINOGRAD_UNROLL
  for (int i = 0; i < M; ++i) {
    EMBER_WINOGRAD_UNROLL
    for (int j = 0; j < A; ++j) {
      T acc = T(0);
      EMBER_WINOGRAD_UNROLL
      for (int k = 0; k < A; ++k)
        if (W::at(i, k) != 0) acc += T(W::at(i, k)) * m[k][j];
      am[i][j] = acc;
    }
  }
  EMBER_WINOGRAD_UNROLL
  for (int i = 0; i < M; ++i) {
    EMBER_WINOGRAD_UNROLL
    for (int j = 0; j < M; ++j) {
      T acc = T(0);
      EMBER_WINOGRAD_UNROLL
      for (int k = 0; k < A; ++k)
        if (W::at(j, k) != 0) acc += am[i][k] * T(W::at(j, k));
      y[i][j] = acc;
    }
  }
}

}  // namespace ember::kernels
