// Convolution through cuDNN's graph API (ops/cudnn/graph.h).
#include "ops/cudnn/graph.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ops/cudnn/descriptors.h"
#include "runtime/error.h"

namespace ember::ops::cudnn {

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type) {
  EMBER_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_),
                    "creating backend descriptor " + std::to_string(static_cast<int>(type)));
}

BackendDescriptor::~BackendDescriptor() {
  if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
}

void BackendDescriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                            int64_t count, const void* values, const std::string& what) {
  EMBER_CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, count, values),
                    what + " (attribute " + std::to_string(static_cast<int>(name)) + ")");
}

void BackendDescriptor::finalize(const std::string& what) {
  EMBER_CUDNN_CHECK(cudnnBackendFinalize(d_), what);
}

cudnnStatus_t BackendDescriptor::try_finalize() {
  return cudnnBackendFinalize(d_);
}

namespace {

// Note [Device description keys]: what cuDNN 9's CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR requires of
// its JSON (cuDNN refuses a description without any one of them, naming none). Checked here so
// that a hand-written file gets a list of what it lacks.
const char* const kDeviceKeys[] = {"deviceName",
                                   "deviceVer",
                                   "driverVer",
                                   "cudaDeviceId",
                                   "maxGridSize",
                                   "maxBlockSize",
                                   "regsPerBlock",
                                   "multiProcessorCount",
                                   "warpSize",
                                   "maxSharedMemoryPerBlock",
                                   "maxSharedMemoryPerBlockOptin",
                                   "reservedSharedMemoryPerBlock",
                                   "maxRegistersPerSM",
                                   "maxCtasPerSM",
                                   "maxThreadsPerBlock",
                                   "maxThreadsPerSM",
                                   "pciDeviceId",
                                   "isTccDriver",
                                   "supportCoopLaunch",
                                   "smClockRateKHz",
                                   "memClockRateKHz",
                                   "l2CacheSize",
                                   "totalGlobalMem"};

// cuDNN's status and reason, for an answer that is not an error (a config without a plan).
std::string status_text(cudnnStatus_t st) {
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string s = cudnnGetErrorString(st);
  if (detail[0]) s += std::string(": ") + detail;
  return s;
}

// Fills name, compute capability and source from cuDNN-format JSON.
void read_identity(const nlohmann::json& j, std::string* name, int* cc, std::string* source) {
  *name = j.value("deviceName", std::string("unnamed GPU"));
  *cc = j.value("deviceVer", 0) / 10;
  *source = j.value("emberSource", std::string());
}

}  // namespace

