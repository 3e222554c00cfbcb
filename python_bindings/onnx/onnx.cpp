// ember._onnx: the ONNX runtime for Python (ember.onnx wraps it). A module of its own, so that
// `import ember` never loads protobuf. Tensors are the class ember._C registers.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "onnx/model.h"
#include "runtime/dtype.h"

namespace pb = pybind11;
using namespace ember;

namespace {

pb::list value_infos(const std::vector<onnx::ValueInfo>& infos) {
  pb::list out;
  for (const auto& v : infos) {
    pb::object shape = pb::none();
    if (v.has_shape) {
      pb::list dims;
      for (int64_t d : v.shape) dims.append(d < 0 ? pb::object(pb::none()) : pb::object(pb::int_(d)));
      shape = pb::tuple(dims);
    }
    out.append(pb::make_tuple(v.name, v.dtype ? pb::object(pb::str(dtype_name(*v.dtype))) : pb::object(pb::none()),
                              shape));
  }
  return out;
}

onnx::LoadOptions options(const std::string& device, bool optimize) {
  onnx::LoadOptions o;
  o.device = Device::parse(device);
  o.optimize = optimize;
  return o;
}

}  // namespace

PYBIND11_MODULE(_onnx, m) {
  m.doc() = "Ember's ONNX runtime (the ember.onnx package wraps it)";
  pb::module_::import("ember._C");  // Tensor and the error translators
  using pb::arg;
  pb::class_<onnx::Model>(m, "Model")
      .def("run",
           [](const onnx::Model& model, const std::vector<Tensor>& inputs) {
             pb::gil_scoped_release nogil;
             return model.run(inputs);
           })
      .def_property_readonly("inputs", [](const onnx::Model& mdl) { return value_infos(mdl.inputs()); })
      .def_property_readonly("outputs", [](const onnx::Model& mdl) { return value_infos(mdl.outputs()); })
      .def_property_readonly("device", [](const onnx::Model& mdl) { return mdl.device().str(); })
      .def_property_readonly("opset", &onnx::Model::opset)
      .def_property_readonly("num_nodes", &onnx::Model::num_nodes)
      .def_property_readonly("passes",
                             [](const onnx::Model& mdl) {
                               const auto& p = mdl.passes();
                               pb::dict d;
                               d["folded_constants"] = p.folded_constants;
                               d["folded_batch_norms"] = p.folded_batch_norms;
                               d["fused_relus"] = p.fused_relus;
                               d["fused_clips"] = p.fused_clips;
                               d["fused_adds"] = p.fused_adds;
                               d["removed_nodes"] = p.removed_nodes;
                               return d;
                             })
      .def("set_profiling", &onnx::Model::set_profiling, arg("on"))
      .def("last_run", [](const onnx::Model& mdl) {
        const auto r = mdl.last_run();
        pb::dict d;
        d["ms"] = r.ms;
        d["peak_bytes"] = r.peak_bytes;
        d["weight_bytes"] = r.weight_bytes;
        pb::list nodes;
        for (const auto& n : r.nodes) nodes.append(pb::make_tuple(n.node, n.op_type, n.ms, n.calls));
        d["nodes"] = nodes;
        return d;
      });
  m.def("load",
        [](const std::string& path, const std::string& device, bool optimize) {
          return onnx::load(path, options(device, optimize));
        },
        arg("path"), arg("device") = "cpu", arg("optimize") = true);
  m.def("load_from_memory",
        [](const pb::bytes& data, const std::string& device, bool optimize) {
          const std::string bytes = data;
          return onnx::load_from_memory(bytes.data(), bytes.size(), options(device, optimize));
        },
        arg("data"), arg("device") = "cpu", arg("optimize") = true);
}
