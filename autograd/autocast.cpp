#include "autograd/autocast.h"

#include <map>
#include <memory>
#include <utility>

#include "autograd/copy.h"
#include "autograd/grad_mode.h"
#include "autograd/leaf.h"

namespace ember {
namespace {

struct PolicyRow {
  std::string_view op;
  CastPolicy policy;
};

// The one policy table: PyTorch's autocast lists for its cuda device (lower_precision_fp, fp32,
// fp32_set_opt_dtype, promote, banned in aten/src/ATen/autocast_mode.cpp), for the functions
// Ember has.
constexpr PolicyRow kPolicies[] = {
    // The products: Tensor Core work on a GPU.
    {"conv2d", CastPolicy::lower_precision},
    {"conv_transpose2d", CastPolicy::lower_precision},
    {"linear", CastPolicy::lower_precision},
    {"matmul", CastPolicy::lower_precision},
    {"prelu", CastPolicy::lower_precision},
    // Functions whose range or accuracy needs float32.
    {"exp", CastPolicy::fp32},
    {"log", CastPolicy::fp32},
    {"pow", CastPolicy::fp32},
    {"softplus", CastPolicy::fp32},
    {"sum", CastPolicy::fp32},
    {"softmax", CastPolicy::fp32},
    {"log_softmax", CastPolicy::fp32},
    {"cross_entropy", CastPolicy::fp32},
    {"nll_loss", CastPolicy::fp32},
    {"mse_loss", CastPolicy::fp32},
    {"binary_cross_entropy_with_logits", CastPolicy::fp32},
    {"l1_loss", CastPolicy::fp32},
    {"smooth_l1_loss", CastPolicy::fp32},
    {"huber_loss", CastPolicy::fp32},
    {"kl_div", CastPolicy::fp32},
    {"cosine_embedding_loss", CastPolicy::fp32},
    {"margin_ranking_loss", CastPolicy::fp32},
    {"layer_norm", CastPolicy::fp32},
    {"group_norm", CastPolicy::fp32},
    // Several tensors joined: the widest dtype among them.
    {"cat", CastPolicy::promote},
    {"stack", CastPolicy::promote},
    // Unsafe in half precision.
    {"binary_cross_entropy", CastPolicy::banned},
};

// PyTorch's message for binary_cross_entropy under autocast.
constexpr const char* kBannedBce =
    "binary_cross_entropy and BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using binary_cross_entropy_with_logits\n"
    "or BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.";

// A floating, non-float64 tensor on a kind of device whose region is open.
bool eligible(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.dtype() != kFloat64 &&
         autocast_state(autocast_device_of(t.device())).enabled;
}

struct CachedCast {
  std::weak_ptr<TensorImpl> source;  // keeps the key's address from being reused unnoticed
  uint32_t version;                  // the source's version when cast: a write invalidates
  bool with_grad;                    // made with grad mode on (recorded) or off
  Tensor cast;
};
using CacheKey = std::pair<const TensorImpl*, DType>;
std::map<CacheKey, CachedCast>& cast_cache() {
  thread_local std::map<CacheKey, CachedCast> cache;
  return cache;
}

// t cast to `to`, recorded by autograd; through the cache for a float32 parameter cast to the
// region's lower precision.
Tensor cast_to(const Tensor& t, DType to) {
  if (t.dtype() == to) return t;
  const AutocastState& s = autocast_state(autocast_device_of(t.device()));
  const bool cacheable =
      s.cache_enabled && to == s.dtype && t.dtype() == kFloat32 && t.requires_grad() && is_leaf(t);
  if (!cacheable) return ember::to(t, to);
  const bool with_grad = GradMode::is_enabled();
  CachedCast& c = cast_cache()[{t.impl(), to}];
  if (c.source.lock() == t.impl_ptr() && c.version == t.version() && c.with_grad == with_grad)
    return c.cast;
  c = {t.impl_ptr(), t.version(), with_grad, ember::to(t, to)};
  return c.cast;
}

}  // namespace

std::optional<CastPolicy> autocast_policy(std::string_view op) {
  for (const PolicyRow& r : kPolicies)
    if (r.op == op) return r.policy;
  return std::nullopt;
}

AutocastDevice autocast_device_from_string(const std::string& device_type) {
  if (device_type == "cuda" || device_type == "emu") return AutocastDevice::cuda;
  if (device_type == "cpu") return AutocastDevice::cpu;
  EMBER_THROW(ValueError, "autocast: expected device_type 'cuda', 'emu' or 'cpu', got '",
              device_type, "'");
}

AutocastGuard::AutocastGuard(AutocastDevice device, std::optional<DType> dtype, bool enabled,
                             bool cache_enabled)
    : device_(device), saved_(autocast_state(device)) {
  const DType t = dtype.value_or(saved_.dtype);
  EMBER_CHECK_DTYPE(t == kFloat16 || t == kBFloat16, "autocast: expected dtype float16 or ",
                    "bfloat16 for device_type '", autocast_device_name(device), "', got ", t);
  autocast_state(device) = {enabled, t, cache_enabled};
  ++autocast_nesting();
}

AutocastGuard::AutocastGuard(const std::string& device_type, std::optional<DType> dtype,
                             bool enabled, bool cache_enabled)
    : AutocastGuard(autocast_device_from_string(device_type), dtype, enabled, cache_enabled) {}

AutocastGuard::~AutocastGuard() {
  if (--autocast_nesting() == 0) cast_cache().clear();
  autocast_state(device_) = saved_;
}

bool is_autocast_enabled(AutocastDevice device) {
  return autocast_state(device).enabled;
}

namespace {
bool any_region_open() {
  return autocast_excluded() == 0 && (autocast_state(AutocastDevice::cpu).enabled ||
                                      autocast_state(AutocastDevice::cuda).enabled);
}
}  // namespace

bool autocast_applies(std::initializer_list<const Tensor*> args) {
  if (!any_region_open()) return false;
  for (const Tensor* t : args)
    if (eligible(*t)) return true;
  return false;
}

bool autocast_applies(const std::vector<Tensor>& args) {
  if (!any_region_open()) return false;
  for (const Tensor& t : args)
    if (eligible(t)) return true;
  return false;
}

std::vector<Tensor> autocast_cast_args(const char* op, std::vector<Tensor> args) {
  const std::optional<CastPolicy> policy = autocast_policy(op);
  std::vector<Tensor>& out = args;
  if (!policy) return out;
  switch (*policy) {
    case CastPolicy::banned:
      EMBER_THROW(ValueError, op, ": ", kBannedBce);
    case CastPolicy::lower_precision:
      for (Tensor& t : out)
        if (eligible(t)) t = cast_to(t, autocast_state(autocast_device_of(t.device())).dtype);
      return out;
    case CastPolicy::fp32:
      for (Tensor& t : out)
        if (eligible(t)) t = cast_to(t, kFloat32);
      return out;
    case CastPolicy::promote: {
      std::optional<DType> widest;
      for (const Tensor& t : out)
        if (eligible(t)) widest = widest ? promote_types(*widest, t.dtype()) : t.dtype();
      for (Tensor& t : out)
        if (eligible(t)) t = cast_to(t, *widest);
      return out;
    }
  }
  return out;
}

size_t autocast_cache_size() {
  return cast_cache().size();
}

}  // namespace ember