DeviceDescriptionPtr DeviceDescription::from_file(const std::string& path) {
  std::ifstream f(path);
  EMBER_CHECK_T(IOError, f.good(), "cuDNN device description: cannot read '", path, "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return from_json(ss.str(), path);
}

DeviceDescriptionPtr DeviceDescription::from_json(const std::string& json,
                                                  const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  EMBER_CHECK_T(FormatError, j.is_object(), "cuDNN device description ", origin,
                ": expected a JSON object");
  std::string missing;
  for (const char* k : kDeviceKeys)
    if (!j.contains(k)) missing += std::string(missing.empty() ? "" : ", ") + k;
  EMBER_CHECK_T(FormatError, missing.empty(), "cuDNN device description ", origin,
                ": missing key(s) ", missing);
  EMBER_CHECK_T(FormatError, j["deviceVer"].is_number_integer() && j["deviceVer"].get<int>() > 0,
                "cuDNN device description ", origin,
                ": expected deviceVer, the compute capability x 100 (900 for sm_90)");
  BackendDescriptor d(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
  const std::string what = "reading the cuDNN device description " + origin;
  d.set(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
        static_cast<int64_t>(json.size()), json.data(), what);
  d.finalize(what);
  auto out = std::make_shared<DeviceDescription>(std::move(d));
  read_identity(j, &out->name_, &out->cc_, &out->source_);
  out->origin_ = origin;
  return out;
}

DeviceDescriptionPtr DeviceDescription::of_handle(cudnnHandle_t handle) {
  BackendDescriptor d(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
  d.set(CUDNN_ATTR_DEVICEPROP_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "describing the GPU");
  d.finalize("describing the GPU of a cuDNN handle");
  auto out = std::make_shared<DeviceDescription>(std::move(d));
  const nlohmann::json j = nlohmann::json::parse(out->json(), nullptr, false);
  read_identity(j, &out->name_, &out->cc_, &out->source_);
  out->origin_ = "cuda device " + std::to_string(j.value("cudaDeviceId", 0));
  return out;
}

std::string DeviceDescription::json() const {
  std::vector<char> buf(1 << 16);
  int64_t n = 0;
  EMBER_CUDNN_CHECK(
      cudnnBackendGetAttribute(d_.get(), CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                               static_cast<int64_t>(buf.size()), &n, buf.data()),
      "reading a device description's JSON");
  std::string s(buf.data(), static_cast<size_t>(std::clamp<int64_t>(n, 0, int64_t(buf.size()))));
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string EngineConfig::name() const {
  std::string s = kEnginePrefix + std::to_string(engine);
  if (knobs.empty()) return s;
  s += '{';
  for (size_t i = 0; i < knobs.size(); ++i)
    s += (i ? "," : "") + std::to_string(knobs[i].first) + "=" + std::to_string(knobs[i].second);
  return s + '}';
}

namespace {

std::string notes_of(uint32_t bits, const std::vector<const char*>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    if ((bits >> i) & 1u) s += std::string(s.empty() ? "" : ", ") + names[i];
  return s;
}

}  // namespace

std::string numerical_notes(uint32_t bits) {
  // In the order of cudnnBackendNumericalNote_t.
  return notes_of(bits, {"tensor core", "down-convert inputs", "reduced-precision reduction", "FFT",
                         "non-deterministic", "Winograd", "Winograd 4x4", "Winograd 6x6",
                         "Winograd 13x13", "strict NaN propagation"});
}

std::string behavior_notes(uint32_t bits) {
  // In the order of cudnnBackendBehaviorNote_t.
  return notes_of(bits, {"runtime compilation (NVRTC)", "int8x32 filter reorder",
                         "int8x32 bias reorder", "CUDA graph native", "cuBLASLt"});
}

size_t ConvEngines::tried() const {
  return static_cast<size_t>(std::count_if(
      configs.begin(), configs.end(), [](const RankedConfig& c) { return c.refusal.empty(); }));
}

std::string config_refusal(const ConvKey& key, const EngineConfig& c) {
  if (key.dtype == DType::f32 && key.math == ConvMathMode::fp32 &&
      c.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
    return "tensor core on float32 is TF32 (allow it with ConvMathMode::tf32)";
  // Note [cuDNN's MULTIPLY knob]: on an H200 (cuDNN 9.19) cudnn:eng3{11=2}, which carries no
  // tensor-core note, computed a float32 1x1 convolution of 2 terms per output 27 float32 ulps
  // off (-0.0359048 for -0.0359045), outside the 16 ulps of the terms' magnitudes that every
  // other config met; on a 3x3 layer its error (6.7e-8 of the largest output) equalled
  // cudnn_v7:fft's, so it may be an FFT engine, whose rounding is at the scale of a whole tile
  // (ops/conv2d_fft.cpp's fft is held to that bound instead). Only its handle ranks it, never the
  // device description, so its numerical notes are still to be read on a GPU. Until then configs
  // with that knob are left out of float32 keys; with them out, every ranked config passed
  // tests/spec/conv2d.cpp on the H200.
  const bool multiply = std::any_of(c.knobs.begin(), c.knobs.end(), [](const auto& k) {
    return k.first == CUDNN_KNOB_TYPE_MULTIPLY;
  });
  if (key.dtype == DType::f32 && key.math == ConvMathMode::fp32 && multiply)
    return "a MULTIPLY knob: cudnn:eng3{11=2} was 27 float32 ulps off a 2-term sum on an H200";
  if (c.has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) return "down-converts its inputs";
  if (c.has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION))
    return "reduces in reduced precision (Ember's convolutions accumulate in float32 at least)";
  if (key.deterministic && c.has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)) return "non-deterministic";
  return "";
}

// Note [Convolution graphs]: one operation per graph, its tensors contiguous NCHW (filters KCRS,
// C per group) with unique ids 'x', 'w', 'y' in every direction: backward-data's dx is 'x' and its
// dy 'y', backward-filter's dw is 'w'. Groups are implied by the channel counts.
//
// Note [Fused convolution graphs]: a forward graph may go on after the convolution, as cuDNN's
// runtime fusion engines compile into one kernel: the convolution writes a virtual tensor 'c',
// a pointwise ADD takes it and the bias 'b' (1 x K x 1 x 1, broadcast) to 'y', or to a virtual
// 'a' that a pointwise RELU_FWD takes to 'y'. Virtual tensors never reach memory.
struct ConvGraph {
  BackendDescriptor x{CUDNN_BACKEND_TENSOR_DESCRIPTOR}, w{CUDNN_BACKEND_TENSOR_DESCRIPTOR},
      y{CUDNN_BACKEND_TENSOR_DESCRIPTOR}, conv{CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR};
  std::unique_ptr<BackendDescriptor> op;
  // The fused epilogue's tensors, pointwise descriptors and operations (null without one).
  std::unique_ptr<BackendDescriptor> conv_out, bias, add_out, pw_add, pw_relu, op_add, op_relu;
  BackendDescriptor graph{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR};
};

namespace {

constexpr int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y', kUidBias = 'b', kUidConvOut = 'c',
                  kUidAddOut = 'a';
constexpr int64_t kAlignment = 16;  // bytes; Ember's allocations are aligned far beyond this

void set_tensor(BackendDescriptor& t, int64_t uid, cudnnDataType_t dt,
                const std::vector<int64_t>& dims, const std::string& what,
                bool is_virtual = false) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, what);
  t.set_int64(CUDNN_ATTR_TENSOR_DIMENSIONS, dims, what);
  t.set_int64(CUDNN_ATTR_TENSOR_STRIDES, strides, what);
  t.set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, {uid}, what);
  t.set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, {kAlignment}, what);
  if (is_virtual) t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual, what);
  t.finalize(what);
}

