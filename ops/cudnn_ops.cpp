// Ops that run on cuDNN where it serves, else on Ember's kernel (ops/cudnn_ops.h).
#include "ops/cudnn_ops.h"

#include "runtime/trace.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include "ember/build_config.h"
#include "ops/conv2d_cudnn.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/timing.h"
#include "runtime/gpu.h"

#if EMBER_HAVE_CUDNN
#include "ops/cudnn/descriptors.h"
#include "ops/cudnn/graph.h"
#include "ops/cudnn/pointwise.h"
#include "ops/cudnn/pool_norm.h"
#endif

namespace ember::ops {
namespace {

// The timed runs of each side under the benchmark preference (after one warm-up).
constexpr int kBenchmarkRuns = 5;

// Says once per op, under EMBER_LOG=select, who runs it on cuda and why.
void log_once(CudnnOp op, bool on_cudnn, const std::string& why) {
  static std::atomic<bool> said[kCudnnOps][2] = {};
  if (!log_select() || said[static_cast<int>(op)][on_cudnn].exchange(true)) return;
  std::cerr << "ember select: " << cudnn_op_name(op) << " on cuda -> "
            << (on_cudnn ? "cuDNN" : "Ember's kernel") << (why.empty() ? "" : " (" + why + ")")
            << "\n";
}

// Whether cuDNN may run `op` on `device` ("" in *why), or why not.
bool allowed(CudnnOp op, Device device, std::string* why) {
  if (!device.is_cuda()) return false;  // nothing to say: cuDNN is for cuda only
  if (!cudnn_enabled())
    *why = "cuDNN is off";
  else if (backend_preference(op) == BackendPreference::prefer_ember)
    *why = "prefer-ember";
  else if (!cudnn_unusable_reason().empty())
    *why = cudnn_unusable_reason();
  return why->empty();
}

std::string fmt_ms(double ms) {
  std::ostringstream os;
  os.precision(3);
  os << ms << " ms";
  return os.str();
}

#if EMBER_HAVE_CUDNN

// cuDNN's side of one call: runs it (false, doing nothing, for a case cuDNN lacks).
using CudnnRun = std::function<bool(cudnnHandle_t h, bool timing)>;

// Runs the call on cuDNN or on Ember's kernel, as the op's preference says; true when cuDNN ran.
// `key` names the call for the benchmark preference's verdicts.
bool dispatch(CudnnOp op, Device device, const std::function<std::string()>& key,
              const CudnnRun& on_cudnn, const EmberRun& ember) {
  std::string why;
  if (!allowed(op, device, &why)) {
    if (device.is_cuda()) log_once(op, false, why);
    ember(false);
    return false;
  }
  cudnnHandle_t h = cudnn::handle(device.index, gpu::current_stream(device));
  if (backend_preference(op) == BackendPreference::benchmark) {
    const std::string k = key();
    bool fresh = false;
    const BackendVerdict v = backend_verdicts().choose(
        k,
        [&] {
          bool lacks = false;
          const double ms =
              median_run_ms(device, kBenchmarkRuns, [&] { lacks = !on_cudnn(h, true) || lacks; });
          return lacks ? -1.0 : ms;
        },
        [&] { return median_run_ms(device, kBenchmarkRuns, [&] { ember(true); }); }, &fresh);
    if (fresh && log_select())
      std::cerr << "ember select: " << k << " -> " << (v.cudnn ? "cuDNN" : "Ember's kernel")
                << " (benchmark: " << v.reason << ")\n";
    if (!v.cudnn) {
      ember(false);
      return false;
    }
  }
  bool ran;
  {
    trace::Scope traced("library", "cudnn", device,
                        trace::enabled() ? key() : std::string());  // Note [Op trace]
    ran = on_cudnn(h, false);
  }
  log_once(op, ran, ran ? "" : "a case cuDNN lacks");
  if (!ran) ember(false);
  return ran;
}

std::string key_of(const std::string& what, DType t, Device d, const std::string& shape) {
  std::ostringstream os;
  os << what << " " << dtype_name(t) << " " << shape << " " << d.str();
  return os.str();
}

std::string pool_key(const char* what, PoolMode m, DType t, Device d, const kernels::PoolShape& s) {
  std::ostringstream os;
  os << (m == PoolMode::max    ? "max "
         : s.count_include_pad ? "avg "
                               : "avg(exclude pad) ")
     << s.n << "x" << s.c << "x" << s.h << "x" << s.w << " k" << s.kh << "x" << s.kw << " s" << s.sh
     << "x" << s.sw << " p" << s.ph << "x" << s.pw;
  return key_of(what, t, d, os.str());
}

std::string bn_key(const char* what, const BatchNormArgs& a, Device d) {
  std::ostringstream os;
  os << a.s.n << "x" << a.s.c << "x" << a.s.s;
  return key_of(what, a.t, d, os.str());
}

cudnn::PoolKind kind_of(PoolMode m) {
  return m == PoolMode::max ? cudnn::PoolKind::max : cudnn::PoolKind::avg;
}

cudnn::BatchNormCall bn_call(const BatchNormArgs& a) {
  cudnn::BatchNormCall c;
  c.t = a.t, c.s = a.s, c.eps = a.eps;
  // The persistent kernels are for spatial data: [N, C] input stays in SPATIAL mode.
  c.persistent = cudnn_batch_norm_persistent() && a.s.s > 1;
  return c;
}

// The weight and bias cuDNN reads: the given ones, or 1 and 0 per channel.
struct Affine {
  Tensor w, b;
  Affine(const BatchNormArgs& a, Device d) {
    const TensorOptions o{a.t, d};
    w = a.weight.defined() ? a.weight : full({a.s.c}, 1.0, o);
    b = a.bias.defined() ? a.bias : full({a.s.c}, 0.0, o);
  }
};

#endif  // EMBER_HAVE_CUDNN

}  // namespace

// --- BackendVerdicts --------------------------------------------------------------------------

BackendVerdict BackendVerdicts::choose(const std::string& key,
                                       const std::function<double()>& time_cudnn,
                                       const std::function<double()>& time_ember, bool* fresh) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = verdicts_.find(key);
  if (fresh) *fresh = it == verdicts_.end();
  if (it != verdicts_.end()) return it->second;
  BackendVerdict v;
  v.cudnn_ms = time_cudnn();
  v.ember_ms = time_ember();
  if (v.cudnn_ms < 0) {
    v.cudnn_ms = -1;
    v.reason = "cuDNN lacks the case; Ember's kernel " + fmt_ms(v.ember_ms);
  } else {
    v.cudnn = v.cudnn_ms <= v.ember_ms;
    v.reason = "cuDNN " + fmt_ms(v.cudnn_ms) + ", Ember's kernel " + fmt_ms(v.ember_ms);
  }
  return verdicts_.emplace(key, v).first->second;
}

