// Winograd convolution F(2x2, 3x3) and F(4x4, 3x3) on the CPU, non-fused (kernels/winograd_math.h
// has the tables and transforms, kernels/winograd_shape.h the geometry and the workspace): four
// passes over the workspace's buffers,
//   1. filter transform   U[xi][o][i] = (G g_oi G^T)[xi]             parallel over o
//   2. input transform    V[xi][i][t] = (B^T d_it B)[xi]             parallel over (i, tiles)
//   3. products           M[xi] = U[xi] (co x ci) . V[xi] (ci x tiles), Eigen, one per thread
//   4. output transform   y tile t of o = A^T M_ot A (+ bias), masked at the edges
// where d_it is tile t of channel i, read with the padding as zeros. Every output element is
// computed by one thread in a fixed order, so the result does not depend on the thread count.
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstring>

#include "kernels/cpu/eigen_product.h"
#include "kernels/cpu/loops.h"
#include "kernels/kernel_table.h"
#include "kernels/winograd_math.h"

namespace ember::kernels::cpu {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Loops with fewer iterations than this many multiply-adds' worth run on the calling thread.
constexpr int64_t kMinParallelWork = 1 << 15;

template <int M, typename T>
void filter_transform(const WinogradGeometry& g, const T* w, T* u) {
  constexpr int A = M + 2;
  const int64_t ci = g.ci, plane = g.co * g.ci;
#pragma omp parallel for schedule(static) if (plane * A * A > kMinParallelWork)
  for (int64_t o = 0; o < g.co; ++o)
    for (int64_t i = 0; i < ci; ++i) {
      T f[3][3], ut[A][A];
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) f[r][s] = w[g.filter_index(o, i, r, s)];
      winograd_filter_transform<M>(f, ut);
      for (int a = 0; a < A; ++a)
        for (int b = 0; b < A; ++b) u[(a * A + b) * plane + o * ci + i] = ut[a][b];
    }
}

// Note [Winograd lanes]: the input and output transforms run on kLanes tiles at once, one tile
// per lane of a vector (GCC's vector extension, one register of the build: kVectorBytes), so the
// textbook's scalar transforms of kernels/winograd_math.h run as vector code; V and M hold
// consecutive tiles contiguously, so each lane group is one vector load or store there, and only
// the image side is gathered or scattered lane by lane.
template <typename E>
struct Lanes {
  static constexpr int kCount = kVectorBytes / sizeof(E);
  typedef E Vec __attribute__((vector_size(kVectorBytes)));
  Vec v;

  Lanes() = default;
  explicit Lanes(double c) : v(Vec{} + E(c)) {}  // every lane c
  Lanes& operator+=(const Lanes& o) {
    v += o.v;
    return *this;
  }
  friend Lanes operator*(const Lanes& a, const Lanes& b) {
    Lanes r;
    r.v = a.v * b.v;
    return r;
  }
};

// Tile t's image and position, stepped tile by tile (no division per lane).
struct TileOrigin {
  int64_t n, ty, tx;
  void next(const WinogradGeometry& g) {
    if (++tx < g.tiles_w) return;
    tx = 0;
    if (++ty < g.tiles_h) return;
    ty = 0, ++n;
  }
};
inline TileOrigin tile_origin(const WinogradGeometry& g, int64_t t) {
  const int64_t per_image = g.tiles_h * g.tiles_w;
  return {t / per_image, t % per_image / g.tiles_w, t % g.tiles_w};
}

template <int M, typename T>
void input_transform(const WinogradGeometry& g, const T* in, T* v) {
  constexpr int A = M + 2, L = Lanes<T>::kCount;
  const int64_t tiles = g.tiles(), plane = g.ci * tiles, chunks = (tiles + L - 1) / L;
#pragma omp parallel for schedule(static) if (plane * A * A > kMinParallelWork)
  for (int64_t job = 0; job < g.ci * chunks; ++job) {
    const int64_t i = job / chunks, t0 = job % chunks * L;
    const int lanes = int(std::min<int64_t>(L, tiles - t0));
    Lanes<T> d[A][A], vt[A][A];
    TileOrigin o = tile_origin(g, t0);
    for (int l = 0; l < L; o.next(g), ++l) {
      if (l >= lanes) {
        for (int a = 0; a < A; ++a)
          for (int b = 0; b < A; ++b) d[a][b].v[l] = T(0);
        continue;
      }
      const T* x = in + (o.n * g.ci + i) * g.h * g.w;
      const int64_t h0 = o.ty * M - g.ph, w0 = o.tx * M - g.pw;
      if (h0 >= 0 && h0 + A <= g.h && w0 >= 0 && w0 + A <= g.w) {
        for (int a = 0; a < A; ++a)
          for (int b = 0; b < A; ++b) d[a][b].v[l] = x[(h0 + a) * g.w + w0 + b];
        continue;
      }
      for (int a = 0; a < A; ++a)
        for (int b = 0; b < A; ++b) {
          const int64_t ih = h0 + a, iw = w0 + b;
          d[a][b].v[l] = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w ? x[ih * g.w + iw] : T(0);
        }
    }
    winograd_input_transform<M>(d, vt);
    T* vi = v + i * tiles + t0;
    for (int a = 0; a < A; ++a)
      for (int b = 0; b < A; ++b) {
        if (lanes == L)  // one vector store
          std::memcpy(vi + (a * A + b) * plane, &vt[a][b].v, sizeof(vt[a][b].v));
        else
          std::memcpy(vi + (a * A + b) * plane, &vt[a][b].v, sizeof(T) * lanes);
      }
  }
}