// A pointwise operation y = mode(x[, b]) computing in `compute`.
void add_pointwise(std::unique_ptr<BackendDescriptor>& pw, std::unique_ptr<BackendDescriptor>& op,
                   cudnnPointwiseMode_t mode, cudnnDataType_t compute, const BackendDescriptor& x,
                   const BackendDescriptor* b, const BackendDescriptor& y,
                   const std::string& what) {
  pw = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, what);
  pw->set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute, what);
  pw->finalize(what);
  op = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op->set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw->get(), what);
  op->set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x.get(), what);
  if (b) op->set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b->get(), what);
  op->set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y.get(), what);
  op->finalize(what);
}

std::shared_ptr<ConvGraph> make_graph(const ConvKey& key, ConvFusion fusion) {
  const kernels::ConvShape& s = key.shape;
  const std::string what = "building the cuDNN graph of " + conv_key_string(key);
  if (const char* why = conv_refusal(s)) EMBER_THROW(ops::ConvNotSupported, why);
  EMBER_CHECK_T(ops::ConvNotSupported,
                fusion == ConvFusion::none || key.direction == ConvDirection::forward,
                "cuDNN: a fused epilogue follows a forward convolution only");
  const cudnnDataType_t dt = data_type(key.dtype);
  const cudnnDataType_t compute = key.dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  auto g = std::make_shared<ConvGraph>();
  set_tensor(g->x, kUidX, dt, {s.n, s.c, s.h, s.w}, what);
  set_tensor(g->w, kUidW, dt, {s.k, s.cg(), s.r, s.s}, what);
  const std::vector<int64_t> ydims{s.n, s.k, s.oh, s.ow};
  set_tensor(g->y, kUidY, dt, ydims, what);
  if (fusion != ConvFusion::none) {
    g->conv_out = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    g->bias = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set_tensor(*g->conv_out, kUidConvOut, compute, ydims, what, /*is_virtual=*/true);
    set_tensor(*g->bias, kUidBias, dt, {1, s.k, 1, 1}, what);
  }
  const int64_t dims = 2;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  g->conv.set_int64(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, {dims}, what);
  g->conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, what);
  g->conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, what);
  g->conv.set_int64(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {s.pad_h, s.pad_w}, what);
  g->conv.set_int64(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {s.pad_h, s.pad_w}, what);
  g->conv.set_int64(CUDNN_ATTR_CONVOLUTION_DILATIONS, {s.dil_h, s.dil_w}, what);
  g->conv.set_int64(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {s.stride_h, s.stride_w}, what);
  g->conv.finalize(what);

  struct Names {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  const Names fwd{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  const Names bwd_data{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  const Names bwd_filter{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  const Names& n = key.direction == ConvDirection::forward         ? fwd
                   : key.direction == ConvDirection::backward_data ? bwd_data
                                                                   : bwd_filter;
  g->op = std::make_unique<BackendDescriptor>(n.type);
  BackendDescriptor& op = *g->op;
  op.set_descriptor(n.x, g->x.get(), what);
  op.set_descriptor(n.w, g->w.get(), what);
  op.set_descriptor(n.y, fusion == ConvFusion::none ? g->y.get() : g->conv_out->get(), what);
  op.set_descriptor(n.conv, g->conv.get(), what);
  if (compute == CUDNN_DATA_DOUBLE) {
    const double alpha = 1, beta = 0;
    op.set(n.alpha, CUDNN_TYPE_DOUBLE, 1, &alpha, what);
    op.set(n.beta, CUDNN_TYPE_DOUBLE, 1, &beta, what);
  } else {
    const float alpha = 1, beta = 0;
    op.set(n.alpha, CUDNN_TYPE_FLOAT, 1, &alpha, what);
    op.set(n.beta, CUDNN_TYPE_FLOAT, 1, &beta, what);
  }
  op.finalize(what);
  std::vector<cudnnBackendDescriptor_t> ops{op.get()};
  if (fusion == ConvFusion::bias) {
    add_pointwise(g->pw_add, g->op_add, CUDNN_POINTWISE_ADD, compute, *g->conv_out, g->bias.get(),
                  g->y, what);
    ops.push_back(g->op_add->get());
  } else if (fusion == ConvFusion::bias_relu) {
    g->add_out = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set_tensor(*g->add_out, kUidAddOut, compute, ydims, what, /*is_virtual=*/true);
    add_pointwise(g->pw_add, g->op_add, CUDNN_POINTWISE_ADD, compute, *g->conv_out, g->bias.get(),
                  *g->add_out, what);
    add_pointwise(g->pw_relu, g->op_relu, CUDNN_POINTWISE_RELU_FWD, compute, *g->add_out, nullptr,
                  g->y, what);
    ops.push_back(g->op_add->get());
    ops.push_back(g->op_relu->get());
  }
  g->graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
               static_cast<int64_t>(ops.size()), ops.data(), what);
  g->graph.finalize(what);
  return g;
}

// An engine's notes of one kind as bits (bit n: note n).
template <typename Note, int kCount>
uint32_t note_bits(cudnnBackendDescriptor_t engine, cudnnBackendAttributeName_t name,
                   cudnnBackendAttributeType_t type, const std::string& what) {
  Note notes[kCount];
  int64_t n = 0;
  EMBER_CUDNN_CHECK(cudnnBackendGetAttribute(engine, name, type, kCount, &n, notes), what);
  uint32_t bits = 0;
  for (int64_t i = 0; i < n; ++i) bits |= 1u << notes[i];
  return bits;
}

// Reads one engine config's engine, notes and knobs.
EngineConfig read_config(cudnnBackendDescriptor_t cfg) {
  const std::string what = "reading a cuDNN engine config";
  EngineConfig c;
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  EMBER_CUDNN_CHECK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e),
                    what);
  EMBER_CUDNN_CHECK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                             &n, &c.engine),
                    what);
  c.numerical = note_bits<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT>(
      e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, what);
  c.behavior = note_bits<cudnnBackendBehaviorNote_t, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT>(
      e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, what);
  std::vector<BackendDescriptor> choices;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    choices.emplace_back(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    raw.push_back(choices.back().get());
  }
  EMBER_CUDNN_CHECK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                             static_cast<int64_t>(raw.size()), &n, raw.data()),
                    what);
  for (int64_t i = 0; i < n; ++i) {
    cudnnBackendKnobType_t type;
    int64_t value = 0, m = 0;
    EMBER_CUDNN_CHECK(cudnnBackendGetAttribute(raw[size_t(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                               CUDNN_TYPE_KNOB_TYPE, 1, &m, &type),
                      what);
    EMBER_CUDNN_CHECK(cudnnBackendGetAttribute(raw[size_t(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                               CUDNN_TYPE_INT64, 1, &m, &value),
                      what);
    c.knobs.emplace_back(static_cast<int64_t>(type), value);
  }
  std::sort(c.knobs.begin(), c.knobs.end());
  return c;
}

// The ranked configs of one heuristic mode; `keep` receives each config's descriptor.
std::vector<BackendDescriptor> heuristic_configs(const ConvGraph& g, cudnnBackendHeurMode_t mode,
                                                 const DeviceDescription& device,
                                                 const std::string& what) {
  BackendDescriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g.graph.get(), what);
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, what);
  heur.set_descriptor(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, device.get(), what);
  heur.finalize(what);
  int64_t count = 0;
  EMBER_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                    what);
  std::vector<BackendDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  int64_t got = 0;
  EMBER_CUDNN_CHECK(
      cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
      what);
  // The count asked for first can exceed the configs returned: the rest are left unfilled.
  configs.erase(configs.begin() + std::clamp<int64_t>(got, 0, count), configs.end());
  return configs;
}

