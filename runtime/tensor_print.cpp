// Tensor's printed form, modelled on PyTorch's: aligned columns, 4 decimals (or scientific
// notation when magnitudes differ widely), summarised with "..." past 1000 elements.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "runtime/tensor.h"

namespace ember {
namespace {

constexpr int64_t kSummaryThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

struct Formatter {
  DType dtype;
  bool integral_floats = true, sci = false;
  int width = 1;

  std::string raw(double v) const {
    char buf[64];
    if (dtype == kBool) return v != 0 ? "True" : "False";
    if (!is_floating(dtype)) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    } else if (std::isnan(v)) {
      return "nan";
    } else if (std::isinf(v)) {
      return v > 0 ? "inf" : "-inf";
    } else if (sci) {
      std::snprintf(buf, sizeof buf, "%.4e", v);
    } else if (integral_floats) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", v);
    }
    return buf;
  }
  std::string operator()(double v) const {
    std::string s = raw(v);
    return std::string(width > static_cast<int>(s.size()) ? width - s.size() : 0, ' ') + s;
  }
};

// The values that will be printed (edges only when summarising).
void collect(const double* data, const Shape& shape, const Shape& strides, size_t d,
             int64_t off, bool summarize, std::vector<double>& out) {
  if (d == shape.size()) {
    out.push_back(data[off]);
    return;
  }
  int64_t n = shape[d];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    collect(data, shape, strides, d + 1, off + i * strides[d], summarize, out);
  }
}

// Between elements of dim d: ", " in the last dim; otherwise a newline, one blank line per
// further dim, and the indent.
std::string row_separator(size_t ndim, size_t d, int indent) {
  if (d + 1 == ndim) return ", ";
  return ",\n" + std::string(ndim - d - 2, '\n') + std::string(indent + 1, ' ');
}

void render(std::ostream& os, const double* data, const Shape& shape, const Shape& strides,
            size_t d, int64_t off, bool summarize, const Formatter& fmt, int indent) {
  if (d == shape.size()) {
    os << fmt(data[off]);
    return;
  }
  int64_t n = shape[d];
  os << '[';
  const bool last_dim = d + 1 == shape.size();
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      // PyTorch's marker: " ..." inside a row, "..." on a line of its own between rows.
      os << (last_dim ? " ..." : "...") << row_separator(shape.size(), d, indent);
      i = n - kEdgeItems;
    }
    render(os, data, shape, strides, d + 1, off + i * strides[d], summarize, fmt, indent + 1);
    if (i + 1 < n) os << row_separator(shape.size(), d, indent);
  }
  os << ']';
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  Tensor h = to(kCPU, kFloat64).contiguous();
  const double* data = static_cast<const double*>(h.data_ptr());
  std::string suffix;
  if (device() != kCPU) suffix += ", device='" + device().str() + "'";
  if (dtype() != kFloat32 && dtype() != kInt64 && dtype() != kBool)
    suffix += std::string(", dtype=ember.") + dtype_name(dtype());
  if (numel() == 0) {
    os << "tensor([]";
    if (dim() != 1) {
      os << ", size=(";
      for (int64_t i = 0; i < dim(); ++i) os << (i ? ", " : "") << shape()[i];
      os << (dim() == 1 ? ",)" : ")");
    }
    os << suffix << ')';
    return os.str();
  }
  const bool summarize = numel() > kSummaryThreshold;
  std::vector<double> vals;
  collect(data, h.shape(), h.strides(), 0, 0, summarize, vals);

  Formatter fmt{dtype()};
  if (is_floating(dtype())) {
    double amax = 0, amin = INFINITY;
    bool any_finite = false;
    for (double v : vals) {
      if (!std::isfinite(v)) continue;
      any_finite = true;
      if (v != std::nearbyint(v)) fmt.integral_floats = false;
      double a = std::fabs(v);
      amax = std::max(amax, a);
      if (a > 0) amin = std::min(amin, a);
    }
    if (any_finite) {
      if (fmt.integral_floats) {
        fmt.sci = amax > 1e8;
      } else {
        fmt.sci = amax > 1e8 || amin < 1e-4 || (amin > 0 && amax / amin > 1000.0);
      }
    }
  }
  for (double v : vals) fmt.width = std::max<int>(fmt.width, static_cast<int>(fmt.raw(v).size()));
  os << "tensor(";
  render(os, data, h.shape(), h.strides(), 0, 0, summarize, fmt, 7);
  os << suffix << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace ember
