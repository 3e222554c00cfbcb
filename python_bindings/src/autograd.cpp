// Autograd from Python: grad mode, autograd.grad, gradcheck, and custom differentiable functions
// whose backward is a Python callable.
//
// Note [GIL and the graph]: backward() runs with the GIL released, so a Python backward takes the
// GIL itself. A graph node may also be destroyed without the GIL (the engine frees nodes as it
// goes), so the Python callable a node holds is released under the GIL by GilHeld.
#include <memory>

#include "autograd/autocast.h"
#include "autograd/function.h"
#include "common.h"

namespace ember::py {
namespace {

struct GilHeld {
  pb::object obj;
  explicit GilHeld(pb::object o) : obj(std::move(o)) {}
  ~GilHeld() {
    if (!Py_IsInitialized()) {
      obj.release();  // interpreter gone: leak rather than touch it
      return;
    }
    pb::gil_scoped_acquire gil;
    obj = pb::object();
  }
};

std::vector<Tensor> tensor_list(const pb::object& o) {
  std::vector<Tensor> v;
  if (pb::isinstance<Tensor>(o)) {
    v.push_back(o.cast<Tensor>());
    return v;
  }
  for (auto x : o) v.push_back(x.cast<Tensor>());
  return v;
}

// Wraps `out` (computed by a Python forward under no_grad) in a node whose backward calls
// `backward(grad_out, saved)` and expects one gradient (or None) per input.
Tensor record_function(const std::string& name, const Tensor& out,
                       const std::vector<Tensor>& inputs, const std::vector<Tensor>& saved,
                       const pb::object& backward) {
  if (!any_requires_grad(inputs)) return out;
  note_python_function(name);
  auto fn = std::make_shared<GilHeld>(backward);
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  for (const Tensor& t : inputs) {
    shapes.push_back(t.shape());
    dtypes.push_back(t.dtype());
  }
  // record() keeps `name` as a std::string in the node; its const char* is used only at once.
  return record(name.c_str(), out, inputs, saved,
                [fn, shapes, dtypes, name](const Tensor& g, const std::vector<Tensor>& sv) {
                  pb::gil_scoped_acquire gil;
                  pb::object r = fn->obj(g, sv);
                  std::vector<pb::object> items;
                  if (pb::isinstance<pb::tuple>(r) || pb::isinstance<pb::list>(r)) {
                    for (auto x : r) items.push_back(pb::reinterpret_borrow<pb::object>(x));
                  } else {
                    items.push_back(r);
                  }
                  if (items.size() != shapes.size())
                    throw ValueError(name + ".backward returned " + std::to_string(items.size()) +
                                     " gradients, expected " + std::to_string(shapes.size()) +
                                     " (one per tensor input; None for no gradient)");
                  std::vector<Tensor> grads;
                  for (size_t i = 0; i < items.size(); ++i) {
                    if (items[i].is_none()) {
                      grads.emplace_back();
                      continue;
                    }
                    Tensor gi = items[i].cast<Tensor>();
                    EMBER_CHECK_SHAPE(gi.shape() == shapes[i], name, ".backward: gradient ", i,
                                      " has shape ", gi.shape(), ", expected ", shapes[i]);
                    grads.push_back(gi.to(dtypes[i]));
                  }
                  return grads;
                });
}

}  // namespace

void init_autograd(pb::module_& m) {
  using pb::arg;
  m.def("is_grad_enabled", &GradMode::is_enabled);
  m.def("set_grad_enabled", &GradMode::set_enabled, arg("mode"));
  m.def("_backward", [](const pb::object& tensors, const pb::object& grads, bool retain_graph) {
    std::vector<Tensor> ts = tensor_list(tensors);
    std::vector<Tensor> gs;
    if (!grads.is_none()) {
      for (auto g : grads) gs.push_back(g.is_none() ? Tensor() : g.cast<Tensor>());
    }
    pb::gil_scoped_release release;
    for (size_t i = 0; i < ts.size(); ++i)
      backward(ts[i], i < gs.size() ? gs[i] : Tensor(), retain_graph || i + 1 < ts.size());
  });
  m.def(
      "_grad",
      [](const pb::object& outputs, const pb::object& inputs, const pb::object& grad_outputs,
         bool retain_graph, bool allow_unused) {
        std::vector<Tensor> outs = tensor_list(outputs), ins = tensor_list(inputs), gouts;
        if (!grad_outputs.is_none()) {
          for (auto g :
               (pb::isinstance<Tensor>(grad_outputs) ? pb::list(pb::make_tuple(grad_outputs))
                                                     : pb::list(grad_outputs)))
            gouts.push_back(g.is_none() ? Tensor() : g.cast<Tensor>());
        }
        std::vector<Tensor> r;
        {
          pb::gil_scoped_release release;
          r = grad(outs, ins, gouts, retain_graph, allow_unused);
        }
        pb::list l;
        for (const Tensor& t : r) l.append(t.defined() ? pb::cast(t) : pb::none());
        return pb::tuple(l);
      },
      arg("outputs"), arg("inputs"), arg("grad_outputs") = pb::none(), arg("retain_graph") = false,
      arg("allow_unused") = false);
  m.def("_gradcheck", [](const pb::function& fn, const std::vector<Tensor>& inputs, double eps,
                         double atol, double rtol) {
    GradcheckOptions o;
    o.eps = eps;
    o.atol = atol;
    o.rtol = rtol;
    std::string why;
    bool ok = gradcheck(
        [&fn](const std::vector<Tensor>& xs) {
          pb::tuple args(xs.size());
          for (size_t i = 0; i < xs.size(); ++i) args[i] = pb::cast(xs[i]);
          pb::object r = fn(*args);
          return r.cast<Tensor>();
        },
        inputs, o, &why);
    return pb::make_tuple(ok, why);
  });
  m.def("_record_function", &record_function, arg("name"), arg("output"), arg("inputs"),
        arg("saved"), arg("backward"));

  // Autocast: ember.autocast (ember/amp.py) opens an AutocastGuard on __enter__ and closes it on
  // __exit__; the guard's checks run when the region opens.
  struct Region {
    std::string device_type;
    std::optional<DType> dtype;
    bool enabled, cache_enabled;
    std::unique_ptr<AutocastGuard> guard;
  };
  pb::class_<Region>(m, "_AutocastRegion")
      .def(pb::init([](const std::string& device_type, const pb::object& dtype, bool enabled,
                       bool cache_enabled) {
             std::optional<DType> t;
             if (!dtype.is_none()) t = dtype_arg(dtype, kFloat16);
             (void)autocast_device_from_string(device_type);  // a bad name fails here already
             return Region{device_type, t, enabled, cache_enabled, nullptr};
           }),
           arg("device_type"), arg("dtype") = pb::none(), arg("enabled") = true,
           arg("cache_enabled") = true)
      .def("enter",
           [](Region& r) {
             r.guard = std::make_unique<AutocastGuard>(r.device_type, r.dtype, r.enabled,
                                                       r.cache_enabled);
           })
      .def("exit", [](Region& r) { r.guard.reset(); });
  m.def(
      "is_autocast_enabled",
      [](const std::string& device_type) {
        return is_autocast_enabled(autocast_device_from_string(device_type));
      },
      arg("device_type") = "cuda");
  m.def(
      "get_autocast_dtype",
      [](const std::string& device_type) {
        return autocast_state(autocast_device_from_string(device_type)).dtype;
      },
      arg("device_type"));
  m.def("_autocast_cache_size", &autocast_cache_size);
}

}  // namespace ember::py