std::vector<std::pair<std::string, BackendVerdict>> BackendVerdicts::entries() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, BackendVerdict>> r(verdicts_.begin(), verdicts_.end());
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return r;
}

size_t BackendVerdicts::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return verdicts_.size();
}

void BackendVerdicts::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  verdicts_.clear();
}

BackendVerdicts& backend_verdicts() {
  static BackendVerdicts v;
  return v;
}

// --- The ops ----------------------------------------------------------------------------------

#if EMBER_HAVE_CUDNN

bool run_activation_forward(Device device, kernels::Activation a, kernels::ActivationParams p,
                            DType t, int64_t n, const void* x, void* y, const EmberRun& ember) {
  return dispatch(
      CudnnOp::activation, device,
      [&] { return key_of("activation forward", t, device, "n=" + std::to_string(n)); },
      [&](cudnnHandle_t h, bool) { return cudnn::activation_forward(h, a, p, t, n, x, y); }, ember);
}

bool run_activation_backward(Device device, kernels::Activation a, kernels::ActivationParams p,
                             DType t, int64_t n, const void* s, const void* dy, void* dx,
                             const EmberRun& ember) {
  return dispatch(
      CudnnOp::activation, device,
      [&] { return key_of("activation backward", t, device, "n=" + std::to_string(n)); },
      [&](cudnnHandle_t h, bool) {
        return cudnn::activation_backward(h, device.index, a, p, t, n, s, dy, dx);
      },
      ember);
}

namespace {
std::string softmax_key(bool log, const char* direction, DType t, Device d,
                        const kernels::SoftmaxShape& s) {
  return key_of(
      std::string(log ? "log_softmax " : "softmax ") + direction, t, d,
      std::to_string(s.outer) + "x" + std::to_string(s.dim) + "x" + std::to_string(s.inner));
}
}  // namespace

bool run_softmax_backward(Device device, bool log, DType t, const kernels::SoftmaxShape& s,
                          const void* y, const void* dy, void* dx, const EmberRun& ember) {
  return dispatch(
      CudnnOp::softmax, device, [&] { return softmax_key(log, "backward", t, device, s); },
      [&](cudnnHandle_t h, bool) { return cudnn::softmax_backward(h, log, t, s, y, dy, dx); },
      ember);
}

