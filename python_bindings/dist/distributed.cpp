// ember._dist: the distributed layer for Python (ember.distributed, ember.nn.parallel,
// ember.utils.data.distributed). Tensors and modules are the classes ember._C registers;
// pybind11 shares them between the two extension modules.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "dist/backends.h"
#include "dist/ddp.h"
#include "dist/process_group.h"
#include "dist/sampler.h"
#include "dist/sync_batch_norm.h"
#include "nn/layers.h"

namespace pb = pybind11;
using namespace ember;
using namespace ember::dist;

PYBIND11_MODULE(_dist, m) {
  m.doc() = "Ember's distributed layer (the ember.distributed package wraps it)";
  pb::module_ c = pb::module_::import("ember._C");  // Tensor, _Module and ember.Error
  static pb::exception<DistError> dist_error(m, "DistError", c.attr("Error"));
  // Tried before ember._C's translators (the most recent first), which would map a DistError to
  // the plain ember.Error.
  pb::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DistError& e) {
      PyErr_SetString(dist_error.ptr(), e.what());
    }
  });

  pb::enum_<ReduceOp>(m, "ReduceOp")
      .value("SUM", ReduceOp::sum)
      .value("AVG", ReduceOp::avg)
      .value("PRODUCT", ReduceOp::product)
      .value("MIN", ReduceOp::min)
      .value("MAX", ReduceOp::max);

  pb::class_<Work, std::shared_ptr<Work>>(m, "Work")
      .def("wait",
           [](Work& w) {
             pb::gil_scoped_release nogil;
             w.wait();
             return true;
           })
      .def("is_completed", &Work::is_completed);

  using pb::arg;
  pb::class_<ProcessGroup, std::shared_ptr<ProcessGroup>>(m, "ProcessGroup")
      .def("rank", &ProcessGroup::rank)
      .def("size", &ProcessGroup::size)
      .def("backend", &ProcessGroup::backend)
      .def_property_readonly("timeout_s",
                             [](const ProcessGroup& g) { return g.timeout().count() / 1000.0; })
      .def("all_reduce", &ProcessGroup::all_reduce, arg("tensor"), arg("op") = ReduceOp::sum)
      .def("broadcast", &ProcessGroup::broadcast, arg("tensor"), arg("src") = 0)
      .def("all_gather", &ProcessGroup::all_gather, arg("tensor_list"), arg("tensor"))
      .def("reduce_scatter", &ProcessGroup::reduce_scatter, arg("output"), arg("input_list"),
           arg("op") = ReduceOp::sum)
      .def("barrier", &ProcessGroup::barrier);

  m.def(
      "init_process_group",
      [](const std::string& backend, const std::string& init_method, double timeout_s,
         const std::string& device) {
        InitOptions o;
        o.backend = backend;
        o.init_method = init_method;
        EMBER_CHECK_VALUE(timeout_s > 0, "init_process_group: timeout must be positive, got ",
                          timeout_s, " s");
        o.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
        o.device = device.empty() ? kCPU : Device::parse(device);
        return init_process_group(o);
      },
      arg("backend"), arg("init_method"), arg("timeout_s"), arg("device") = "");
  m.def("is_initialized", &is_initialized);
  m.def("default_group", &default_group_ptr);
  m.def("destroy_process_group", &destroy_process_group);
  m.def("launch", [] {
    const Launch l = detect_launch();
    const char* kinds[] = {"none", "mpi", "env"};
    return pb::make_tuple(kinds[static_cast<int>(l.kind)], l.rank, l.world_size);
  });
  m.def("how_to_launch", [](const std::string& program) { return how_to_launch(program); });
  m.def("mpi_missing_reason", &mpi_missing_reason);
  m.def("nccl_missing_reason", &nccl_missing_reason);

  pb::class_<Reducer, std::shared_ptr<Reducer>>(m, "Reducer")
      .def(pb::init<std::vector<Tensor>, ProcessGroupPtr, size_t, std::vector<std::string>>(),
           arg("params"), arg("group"), arg("bucket_cap_bytes"),
           arg("names") = std::vector<std::string>{})
      .def_property("sync", &Reducer::sync, &Reducer::set_sync)
      .def("prepare_forward", &Reducer::prepare_forward)
      .def("bucket_indices", &Reducer::bucket_indices)
      .def("bucket_bytes", &Reducer::bucket_bytes)
      .def("timeline", [](const Reducer& r) {
        const char* kinds[] = {"grad_ready", "bucket_launched", "bucket_done"};
        pb::list out;
        for (const auto& e : r.timeline())
          out.append(pb::make_tuple(kinds[static_cast<int>(e.kind)], e.index, e.ms));
        return out;
      });
  m.def(
      "check_same_parameters",
      [](const std::vector<std::string>& names, const std::vector<Tensor>& params,
         ProcessGroup& g) {
        NamedTensors named;
        for (size_t i = 0; i < params.size(); ++i) named.emplace_back(names.at(i), params[i]);
        check_same_parameters(named, g);
      },
      arg("names"), arg("params"), arg("group"));
  m.def("broadcast_from_rank0", &broadcast_from_rank0, arg("tensors"), arg("group"));

  m.def(
      "sampler_indices",
      [](int64_t n, int replicas, int rank, bool shuffle, uint64_t seed, uint64_t epoch,
         bool drop_last) {
        DistributedSampler s(n, replicas, rank, shuffle, seed, drop_last);
        s.set_epoch(epoch);
        return pb::make_tuple(s.indices(), s.num_samples());
      },
      arg("n"), arg("num_replicas"), arg("rank"), arg("shuffle"), arg("seed"), arg("epoch"),
      arg("drop_last"));

  m.def(
      "make_sync_batch_norm",
      [](const std::shared_ptr<nn::Module>& module, const ProcessGroupPtr& group) {
        auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(module);
        if (!bn) throw pb::type_error("make_sync_batch_norm: expected a BatchNorm2d");
        bn->statistics = std::make_shared<SyncBatchNormStatistics>(group);
      },
      arg("module"), arg("group") = nullptr);
  m.def("all_reduce_sum", &all_reduce_sum, arg("tensor"), arg("group"));
}