template <typename T>
void products(const WinogradGeometry& g, const T* u, const T* v, T* m) {
  using Map = Eigen::Map<RowMat<T>>;
  using CMap = Eigen::Map<const RowMat<T>>;
  const int64_t tiles = g.tiles(), positions = g.positions();
  const bool parallel = positions > 1 && g.co * g.ci * tiles > kMinParallelWork;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t xi = 0; xi < positions; ++xi)
    product_rows(Map(m + xi * g.co * tiles, g.co, tiles), CMap(u + xi * g.co * g.ci, g.co, g.ci),
                 CMap(v + xi * g.ci * tiles, g.ci, tiles));
}

template <int M, typename T>
void output_transform(const WinogradGeometry& g, const T* m, const T* bias, T* out) {
  constexpr int A = M + 2, L = Lanes<T>::kCount;
  const int64_t tiles = g.tiles(), plane = g.co * tiles, chunks = (tiles + L - 1) / L;
#pragma omp parallel for schedule(static) if (plane * A * A > kMinParallelWork)
  for (int64_t job = 0; job < g.co * chunks; ++job) {
    const int64_t o = job / chunks, t0 = job % chunks * L;
    const int lanes = int(std::min<int64_t>(L, tiles - t0));
    Lanes<T> mt[A][A], yt[M][M];
    const T* mo = m + o * tiles + t0;
    for (int a = 0; a < A; ++a)
      for (int b = 0; b < A; ++b) {
        if (lanes == L) {  // one vector load
          std::memcpy(&mt[a][b].v, mo + (a * A + b) * plane, sizeof(mt[a][b].v));
        } else {
          mt[a][b] = Lanes<T>(0.0);
          std::memcpy(&mt[a][b].v, mo + (a * A + b) * plane, sizeof(T) * lanes);
        }
      }
    winograd_output_transform<M>(mt, yt);
    const T b0 = bias != nullptr ? bias[o] : T(0);
    TileOrigin to = tile_origin(g, t0);
    for (int l = 0; l < lanes; to.next(g), ++l) {
      T* y = out + (to.n * g.co + o) * g.oh * g.ow + to.ty * M * g.ow + to.tx * M;
      const int rows = int(std::min<int64_t>(M, g.oh - to.ty * M));
      const int cols = int(std::min<int64_t>(M, g.ow - to.tx * M));
      for (int a = 0; a < rows; ++a)
        for (int b = 0; b < cols; ++b) y[a * g.ow + b] = yt[a][b].v[l] + b0;
    }
  }
}

template <int M, typename T>
void winograd(const WinogradGeometry& g, const T* in, const T* w, const T* bias, T* out, T* ws) {
  if (g.n * g.co * g.oh * g.ow == 0) return;
  T* u = ws;
  T* v = u + g.u_elems();
  T* m = v + g.v_elems();
  filter_transform<M>(g, w, u);
  input_transform<M>(g, in, v);
  products(g, u, v, m);
  output_transform<M>(g, m, bias, out);
}

void run(DType t, WinogradTile tile, const WinogradGeometry& g, const void* in, const void* w,
         const void* bias, void* out, void* workspace, size_t workspace_bytes, const char* op) {
  if (tile == WinogradTile::f2x2_3x3_fused)
    EMBER_THROW(ValueError, op, ": the fused F(2x2, 3x3) kernel runs on the GPU backends only");
  dispatch_float(t, op, [&](auto z) {
    using T = decltype(z);
    const size_t need = winograd_workspace_bytes(g, sizeof(T));
    EMBER_CHECK_VALUE(workspace_bytes >= need, op, ": the Winograd workspace of ", workspace_bytes,
                      " bytes is too small (need ", need, ")");
    auto* ws = static_cast<T*>(workspace);
    const T* i = static_cast<const T*>(in);
    const T* f = static_cast<const T*>(w);
    const T* b = static_cast<const T*>(bias);
    T* o = static_cast<T*>(out);
    if (tile == WinogradTile::f2x2_3x3)
      winograd<2>(g, i, f, b, o, ws);
    else
      winograd<4>(g, i, f, b, o, ws);
  });
}

}  // namespace

void conv2d_fwd_winograd(DType t, WinogradTile tile, const ConvShape& s, const void* x,
                         const void* w, const void* bias, void* y, void* workspace,
                         size_t workspace_bytes, Stream) {
  run(t, tile, winograd_geometry(tile, s, ConvDirection::forward), x, w, bias, y, workspace,
      workspace_bytes, "conv2d");
}

void conv2d_bwd_data_winograd(DType t, WinogradTile tile, const ConvShape& s, const void* dy,
                              const void* w, void* dx, void* workspace, size_t workspace_bytes,
                              Stream) {
  run(t, tile, winograd_geometry(tile, s, ConvDirection::backward_data), dy, w, nullptr, dx,
      workspace, workspace_bytes, "conv2d_backward_data");
}

}  // namespace ember::kernels::cpu