bool run_pool_forward(Device device, PoolMode m, DType t, const kernels::PoolShape& s,
                      const void* x, void* y, const EmberRun& ember) {
  return dispatch(
      CudnnOp::pooling, device, [&] { return pool_key("pooling forward", m, t, device, s); },
      [&](cudnnHandle_t h, bool) {
        if (cudnn::pool_refusal(kind_of(m), s) != nullptr) return false;
        cudnn::pooling_forward(h, kind_of(m), t, s, x, y);
        return true;
      },
      ember);
}

bool run_pool_backward(Device device, PoolMode m, DType t, const kernels::PoolShape& s,
                       const void* x, const void* y, const void* dy, void* dx,
                       const EmberRun& ember) {
  return dispatch(
      CudnnOp::pooling, device, [&] { return pool_key("pooling backward", m, t, device, s); },
      [&](cudnnHandle_t h, bool) {
        if (cudnn::pool_refusal(kind_of(m), s) != nullptr) return false;
        // Average pooling reads neither x nor y: dx and dy stand in for them.
        cudnn::pooling_backward(h, kind_of(m), t, s, m == PoolMode::max ? x : dx,
                                m == PoolMode::max ? y : dy, dy, dx);
        return true;
      },
      ember);
}

bool run_batch_norm_training(Device device, const BatchNormArgs& a, const void* x,
                             void* running_mean, void* running_var, void* y, void* save_mean,
                             void* save_invstd, Tensor* reserve, const EmberRun& ember) {
  *reserve = Tensor();
  return dispatch(
      CudnnOp::batch_norm, device, [&] { return bn_key("batch_norm training", a, device); },
      [&](cudnnHandle_t h, bool timing) {
        const cudnn::BatchNormCall c = bn_call(a);
        if (cudnn::batch_norm_refusal(c) != nullptr) return false;
        const Affine p(a, device);
        const size_t bytes = cudnn::batch_norm_reserve_bytes(h, c);
        Tensor r = bytes > 0 ? empty({static_cast<int64_t>(bytes)}, {kUInt8, device}) : Tensor();
        // Timed runs leave the running stats alone.
        cudnn::batch_norm_forward_training(h, device.index, c, a.momentum, x, p.w.data_ptr(),
                                           p.b.data_ptr(), timing ? nullptr : running_mean,
                                           timing ? nullptr : running_var, y, save_mean,
                                           save_invstd, bytes > 0 ? r.data_ptr() : nullptr, bytes);
        if (!timing) *reserve = r;
        return true;
      },
      ember);
}

bool run_batch_norm_inference(Device device, const BatchNormArgs& a, const void* x,
                              const Tensor& running_mean, const Tensor& running_var, void* y,
                              void* save_mean, void* save_invstd, const EmberRun& ember) {
  return dispatch(
      CudnnOp::batch_norm, device, [&] { return bn_key("batch_norm eval", a, device); },
      [&](cudnnHandle_t h, bool) {
        const cudnn::BatchNormCall c = bn_call(a);
        if (cudnn::batch_norm_refusal(c) != nullptr) return false;
        const Affine p(a, device);
        cudnn::batch_norm_forward_inference(h, c, x, p.w.data_ptr(), p.b.data_ptr(),
                                            running_mean.data_ptr(), running_var.data_ptr(), y);
        // What Ember's eval forward saves for the backward.
        const size_t bytes = static_cast<size_t>(a.s.c) * itemsize(a.t);
        const Tensor invstd = rsqrt(add(running_var, a.eps));
        gpu::Backend& be = gpu::backend(device);
        be.memcpy_async(save_mean, running_mean.data_ptr(), bytes, gpu::CopyKind::DeviceToDevice,
                        gpu::current_stream(device));
        be.memcpy_async(save_invstd, invstd.data_ptr(), bytes, gpu::CopyKind::DeviceToDevice,
                        gpu::current_stream(device));
        return true;
      },
      ember);
}

bool run_batch_norm_backward(Device device, const BatchNormArgs& a, const void* x, const void* dy,
                             const void* save_mean, const void* save_invstd, const Tensor& reserve,
                             void* dx, void* dw, void* db, const EmberRun& ember) {
  return dispatch(
      CudnnOp::batch_norm, device, [&] { return bn_key("batch_norm backward", a, device); },
      [&](cudnnHandle_t h, bool) {
        const cudnn::BatchNormCall c = bn_call(a);
        if (cudnn::batch_norm_refusal(c) != nullptr) return false;
        const size_t bytes = cudnn::batch_norm_reserve_bytes(h, c);
        if (bytes > 0 && (!reserve.defined() || static_cast<size_t>(reserve.numel()) < bytes))
          return false;  // the forward ran on Ember's kernel, or in another mode
        const Affine p(a, device);
        // cuDNN writes all three gradients: scratch for those not wanted.
        const TensorOptions o{a.t, device};
        Tensor sx = dx ? Tensor() : empty({a.s.n * a.s.c * a.s.s}, o);
        Tensor sw = dw ? Tensor() : empty({a.s.c}, o), sb = db ? Tensor() : empty({a.s.c}, o);
        cudnn::batch_norm_backward(h, device.index, c, x, dy, p.w.data_ptr(), save_mean,
                                   save_invstd, dx ? dx : sx.data_ptr(), dw ? dw : sw.data_ptr(),
                                   db ? db : sb.data_ptr(),
                                   bytes > 0 ? reserve.data_ptr() : nullptr, bytes);
        return true;
      },
      ember);
}

