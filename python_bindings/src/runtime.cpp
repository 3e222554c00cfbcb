// dtypes, devices and the runtime: RNG seed, environment report, CUDA availability, conv
// algorithm policy, memory statistics.
#include <cstring>
#include <sstream>

#include "common.h"
#include "ops/conv2d.h"
#include "ops/conv2d_cudnn.h"
#include "ops/matmul.h"
#include "runtime/cudnn_versions.h"
#include "runtime/env.h"
#include "runtime/gpu.h"

namespace ember::py {

DType dtype_arg(const pb::handle& obj, DType dflt) {
  if (obj.is_none()) return dflt;
  if (pb::isinstance<DType>(obj)) return obj.cast<DType>();
  if (pb::isinstance<pb::str>(obj)) return parse_dtype(obj.cast<std::string>());
  throw_arg_type("dtype", "ember.dtype", obj);
}

Device device_arg(const pb::handle& obj, Device dflt) {
  if (obj.is_none()) return dflt;
  if (pb::isinstance<Device>(obj)) return obj.cast<Device>();
  if (pb::isinstance<pb::str>(obj)) return Device::parse(obj.cast<std::string>());
  throw_arg_type("device", "ember.device or str", obj);
}

namespace {

pb::dict stats_dict(const MemoryStats& s) {
  pb::dict d;
  d["allocated_bytes"] = s.allocated;
  d["reserved_bytes"] = s.reserved;
  d["peak_allocated_bytes"] = s.peak_allocated;
  d["num_allocs"] = s.num_allocs;
  d["num_cache_hits"] = s.num_cache_hits;
  d["num_device_allocs"] = s.num_device_allocs;
  return d;
}

pb::dict candidate_dict(const ops::ConvCandidate& c) {
  pb::dict d;
  d["name"] = c.name;
  d["backend"] = ops::conv_backend_name(c.backend);
  d["deterministic"] = c.deterministic;
  d["supported"] = c.supported;
  d["chosen"] = c.chosen;
  d["rank"] = c.rank;
  d["workspace_bytes"] = c.workspace_bytes;
  d["cost"] = c.cost;
  d["reason"] = c.reason;
  d["time_ms"] = c.time_ms >= 0 ? pb::object(pb::float_(c.time_ms)) : pb::object(pb::none());
  return d;
}

}  // namespace

void init_runtime(pb::module_& m) {
  pb::class_<DType>(m, "dtype")
      .def(pb::init([](const std::string& name) { return parse_dtype(name); }))
      .def_property_readonly("is_floating_point", [](DType t) { return is_floating(t); })
      .def_property_readonly("is_signed", [](DType t) { return is_signed(t); })
      .def_property_readonly("itemsize", [](DType t) { return itemsize(t); })
      .def_property_readonly("name", [](DType t) { return std::string(dtype_name(t)); })
      .def("__repr__", [](DType t) { return std::string("ember.") + dtype_name(t); })
      .def("__str__", [](DType t) { return std::string("ember.") + dtype_name(t); })
      .def("__eq__",
           [](DType a, const pb::object& b) {
             return pb::isinstance<DType>(b) && b.cast<DType>() == a;
           })
      .def("__hash__", [](DType t) { return static_cast<int>(t); })
      .def(pb::pickle([](DType t) { return std::string(dtype_name(t)); },
                      [](const std::string& s) { return parse_dtype(s); }));
  for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool})
    m.attr(dtype_name(t)) = t;
  m.def("promote_types", [](DType a, DType b) { return promote_types(a, b); });

  pb::class_<Device>(m, "device")
      .def(pb::init([](const std::string& s) { return Device::parse(s); }))
      .def(pb::init([](const std::string& type, int index) {
        return Device::parse(type + ":" + std::to_string(index));
      }))
      .def_property_readonly("type",
                             [](const Device& d) { return std::string(device_type_name(d.type)); })
      .def_property_readonly("index",
                             [](const Device& d) -> pb::object {
                               if (d.is_cpu()) return pb::none();
                               return pb::int_(d.index);
                             })
      .def("__str__", &Device::str)
      .def("__repr__",
           [](const Device& d) {
             std::string r = std::string("device(type='") + device_type_name(d.type) + "'";
             if (!d.is_cpu()) r += ", index=" + std::to_string(d.index);
             return r + ")";
           })
      .def("__eq__",
           [](const Device& a, const pb::object& b) {
             if (pb::isinstance<pb::str>(b)) return a == Device::parse(b.cast<std::string>());
             return pb::isinstance<Device>(b) && a == b.cast<Device>();
           })
      .def("__hash__", [](const Device& d) { return std::hash<std::string>()(d.str()); });

  m.def(
      "manual_seed", [](uint64_t seed) { manual_seed(seed); }, pb::arg("seed"));
  m.def("initial_seed", [] { return default_generator().seed(); });

  m.def("_env_report_text", [] { return env_report_text(collect_env_report()); });
  m.def("_env_report_json", [] { return env_report_json(collect_env_report()); });
  m.def("_gpu_available", [](const std::string& type) {
    gpu::Availability a = gpu::backend(Device::parse(type).type).availability();
    return pb::make_tuple(a.usable, a.reason);
  });
  m.def("_gpu_device_count", [](const std::string& type) {
    auto& b = gpu::backend(Device::parse(type).type);
    return b.availability().usable ? b.device_count() : 0;
  });
  m.def("_built_with_cuda", [] { return collect_env_report().built_with_cuda; });

  m.def(
      "memory_stats",
      [](const pb::object& dev) { return stats_dict(allocator_for(device_arg(dev)).stats()); },
      pb::arg("device") = "cpu", "Allocator statistics of a device (bytes and counts).");
  m.def(
      "reset_peak_memory_stats",
      [](const pb::object& dev) { allocator_for(device_arg(dev)).reset_peak(); },
      pb::arg("device") = "cpu");
  m.def(
      "empty_cache", [](const pb::object& dev) { allocator_for(device_arg(dev)).empty_cache(); },
      pb::arg("device") = "cpu");

  m.def("_conv_set_algo", &ops::set_conv_algo);
  m.def("_conv_forced_algo", &ops::forced_conv_algo);
  m.def("_conv_set_deterministic", &ops::set_conv_deterministic);
  m.def("_conv_deterministic", &ops::conv_deterministic);
  m.def("_conv_algo_names", &ops::conv_algo_names);
  m.def("_conv_clear_cache", &ops::clear_conv_algo_cache);
  // The benchmark policy and its cache file (docs/conv.md).
  m.def("_conv_set_benchmark", &ops::set_conv_benchmark);
  m.def("_conv_benchmark", &ops::conv_benchmark);
  m.def("_conv_set_policy",
        [](const std::string& name) { ops::set_conv_policy(ops::parse_conv_policy(name)); });
  m.def("_conv_policy", [] { return std::string(ops::conv_policy_name(ops::conv_policy())); });
  m.def("_conv_set_workspace_limit", &ops::set_conv_workspace_limit);
  m.def("_conv_workspace_limit", &ops::conv_workspace_limit);
  m.def("_conv_save_cache", &ops::save_conv_cache);
  m.def("_conv_load_cache", &ops::load_conv_cache);
  m.def("_conv_benchmark_stats", [] {
    const ops::ConvBenchmarkStats s = ops::conv_benchmark_stats();
    pb::dict d;
    d["keys_timed"] = s.keys_timed;
    d["candidates_timed"] = s.candidates_timed;
    d["cache_hits"] = s.cache_hits;
    d["entries_loaded"] = s.entries_loaded;
    return d;
  });
  // cuDNN for convolutions (ops/conv2d_cudnn.h): ember.backends.cudnn.
  m.def("_cudnn_set_enabled", &ops::set_cudnn_enabled);
  m.def("_cudnn_enabled", &ops::cudnn_enabled);
  m.def("_conv_set_allow_tf32", &ops::set_conv_allow_tf32);
  m.def("_conv_allow_tf32", &ops::conv_allow_tf32);
  m.def("_conv_set_backend_preference", [](const std::string& name) {
    ops::set_conv_backend_preference(ops::parse_backend_preference(name));
  });
  m.def("_conv_backend_preference",
        [] { return std::string(ops::backend_preference_name(ops::conv_backend_preference())); });
  m.def("_cudnn_set_preference", [](const std::string& op, const std::string& name) {
    ops::set_backend_preference(ops::parse_cudnn_op(op), ops::parse_backend_preference(name));
  });
  m.def("_cudnn_preference", [](const std::string& op) {
    return std::string(
        ops::backend_preference_name(ops::backend_preference(ops::parse_cudnn_op(op))));
  });
  m.def("_cudnn_set_bn_persistent", [](bool on) { ops::set_cudnn_batch_norm_persistent(on); });
  m.def("_cudnn_bn_persistent", [] { return ops::cudnn_batch_norm_persistent(); });
  m.def("_cudnn_version", [] { return loaded_cudnn_libs().loaded; });
  m.def("_cudnn_verdict", [] {
    const EnvReport r = collect_env_report();
    return pb::make_tuple(r.cudnn_usable, r.cudnn_reason);
  });
  // matmul on `cuda`: Ember's tiled GEMM or cuBLAS.
  m.def("_gpu_gemm", [] { return std::string(ops::gpu_gemm_name(ops::gpu_gemm())); });
  m.def("_gpu_gemm_has_cublas", &ops::gpu_gemm_has_cublas);
  m.def("_set_gpu_gemm", [](const std::string& name) {
    if (name == "auto" || name == "automatic") return ops::set_gpu_gemm(ops::GpuGemm::automatic);
    if (name == "ember") return ops::set_gpu_gemm(ops::GpuGemm::ember);
    if (name == "cublas") return ops::set_gpu_gemm(ops::GpuGemm::cublas);
    EMBER_THROW(ValueError, "set_gemm: unknown GEMM '", name,
                "': expected 'auto', 'ember' or 'cublas'");
  });
  // Which Tensor Core kernel runs float16/bfloat16 products on cuda and emu.
  m.def("_tc_gemm", [] { return std::string(kernels::tc_kernel_name(ops::tc_gemm())); });
  m.def("_set_tc_gemm", [](const std::string& name) {
    if (name == "auto" || name == "automatic")
      return ops::set_tc_gemm(kernels::TcKernel::automatic);
    if (name == "wmma") return ops::set_tc_gemm(kernels::TcKernel::wmma);
    if (name == "mma_sync") return ops::set_tc_gemm(kernels::TcKernel::mma_sync);
    if (name == "wgmma") return ops::set_tc_gemm(kernels::TcKernel::wgmma);
    EMBER_THROW(ValueError, "set_tc_gemm: unknown kernel '", name,
                "': expected 'auto', 'wmma', 'mma_sync' or 'wgmma'");
  });
  // The ranking of every algorithm for one convolution, as PyTorch's shapes describe it.
  m.def(
      "_explain_conv_algos",
      [](const std::vector<int64_t>& input, const std::vector<int64_t>& weight,
         const pb::object& stride, const pb::object& padding, const pb::object& dilation,
         int64_t groups, const std::string& direction, const pb::object& dtype,
         const pb::object& device) {
        EMBER_CHECK_SHAPE(input.size() == 4 && weight.size() == 4,
                          "explain_conv_algos: expected 4-D input and weight shapes");
        auto s = pair_arg(stride, "stride"), p = pair_arg(padding, "padding"),
             d = pair_arg(dilation, "dilation");
        Device dev = device_arg(device);
        ops::ConvDirection dir;
        if (direction == "forward")
          dir = ops::ConvDirection::forward;
        else if (direction == "backward_data")
          dir = ops::ConvDirection::backward_data;
        else if (direction == "backward_filter")
          dir = ops::ConvDirection::backward_filter;
        else
          throw pb::value_error(
              "direction must be 'forward', 'backward_data' or 'backward_filter'");
        ops::Conv2dParams cp;
        cp.stride = {s[0], s[1]}, cp.padding = {p[0], p[1]}, cp.dilation = {d[0], d[1]};
        cp.groups = groups;
        const ops::ConvKey k =
            ops::conv2d_key(dir, input, weight, dtype_arg(dtype, kFloat32), dev, cp);
        ops::ConvSelection sel = ops::explain_conv_algos(k);
        pb::dict r;
        r["key"] = ops::conv_key_string(k);
        r["policy"] = ops::conv_policy_name(sel.policy);
        r["chosen"] = sel.chosen;
        r["reason"] = sel.reason;
        r["source"] = sel.source;
        pb::list cands;
        for (const auto& c : sel.candidates) cands.append(candidate_dict(c));
        r["candidates"] = cands;
        return r;
      },
      pb::arg("input_shape"), pb::arg("weight_shape"), pb::arg("stride") = 1,
      pb::arg("padding") = 0, pb::arg("dilation") = 1, pb::arg("groups") = 1,
      pb::arg("direction") = "forward", pb::arg("dtype") = pb::none(), pb::arg("device") = "cpu");
}

}  // namespace ember::py
