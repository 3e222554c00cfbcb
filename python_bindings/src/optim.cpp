// The optimisers with their parameter groups, gradient clipping, the cpu's thread count and
// random generators. ember/optim wraps the optimisers: its param_groups are Python dicts, pushed
// to the C++ groups before every step (set_group_options), so edits take effect as in PyTorch.
#include <memory>

#include "common.h"
#include "nn/clip_grad.h"
#include "runtime/threads.h"

namespace ember::py {
namespace {

pb::dict options_dict(const nn::GroupOptions& o) {
  pb::dict d;
  for (const auto& [k, v] : o) d[pb::str(k)] = v;
  return d;
}

nn::GroupOptions options_from(const pb::dict& d) {
  nn::GroupOptions o;
  for (auto kv : d) o[kv.first.cast<std::string>()] = kv.second.cast<double>();
  return o;
}

std::vector<nn::ParamGroup> groups_from(const pb::list& groups) {
  std::vector<nn::ParamGroup> out;
  for (auto g : groups) {
    auto t = g.cast<pb::tuple>();
    out.emplace_back(t[0].cast<std::vector<Tensor>>(), options_from(t[1].cast<pb::dict>()));
  }
  return out;
}

template <typename Options>
Options with(const nn::GroupOptions& o, Options base) {
  auto get = [&](const char* k, double dflt) {
    auto it = o.find(k);
    return it == o.end() ? dflt : it->second;
  };
  if constexpr (std::is_same_v<Options, nn::SGDOptions>) {
    base = {get("lr", base.lr),     get("momentum", 0),      get("dampening", 0),
            get("weight_decay", 0), get("nesterov", 0) != 0, get("maximize", 0) != 0};
  } else if constexpr (std::is_same_v<Options, nn::AdamOptions>) {
    base = {get("lr", base.lr),
            get("beta1", base.beta1),
            get("beta2", base.beta2),
            get("eps", base.eps),
            get("weight_decay", base.weight_decay),
            get("maximize", 0) != 0};
  } else if constexpr (std::is_same_v<Options, nn::RMSpropOptions>) {
    base = {get("lr", base.lr),     get("alpha", base.alpha), get("eps", base.eps),
            get("weight_decay", 0), get("momentum", 0),       get("centered", 0) != 0,
            get("maximize", 0) != 0};
  } else {
    base = {get("lr", base.lr),     get("lr_decay", 0),
            get("weight_decay", 0), get("initial_accumulator_value", 0),
            get("eps", base.eps),   get("maximize", 0) != 0};
  }
  return base;
}

std::shared_ptr<nn::Optimizer> make_optimizer(const std::string& name, const pb::list& groups,
                                              const pb::dict& defaults) {
  std::vector<nn::ParamGroup> g = groups_from(groups);
  const nn::GroupOptions d = options_from(defaults);
  if (name == "SGD") return std::make_shared<nn::SGD>(std::move(g), with(d, nn::SGDOptions{}));
  if (name == "Adam") return std::make_shared<nn::Adam>(std::move(g), with(d, nn::AdamOptions{}));
  if (name == "AdamW") return std::make_shared<nn::AdamW>(std::move(g), with(d, nn::AdamOptions{}));
  if (name == "RMSprop")
    return std::make_shared<nn::RMSprop>(std::move(g), with(d, nn::RMSpropOptions{}));
  if (name == "Adagrad")
    return std::make_shared<nn::Adagrad>(std::move(g), with(d, nn::AdagradOptions{}));
  throw pb::value_error("unknown optimizer '" + name + "'");
}

}  // namespace

void init_optim(pb::module_& m) {
  using nn::Optimizer;
  using pb::arg;
  pb::class_<Optimizer, std::shared_ptr<Optimizer>>(m, "_Optimizer")
      .def("step", static_cast<void (Optimizer::*)()>(&Optimizer::step),
           pb::call_guard<pb::gil_scoped_release>())
      .def("zero_grad", &Optimizer::zero_grad)
      .def_property("lr", &Optimizer::lr, &Optimizer::set_lr)
      .def("params", &Optimizer::params)
      .def("name", &Optimizer::name)
      .def("defaults", [](const Optimizer& o) { return options_dict(o.defaults()); })
      .def("num_groups", [](const Optimizer& o) { return o.param_groups().size(); })
      .def("group_options", [](const Optimizer& o,
                               size_t g) { return options_dict(o.param_groups().at(g).options); })
      .def("group_params",
           [](const Optimizer& o, size_t g) { return o.param_groups().at(g).params; })
      .def("set_group_options",
           [](Optimizer& o, size_t g, const pb::dict& d) {
             nn::ParamGroup& grp = o.param_groups().at(g);
             for (auto kv : d) {
               const std::string k = kv.first.cast<std::string>();
               if (grp.options.count(k) != 0) grp.options[k] = kv.second.cast<double>();
             }
           })
      .def("add_param_group",
           [](Optimizer& o, std::vector<Tensor> params, const pb::dict& d) {
             o.add_param_group({std::move(params), options_from(d)});
           })
      .def("state_dict",
           [](const Optimizer& o) {
             pb::list l;
             for (const auto& [k, v] : o.state_dict()) l.append(pb::make_tuple(k, v));
             return l;
           })
      .def("load_state_dict", [](Optimizer& o, const pb::list& items) {
        NamedTensors nt;
        for (auto kv : items) {
          auto t = kv.cast<pb::tuple>();
          nt.emplace_back(t[0].cast<std::string>(), detach(t[1].cast<Tensor>()));
        }
        o.load_state_dict(nt);
      });
  m.def("_make_optimizer", &make_optimizer, arg("name"), arg("groups"), arg("defaults"));

  m.def("_clip_grad_norm_", &nn::clip_grad_norm_, arg("parameters"), arg("max_norm"),
        arg("norm_type") = 2.0, arg("error_if_nonfinite") = false,
        pb::call_guard<pb::gil_scoped_release>());
  m.def("_clip_grad_value_", &nn::clip_grad_value_, arg("parameters"), arg("clip_value"));
  m.def("_parameters_to_vector", &nn::parameters_to_vector, arg("parameters"));
  m.def("_vector_to_parameters", &nn::vector_to_parameters, arg("vec"), arg("parameters"));

  m.def("set_num_threads", &set_num_threads, arg("int"),
        "Sets the number of threads the cpu's kernels use (OpenMP), for the calling thread.");
  m.def("get_num_threads", &get_num_threads,
        "The number of threads the cpu's kernels use (OpenMP).");

  // A Philox generator (runtime/rng.h) for ember.Generator: (seed, offset) is its whole state.
  pb::class_<Generator, std::shared_ptr<Generator>>(m, "_Generator")
      .def(pb::init<uint64_t>(), arg("seed"))
      .def("manual_seed", &Generator::manual_seed)
      .def("seed", &Generator::seed)
      .def("offset", &Generator::offset)
      .def("set_state", &Generator::set_state);
  m.def("_default_generator",
        [] { return std::shared_ptr<Generator>(&default_generator(), [](Generator*) {}); });
  // n uniform float64 draws in [0, 1) from `gen` (the default generator when None), advancing it.
  m.def("_uniform_draws", [](int64_t n, const std::shared_ptr<Generator>& gen) {
    EMBER_CHECK_VALUE(n >= 0, "random draws: expected a count >= 0, got ", n);
    return rand({n}, kFloat64, gen ? gen.get() : nullptr);
  });
}

}  // namespace ember::py
