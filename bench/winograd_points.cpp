// Which interpolation points F(4x4, 3x3) should use (Note [Winograd points] in
// kernels/winograd_math.h): float32 Winograd on each point set against float64 direct
// correlation, relative RMS error over random N(0, 1) data, for a few channel counts.
//   build/bin/winograd_points   (a plain program, built with the bench/ programs)
// Each set's tables are the Toom-Cook construction (A^T[i][j] = p_j^i, G[j][k] = p_j^k /
// prod_{l != j} (p_j - p_l), B^T solved; for 0, +-1, +-2 they are Lavin & Gray's). The float32
// arithmetic is the kernels': U = G g G^T and V = B^T d B rounded to float, the channel sum
// M = sum_c U (.) V in float in channel order, Y = A^T M A in float.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

struct PointSet {
  const char* name;
  int m, alpha;
  std::vector<double> bt, g, at;  // alpha x alpha, alpha x 3, m x alpha, row-major
};

// clang-format off
const PointSet kLavin4{"F(4x4,3x3) 0, +-1, +-2", 4, 6,
    {4, 0, -5, 0, 1, 0,   0, -4, -4, 1, 1, 0,   0, 4, -4, -1, 1, 0,
     0, -2, -1, 2, 1, 0,  0, 2, -1, -2, 1, 0,   0, 4, 0, -5, 0, 1},
    {1.0 / 4, 0, 0,   -1.0 / 6, -1.0 / 6, -1.0 / 6,   -1.0 / 6, 1.0 / 6, -1.0 / 6,
     1.0 / 24, 1.0 / 12, 1.0 / 6,   1.0 / 24, -1.0 / 12, 1.0 / 6,   0, 0, 1},
    {1, 1, 1, 1, 1, 0,   0, 1, -1, 2, -2, 0,   0, 1, 1, 4, 4, 0,   0, 1, -1, 8, -8, 1}};
const PointSet kHalf4{"F(4x4,3x3) 0, +-1, 1/2, -2", 4, 6,
    {1, -1.5, -2, 1.5, 1, 0,   0, -1, 0.5, 2.5, 1, 0,   0, 1, -2.5, 0.5, 1, 0,
     0, -2, -1, 2, 1, 0,       0, 0.5, -1, -0.5, 1, 0,  0, 1, -1.5, -2, 1.5, 1},
    {1, 0, 0,   1.0 / 3, 1.0 / 3, 1.0 / 3,   -1.0 / 3, 1.0 / 3, -1.0 / 3,
     -16.0 / 15, -8.0 / 15, -4.0 / 15,   1.0 / 15, -2.0 / 15, 4.0 / 15,   0, 0, 1},
    {1, 1, 1, 1, 1, 0,   0, 1, -1, 0.5, -2, 0,   0, 1, 1, 0.25, 4, 0,   0, 1, -1, 0.125, -8, 1}};
const PointSet kLavin2{"F(2x2,3x3) 0, +-1", 2, 4,
    {1, 0, -1, 0,   0, 1, 1, 0,   0, -1, 1, 0,   0, 1, 0, -1},
    {1, 0, 0,   0.5, 0.5, 0.5,   0.5, -0.5, 0.5,   0, 0, 1},
    {1, 1, 1, 0,   0, 1, -1, -1}};
// clang-format on

// out (rows x cols, float) = a (rows x inner, double coefficients) * b (inner x cols), in float.
std::vector<float> mul(const std::vector<double>& a, const std::vector<float>& b, int rows,
                       int inner, int cols) {
  std::vector<float> out(rows * cols, 0.0f);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < inner; ++k)
        if (a[i * inner + k] != 0) acc += float(a[i * inner + k]) * b[k * cols + j];
      out[i * cols + j] = acc;
    }
  return out;
}
std::vector<float> transpose(const std::vector<float>& x, int rows, int cols) {
  std::vector<float> t(x.size());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) t[j * rows + i] = x[i * cols + j];
  return t;
}
// a x b^T for the second half of each two-sided transform: (X c^T) = (c X^T)^T.
std::vector<float> two_sided(const std::vector<double>& c, const std::vector<float>& x, int n,
                             int k) {
  const std::vector<float> cx = mul(c, x, n, k, k);  // n x k
  return transpose(mul(c, transpose(cx, n, k), n, k, n), n, n);
}

double rel_rms(const PointSet& ps, int channels, int tiles, std::mt19937& gen) {
  std::normal_distribution<double> nd;
  const int m = ps.m, a = ps.alpha;
  double err = 0, ref = 0;
  std::vector<std::vector<float>> u(channels);
  std::vector<std::vector<double>> gd(channels);
  for (int c = 0; c < channels; ++c) {
    std::vector<float> g(9);
    gd[c].resize(9);
    for (int i = 0; i < 9; ++i) g[i] = float(nd(gen)), gd[c][i] = g[i];
    u[c] = two_sided(ps.g, g, a, 3);
  }
  for (int t = 0; t < tiles; ++t) {
    std::vector<float> acc(a * a, 0.0f);
    std::vector<double> want(m * m, 0.0);
    for (int c = 0; c < channels; ++c) {
      std::vector<float> d(a * a);
      for (float& v : d) v = float(nd(gen));
      const std::vector<float> v = two_sided(ps.bt, d, a, a);
      for (int i = 0; i < a * a; ++i) acc[i] += u[c][i] * v[i];
      for (int y = 0; y < m; ++y)
        for (int x = 0; x < m; ++x)
          for (int r = 0; r < 3; ++r)
            for (int s = 0; s < 3; ++s)
              want[y * m + x] += double(d[(y + r) * a + x + s]) * gd[c][r * 3 + s];
    }
    const std::vector<float> y = two_sided(ps.at, acc, m, a);
    for (int i = 0; i < m * m; ++i)
      err += (y[i] - want[i]) * (y[i] - want[i]), ref += want[i] * want[i];
  }
  return std::sqrt(err / ref);
}

}  // namespace

int main() {
  std::printf("%-30s %10s %10s %10s\n", "points", "C=64", "C=128", "C=256");
  for (const PointSet* ps : {&kLavin2, &kLavin4, &kHalf4}) {
    std::printf("%-30s", ps->name);
    for (int c : {64, 128, 256}) {
      std::mt19937 gen(1234 + c);  // the same data for every set
      std::printf(" %10.2e", rel_rms(*ps, c, 4000 / ps->m, gen));
    }
    std::printf("\n");
  }
}
