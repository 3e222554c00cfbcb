// Plain types shared by the GPU kernels' two builds (nvcc for `cuda`, g++ for `emu`) and by
// their callers in ops/: element types, op codes and the small, trivially copyable parameter
// structs the launchers take. Host-safe: no CUDA or emulator header is needed to read it.
#pragma once

#include <cstdint>

namespace ember::kernels::gpu_types {

// Element types the GPU kernels implement (a subset of ember::DType, with its own order so that
// this header stays free of runtime/).
enum class Scalar : uint8_t { f32, f64, i32, i64, u8, b8 };

// The most dims a strided operand may have after its dims are merged; ops/ materialises rarer
// layouts first.
constexpr int kMaxDims = 8;

// The iteration space of an elementwise kernel over N input operands: sizes of the (row-major)
// output and each operand's stride along each dim, in elements (0 along broadcast dims).
template <int N>
struct StridedIndex {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};
};

// The same order as kernels::cpu::BinaryOp / UnaryOp / ReduceOp (ops/ checks it at compile time).
enum class BinaryOp : uint8_t { add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge };
enum class UnaryOp : uint8_t { neg, abs, exp, log, sqrt, rsqrt, clamp };
enum class ReduceOp : uint8_t { sum, mean, amax, amin, argmax, argmin, var, std };

inline bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::eq;
}

// C[b] = A[b] x B[b] for each of `batch` products; A[b]: m x k, B[b]: k x n, strides in elements;
// C contiguous [batch, m, n]. The batch index runs row-major over `batch_index.sizes`, and
// batch_index.strides[0] / [1] give A's / B's offset along each batch dim (0 repeats it).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t a_row = 0, a_col = 0, b_row = 0, b_col = 0;
  int64_t batch = 1;
  StridedIndex<2> batch_index;
};

// Random fills through Philox4x32-10 (runtime/philox.h); the same numbers as the CPU fills.
enum class RandomDist : uint8_t { uniform, normal, bernoulli };

// Fused optimiser updates: PyTorch's SGD and Adam/AdamW rules (as kernels/cpu/optim.h).
struct SgdParams {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // the momentum buffer is initialised to the gradient
};
struct AdamParams {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;  // AdamW
  int64_t step = 1;        // 1-based, for bias correction
};

}  // namespace ember::kernels::gpu_types
