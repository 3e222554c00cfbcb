// cuDNN's plumbing for Ember's ops on `cuda` (docs/gpu_backend.md, "cuDNN"): the status check,
// the per-device, per-thread handle, and RAII descriptors built from Ember's plain shapes.
// Compiled only in builds with cuDNN (EMBER_HAVE_CUDNN); no emu path ever calls it.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv_shape.h"
#include "ops/conv2d_algo.h"
#include "runtime/dtype.h"
#include "runtime/gpu.h"

namespace ember::ops::cudnn {

// Throws CudnnError: `call` failed with `status` (its name and number) while doing `what`, with
// cuDNN's own account of the failure (cudnnGetLastErrorString) and the place.
[[noreturn]] void throw_status(cudnnStatus_t status, const char* call, const std::string& what,
                               const char* file, int line);

// EMBER_CUDNN_CHECK(call, what): `what` says the op and its shapes, e.g.
// conv_key_string(key); evaluated only on failure.
#define EMBER_CUDNN_CHECK(call, what)                                                        \
  do {                                                                                       \
    const cudnnStatus_t ember_cudnn_st_ = (call);                                            \
    if (ember_cudnn_st_ != CUDNN_STATUS_SUCCESS)                                             \
      ::ember::ops::cudnn::throw_status(ember_cudnn_st_, #call, (what), __FILE__, __LINE__); \
  } while (0)

// The handle of cuda device `device` for the calling thread, created on first use (creating one
// loads cuDNN's kernels: slow) and bound to `stream` on every call (cudnnSetStream), so a
// handle never runs on another thread's stream. Throws DeviceError when the CUDA backend is not
// usable (naming why) and CudnnError when cuDNN cannot make a handle.
cudnnHandle_t handle(int device, gpu::Stream stream);

// Why cuDNN's 32-bit legacy descriptors cannot describe `s`, or nullptr: every tensor must
// have fewer than 2^31 elements and every size fit an int (cudnnSetTensor4dDescriptor refuses
// more with NOT_SUPPORTED). Ember refuses such keys (the selector then runs its own kernels)
// rather than splitting the batch.
const char* conv_refusal(const kernels::ConvShape& s);

// cuDNN's data type for t (float32, float64, float16, bfloat16); DTypeError for the others.
cudnnDataType_t data_type(DType t);

// Whether v fits one of cuDNN's int sizes or paddings (0 .. 2^31 - 1).
inline bool fits_int(int64_t v) {
  return v >= 0 && v <= INT32_MAX;
}

// alpha = 1, beta = 0 in the type cuDNN scales with (double for float64 data).
struct Scale {
  double one64 = 1, zero64 = 0;
  float one32 = 1, zero32 = 0;
  const void* one;
  const void* zero;
  explicit Scale(DType t)
      : one(t == DType::f64 ? static_cast<const void*>(&one64) : &one32),
        zero(t == DType::f64 ? static_cast<const void*>(&zero64) : &zero32) {}
  Scale(const Scale&) = delete;
  Scale& operator=(const Scale&) = delete;
};

// Owns one legacy descriptor of type D: made by Create with the owner (CudnnError saying `what`
// when it fails), released by Destroy with it; never copied. The descriptors below, and the
// pooling and activation ones, derive from it and add their setters. Its constructor and
// destructor are instantiated once, in ops/cudnn/descriptors.cpp, for each pair used (so only
// the library calls cuDNN).
template <typename D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
class OwnedDescriptor {
 public:
  explicit OwnedDescriptor(const char* what);
  ~OwnedDescriptor();
  OwnedDescriptor(const OwnedDescriptor&) = delete;
  OwnedDescriptor& operator=(const OwnedDescriptor&) = delete;
  D get() const { return d_; }

 private:
  D d_ = nullptr;
};

class TensorDescriptor
    : public OwnedDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                             cudnnDestroyTensorDescriptor> {
 public:
  TensorDescriptor() : OwnedDescriptor("creating a tensor descriptor") {}
  // A contiguous n x c x h x w NCHW tensor.
  void set_nchw(DType t, int64_t n, int64_t c, int64_t h, int64_t w);
};

// The legacy convolution API's descriptors: their types are deprecated too (Note [cuDNN's
// deprecated calls] in ops/cudnn/descriptors.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

class FilterDescriptor
    : public OwnedDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                             cudnnDestroyFilterDescriptor> {
 public:
  FilterDescriptor() : OwnedDescriptor("creating a filter descriptor") {}
  // k x c/groups x r x s filters, KCRS.
  void set_kcrs(DType t, int64_t k, int64_t c, int64_t r, int64_t s);
};

class ConvolutionDescriptor
    : public OwnedDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                             cudnnDestroyConvolutionDescriptor> {
 public:
  ConvolutionDescriptor() : OwnedDescriptor("creating a convolution descriptor") {}
  // Cross-correlation (what Ember's conv2d computes) with s's padding, stride, dilation and
  // groups, accumulating in t (float32 for float16 and bfloat16 inputs), in FMA math unless
  // `allow_tf32` (CUDNN_DEFAULT_MATH, which lets Ampere and later convert to TF32).
  void set(const kernels::ConvShape& s, DType t, bool allow_tf32);
};

// The descriptors of one convolution: x, w, y and the convolution itself.
struct ConvDescriptors {
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  // requires: conv_refusal(s) == nullptr (CudnnError naming the reason otherwise).
  ConvDescriptors(const kernels::ConvShape& s, DType t, bool allow_tf32);
};

#pragma GCC diagnostic pop

// --- The classic (v7) convolution API, for the cudnn_v7:* algorithms ----------------------------

// One of cuDNN's classic algorithms for a direction (cudnnConvolution*Algo_t), with what cuDNN's
// v7 heuristic or FindEx said of it for a key.
struct LegacyAlgo {
  int algo = 0;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  float time_ms = -1;  // FindEx's measurement; -1 from the heuristic
  size_t memory = 0;   // workspace bytes
  bool deterministic = true;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // to be written back before running
};

// "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling", "winograd",
// "winograd_nonfused" (forward); "algo_0", "algo_1", ... as cuDNN numbers the backward ones.
std::string legacy_algo_name(ConvDirection d, int algo);
const char* math_type_name(cudnnMathType_t m);

// cuDNN's v7 heuristic (cudnnGetConvolution*Algorithm_v7) for the shape, in its order, every
// algorithm of the direction with its status. requires: a real handle (these calls crash on a
// null one: Ember reaches them only through handle()).
std::vector<LegacyAlgo> legacy_heuristic(cudnnHandle_t h, ConvDirection d,
                                         const kernels::ConvShape& s, DType t, bool allow_tf32);
// cudnnFindConvolution*AlgorithmEx: every algorithm run on the given buffers (a: x or dy, b: w or
// x, out: y, dx or dw, overwritten), fastest first, with at most `workspace_bytes` of workspace.
std::vector<LegacyAlgo> legacy_find(cudnnHandle_t h, ConvDirection d, const kernels::ConvShape& s,
                                    DType t, bool allow_tf32, const void* a, const void* b,
                                    void* out, void* workspace, size_t workspace_bytes);
// Runs `algo` with its math type written back first (PyTorch measured a 10x group-convolution
// slowdown without it). Operands as legacy_find's. Throws CudnnError.
void legacy_run(cudnnHandle_t h, ConvDirection d, const kernels::ConvShape& s, DType t,
                const LegacyAlgo& algo, const void* a, const void* b, void* out, void* workspace,
                size_t workspace_bytes);

// y += bias per channel (cudnnAddTensor), for convolutions whose algorithm leaves the bias out.
// y is the contiguous NCHW output of `s`, bias has s.k elements.
void add_bias(cudnnHandle_t h, const kernels::ConvShape& s, DType t, const void* bias, void* y);

// CUDNN_ATTR_EXECUTION_PLAN_HANDLE, deprecated in cuDNN 9 but still how a plan that runs is made
// (ops/cudnn/graph.cpp); defined in the region of Note [cuDNN's deprecated calls].
extern const cudnnBackendAttributeName_t kExecutionPlanHandle;

// y's sizes {N, K, OH, OW} as cuDNN computes them (cudnnGetConvolution2dForwardOutputDim), with no
// GPU needed: the tests hold them against Ember's.
std::array<int64_t, 4> output_dims(const kernels::ConvShape& s, DType t);

}  // namespace ember::ops::cudnn