#else  // no cuDNN: Ember's kernel always

namespace {
bool ember_only(CudnnOp op, Device device, const EmberRun& ember) {
  if (device.is_cuda()) log_once(op, false, cudnn_unusable_reason());
  ember(false);
  return false;
}
}  // namespace

bool run_activation_forward(Device device, kernels::Activation, kernels::ActivationParams, DType,
                            int64_t, const void*, void*, const EmberRun& ember) {
  return ember_only(CudnnOp::activation, device, ember);
}
bool run_activation_backward(Device device, kernels::Activation, kernels::ActivationParams, DType,
                             int64_t, const void*, const void*, void*, const EmberRun& ember) {
  return ember_only(CudnnOp::activation, device, ember);
}
bool run_softmax_backward(Device device, bool, DType, const kernels::SoftmaxShape&, const void*,
                          const void*, void*, const EmberRun& ember) {
  return ember_only(CudnnOp::softmax, device, ember);
}
bool run_pool_forward(Device device, PoolMode, DType, const kernels::PoolShape&, const void*, void*,
                      const EmberRun& ember) {
  return ember_only(CudnnOp::pooling, device, ember);
}
bool run_pool_backward(Device device, PoolMode, DType, const kernels::PoolShape&, const void*,
                       const void*, const void*, void*, const EmberRun& ember) {
  return ember_only(CudnnOp::pooling, device, ember);
}
bool run_batch_norm_training(Device device, const BatchNormArgs&, const void*, void*, void*, void*,
                             void*, void*, Tensor* reserve, const EmberRun& ember) {
  *reserve = Tensor();
  return ember_only(CudnnOp::batch_norm, device, ember);
}
bool run_batch_norm_inference(Device device, const BatchNormArgs&, const void*, const Tensor&,
                              const Tensor&, void*, void*, void*, const EmberRun& ember) {
  return ember_only(CudnnOp::batch_norm, device, ember);
}
bool run_batch_norm_backward(Device device, const BatchNormArgs&, const void*, const void*,
                             const void*, const void*, const Tensor&, void*, void*, void*,
                             const EmberRun& ember) {
  return ember_only(CudnnOp::batch_norm, device, ember);
}

#endif  // EMBER_HAVE_CUDNN

// The forward pass is always Ember's: on a row of all -inf (a fully masked row) cuDNN's softmax
// gives 0 and its log_softmax -inf, where PyTorch's (and Ember's) give NaN (measured on an H200,
// cuDNN 9.19). The backward passes are plain arithmetic on y and dy, and run on cuDNN.
bool run_softmax_forward(Device device, bool, DType, const kernels::SoftmaxShape&, const void*,
                         void*, const EmberRun& ember) {
  if (device.is_cuda())
    log_once(CudnnOp::softmax, false, "the forward pass: cuDNN's softmax of a row of all -inf is 0");
  ember(false);
  return false;
}

bool cudnn_conv2d_fused(const ConvKey& key, const void* x, const void* w, const void* bias, void* y,
                        bool relu) {
  std::string why;
  if (!allowed(CudnnOp::conv2d, key.device(), &why)) return false;
  if (!forced_conv_algo().empty()) return false;  // the forced algorithm, exactly
#if EMBER_HAVE_CUDNN
  const Device d = key.device();
  cudnnHandle_t h = cudnn::handle(d.index, gpu::current_stream(d));
  std::shared_ptr<cudnn::ConvPlan> plan;
  try {
    plan = cudnn::thread_plans().get(key, "", h,
                                     relu ? cudnn::ConvFusion::bias_relu : cudnn::ConvFusion::bias);
  } catch (const ConvNotSupported&) {
    return false;  // the registry's algorithm then runs, the bias and relu after it
  }
  const size_t bytes = static_cast<size_t>(plan->workspace());
  const DataPtr ws = workspace(d, bytes);
  try {
    plan->execute(h, x, w, y, ws.get(), bytes, bias);
  } catch (const ConvNotSupported&) {
    return false;
  }
  return true;
#else
  (void)x, (void)w, (void)bias, (void)y, (void)relu;
  return false;
#endif
}

}  // namespace ember::ops