// A plan of `cfg`, for `device` or (when `handle` is not null) for the handle's GPU; null with
// the reason in *error when cuDNN cannot make it.
std::shared_ptr<BackendDescriptor> make_plan(const BackendDescriptor& cfg,
                                             const DeviceDescription& device, cudnnHandle_t handle,
                                             const std::string& what, std::string* error) {
  auto plan = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  plan->set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg.get(), what);
  if (handle != nullptr)
    plan->set(kExecutionPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle, what);
  else
    plan->set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, device.get(), what);
  const cudnnStatus_t st = plan->try_finalize();
  if (st == CUDNN_STATUS_SUCCESS) return plan;
  *error = status_text(st);
  return nullptr;
}

int64_t plan_workspace(const BackendDescriptor& plan, const std::string& what) {
  int64_t bytes = 0, n = 0;
  EMBER_CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                             CUDNN_TYPE_INT64, 1, &n, &bytes),
                    what);
  return bytes;
}

// Ranks the configs of `g` for `key` on `device`. Each tried config that `wanted(name)` accepts
// gets a plan (made through `handle` when not null). With `first` set, ranking stops at the
// first plan made, which goes there: a plan to run needs one config, not every config planned.
ConvEngines rank(const ConvKey& key, const ConvGraph& g, const DeviceDescription& device,
                 cudnnHandle_t handle, const std::function<bool(const std::string&)>& wanted,
                 std::shared_ptr<BackendDescriptor>* first = nullptr) {
  const std::string what = "ranking cuDNN's engines for " + conv_key_string(key);
  ConvEngines out;
  int64_t n = 0;
  EMBER_CUDNN_CHECK(
      cudnnBackendGetAttribute(g.graph.get(), CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                               CUDNN_TYPE_INT64, 1, &n, &out.global_count),
      what);
  std::set<std::string> seen;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    for (const BackendDescriptor& cfg : heuristic_configs(g, mode, device, what)) {
      RankedConfig r;
      r.config = read_config(cfg.get());
      r.list = mode == CUDNN_HEUR_MODE_A ? "A" : "fallback";
      if (!seen.insert(r.config.name()).second) continue;
      r.refusal = config_refusal(key, r.config);
      if (r.refusal.empty() && wanted(r.config.name())) {
        auto plan = make_plan(cfg, device, handle, what, &r.plan_error);
        if (plan) r.workspace = plan_workspace(*plan, what);
        if (plan && first) {
          *first = plan;
          out.configs.push_back(std::move(r));
          return out;
        }
      }
      out.configs.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace

ConvEngines conv_engines(const ConvKey& key, const DeviceDescription& device, ConvFusion fusion) {
  const auto g = make_graph(key, fusion);
  return rank(key, *g, device, nullptr, [](const std::string&) { return true; });
}

ConvPlan::ConvPlan(const ConvKey& key, const std::string& name, cudnnHandle_t handle,
                   ConvFusion fusion)
    : direction_(key.direction), fusion_(fusion) {
  graph_ = make_graph(key, fusion);
  const DeviceDescriptionPtr device = DeviceDescription::of_handle(handle);
  // "" takes the first config that plans; a bare engine name that engine's best-ranked config.
  auto matches = [&](const std::string& n) {
    return name.empty() || n == name || n.rfind(name + "{", 0) == 0;
  };
  const ConvEngines engines = rank(key, *graph_, *device, handle, matches, &plan_);
  if (plan_) {
    workspace_ = engines.configs.back().workspace;
    return;
  }
  std::string error = "not among the configs cuDNN's heuristics return for this key";
  for (const RankedConfig& r : engines.configs) {
    if (!matches(r.config.name())) continue;
    error = !r.refusal.empty() ? r.refusal : "cuDNN could not make its plan: " + r.plan_error;
    break;
  }
  EMBER_THROW(ops::ConvNotSupported, name.empty() ? "cuDNN's fused graph" : name, ": ",
              name.empty() ? "no config cuDNN ranks could make a plan" : error);
}

void ConvPlan::execute(cudnnHandle_t handle, const void* a, const void* b, void* out,
                       void* workspace, size_t workspace_bytes, const void* bias) const {
  EMBER_CHECK_T(ops::ConvNotSupported, (bias != nullptr) == (fusion_ != ConvFusion::none),
                "cuDNN plan: a fused plan takes a bias, and only a fused plan does");
  EMBER_CHECK_T(ops::ConvNotSupported, workspace_bytes >= static_cast<size_t>(workspace_),
                "cuDNN plan: ", workspace_, " bytes of workspace needed, ", workspace_bytes,
                " given");
  // Ember's operands by the graph's unique ids (Note [Convolution graphs]).
  void* x = const_cast<void*>(a);
  void* w = const_cast<void*>(b);
  void* y = out;
  if (direction_ == ConvDirection::backward_data) y = x, x = out;           // (dy, w) -> dx
  if (direction_ == ConvDirection::backward_filter) y = x, x = w, w = out;  // (dy, x) -> dw
  const int64_t uids[] = {kUidX, kUidW, kUidY, kUidBias};
  void* ptrs[] = {x, w, y, const_cast<void*>(bias)};
  const int64_t count = bias != nullptr ? 4 : 3;
  const std::string what = "running a cuDNN plan";
  BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, count, uids, what);
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, count, ptrs, what);
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace, what);
  pack.finalize(what);
  const cudnnStatus_t st = cudnnBackendExecute(handle, plan_->get(), pack.get());
  if (st == CUDNN_STATUS_SUCCESS) return;
  // NOT_SUPPORTED, BAD_PARAM and EXECUTION_FAILED (cuDNN 9's status categories) hand over to the
  // next candidate; anything else is an error.
  const int category = static_cast<int>(st) / 1000 * 1000;
  if (category == CUDNN_STATUS_BAD_PARAM || category == CUDNN_STATUS_NOT_SUPPORTED ||
      category == CUDNN_STATUS_EXECUTION_FAILED)
    EMBER_THROW(ops::ConvNotSupported, "cudnnBackendExecute: ", status_text(st));
  EMBER_CUDNN_CHECK(st, what);
}

std::shared_ptr<ConvPlan> ConvPlanCache::get(const ConvKey& key, const std::string& name,
                                             cudnnHandle_t h, ConvFusion fusion) {
  for (auto it = lru_.begin(); it != lru_.end(); ++it)
    if (it->key == key && it->name == name && it->fusion == fusion) {
      lru_.splice(lru_.begin(), lru_, it);
      return lru_.front().plan;
    }
  auto plan = std::make_shared<ConvPlan>(key, name, h, fusion);
  lru_.push_front({key, name, fusion, plan});
  if (lru_.size() > kPlansPerThread) lru_.pop_back();
  return plan;
}

ConvPlanCache& thread_plans() {
  thread_local ConvPlanCache cache;
  return cache;
}

}  // namespace ember::ops::cudnn
