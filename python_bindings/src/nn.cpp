// The C++ layers, models, safetensors files and data sets (the optimisers are in optim.cpp). The
// Python classes in ember/nn wrap these objects; the tensors they hand out are the same handles
// the C++ objects use, so updates on either side are seen by both.
#include "common.h"

namespace ember::py {
namespace {

pb::list named_list(const NamedTensors& nt) {
  pb::list l;
  for (const auto& [k, v] : nt) l.append(pb::make_tuple(k, v));
  return l;
}

NamedTensors named_from(const pb::handle& obj) {
  NamedTensors nt;
  pb::object items = pb::isinstance<pb::dict>(obj) || pb::hasattr(obj, "items")
                         ? obj.attr("items")()
                         : pb::reinterpret_borrow<pb::object>(obj);
  for (auto kv : items) {
    auto t = kv.cast<pb::tuple>();
    nt.emplace_back(t[0].cast<std::string>(), detach(t[1].cast<Tensor>()));
  }
  return nt;
}

Split split_arg(const std::string& s) {
  if (s == "train") return Split::train;
  if (s == "test") return Split::test;
  throw pb::value_error("split must be 'train' or 'test', got '" + s + "'");
}

pb::tuple dataset_tuple(const TensorDataset& d) {
  return pb::make_tuple(d.inputs(), d.labels());
}

}  // namespace

void init_nn(pb::module_& m) {
  using nn::Module;
  using pb::arg;
  auto none = pb::none();
  pb::class_<Module, std::shared_ptr<Module>>(m, "_Module")
      .def(
          "forward", [](Module& mod, const Tensor& x) { return mod.forward(x); },
          pb::call_guard<pb::gil_scoped_release>())
      .def(
          "named_parameters",
          [](const Module& mod, bool r) { return named_list(mod.named_parameters(r)); },
          arg("recurse") = true)
      .def(
          "named_buffers",
          [](const Module& mod, bool r) { return named_list(mod.named_buffers(r)); },
          arg("recurse") = true)
      .def("named_children", &Module::named_children)
      .def("train", &Module::train, arg("mode") = true)
      .def_property_readonly("training", &Module::is_training)
      .def("name", &Module::name)
      .def("extra_repr", &Module::extra_repr)
      .def("repr", [](const Module& mod) { return mod.repr(); });

  // fuse_for_inference (nn/fuse.h): the pairs are found by ember/nn/utils.py over the Python
  // module tree, which mirrors the C++ one; each is folded here.
  pb::class_<nn::FoldUndo>(m, "_FoldUndo").def("restore", &nn::FoldUndo::restore);
  m.attr("_fuse_tolerance") = nn::kFuseTolerance;
  m.def("_fold_relu", [](const std::shared_ptr<Module>& conv, const std::shared_ptr<Module>& relu) {
    auto c = std::dynamic_pointer_cast<nn::Conv2d>(conv);
    if (!c) throw pb::type_error("_fold_relu: expected a Conv2d");
    return nn::fold_relu(c, relu);
  });
  m.def("_bn_folded", [](const std::shared_ptr<Module>& bn) {
    auto b = std::dynamic_pointer_cast<nn::BatchNorm2d>(bn);
    return b != nullptr && b->folded;
  });
  m.def("_unfold_relu",
        [](const std::shared_ptr<Module>& conv, const std::shared_ptr<Module>& relu) {
          std::dynamic_pointer_cast<nn::Conv2d>(conv)->fused_relu = false;
          std::dynamic_pointer_cast<nn::Activation>(relu)->folded = false;
        });
  m.def("_fold_batch_norm",
        [](const std::shared_ptr<Module>& conv, const std::shared_ptr<Module>& bn) {
          auto c = std::dynamic_pointer_cast<nn::Conv2d>(conv);
          auto b = std::dynamic_pointer_cast<nn::BatchNorm2d>(bn);
          if (!c || !b)
            throw pb::type_error("_fold_batch_norm: expected a Conv2d and a BatchNorm2d");
          nn::FoldUndo undo;
          const std::string why = nn::fold_batch_norm(c, b, &undo);
          return pb::make_tuple(why, why.empty() ? pb::cast(undo) : pb::none());
        });

  m.def("_Linear", [](int64_t in, int64_t out, bool bias) -> std::shared_ptr<Module> {
    return std::make_shared<nn::Linear>(in, out, bias);
  });
  m.def("_Embedding", [](int64_t num, int64_t dim, const pb::object& padding_idx,
                         const pb::object& max_norm, double norm_type,
                         bool scale_grad_by_freq) -> std::shared_ptr<Module> {
    nn::EmbeddingOptions o;
    if (!padding_idx.is_none()) o.padding_idx = padding_idx.cast<int64_t>();
    if (!max_norm.is_none()) o.max_norm = max_norm.cast<double>();
    o.norm_type = norm_type;
    o.scale_grad_by_freq = scale_grad_by_freq;
    return std::make_shared<nn::Embedding>(num, dim, o);
  });
  m.def("_BatchNorm2d",
        [](int64_t n, double eps, double momentum, bool affine,
           bool track) -> std::shared_ptr<Module> {
          return std::make_shared<nn::BatchNorm2d>(n, eps, momentum, affine, track);
        });
  m.def("_MaxPool2d",
        [](int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) -> std::shared_ptr<Module> {
          return std::make_shared<nn::MaxPool2d>(k, s, p, d, ceil);
        });
  m.def("_AvgPool2d",
        [](int64_t k, int64_t s, int64_t p, bool ceil, bool cip) -> std::shared_ptr<Module> {
          return std::make_shared<nn::AvgPool2d>(k, s, p, ceil, cip);
        });
  m.def("_AdaptiveAvgPool2d", [](const pb::object& size) -> std::shared_ptr<Module> {
    return std::make_shared<nn::AdaptiveAvgPool2d>(pair_arg(size, "AdaptiveAvgPool2d output_size"));
  });
  m.def("_Flatten", [](int64_t s, int64_t e) -> std::shared_ptr<Module> {
    return std::make_shared<nn::Flatten>(s, e);
  });
  m.def("_Dropout",
        [](double p) -> std::shared_ptr<Module> { return std::make_shared<nn::Dropout>(p); });
  m.def("_ReLU", [] { return std::shared_ptr<Module>(nn::ReLU()); });
  m.def("_LeakyReLU", [](double s) { return std::shared_ptr<Module>(nn::LeakyReLU(s)); });
  m.def("_Sigmoid", [] { return std::shared_ptr<Module>(nn::Sigmoid()); });
  m.def("_Tanh", [] { return std::shared_ptr<Module>(nn::Tanh()); });
  m.def("_GELU", [](const std::string& a) {
    if (a != "none" && a != "tanh")
      throw pb::value_error("GELU approximate must be 'none' or 'tanh'");
    return std::shared_ptr<Module>(
        nn::GELU(a == "tanh" ? GeluApproximate::Tanh : GeluApproximate::None));
  });
  m.def("_SiLU", [] { return std::shared_ptr<Module>(nn::SiLU()); });
  m.def("_ELU", [](double a) { return std::shared_ptr<Module>(nn::ELU(a)); });
  m.def("_Hardtanh",
        [](double lo, double hi) { return std::shared_ptr<Module>(nn::Hardtanh(lo, hi)); });
  m.def("_ReLU6", [] { return std::shared_ptr<Module>(nn::ReLU6()); });
  m.def("_Softplus",
        [](double b, double t) { return std::shared_ptr<Module>(nn::Softplus(b, t)); });
  m.def(
      "_make_model",
      [](const std::string& name, int64_t in_channels, int64_t image_size, int64_t num_classes) {
        nn::ModelSpec spec;
        spec.in_channels = in_channels;
        spec.image_size = image_size;
        spec.num_classes = num_classes;
        return nn::make_model(name, spec);
      },
      arg("name"), arg("in_channels") = 1, arg("image_size") = 8, arg("num_classes") = 10);

  m.def(
      "_save",
      [](const pb::object& sd, const std::string& path, const pb::object& metadata) {
        Metadata md;
        if (!metadata.is_none()) md = metadata.cast<Metadata>();
        save_safetensors(path, named_from(sd), md);
      },
      arg("state_dict"), arg("path"), arg("metadata") = none,
      "Writes named tensors to a safetensors file.");
  m.def("_load", [](const std::string& path) {
    SafetensorsFile f = load_safetensors(path);
    return pb::make_tuple(named_list(f.tensors), f.metadata);
  });

  m.def("_load_digits", [](const std::string& split, const pb::object& dir) {
    std::string d = dir.is_none() ? default_data_dir() : dir.cast<std::string>();
    return dataset_tuple(load_digits(d, split_arg(split)));
  });
  m.def("_load_mnist", [](const std::string& dir, const std::string& split) {
    return dataset_tuple(load_mnist(dir, split_arg(split)));
  });
  m.def("_load_cifar10", [](const std::string& dir, const std::string& split) {
    return dataset_tuple(load_cifar10(dir, split_arg(split)));
  });
  m.def("_shuffled_indices", &shuffled_indices, arg("n"), arg("seed"), arg("epoch"));

  // Initialisers (in place, PyTorch's fan and gain conventions), for ember.nn.init.
  namespace init = nn::init;
  auto fan = [](const std::string& mode) {
    if (mode == "fan_in") return init::FanMode::FanIn;
    if (mode == "fan_out") return init::FanMode::FanOut;
    throw pb::value_error("mode must be 'fan_in' or 'fan_out', got '" + mode + "'");
  };
  m.def("_init_calculate_gain",
        [](const std::string& n, double p) { return init::calculate_gain(n, p); });
  m.def("_init_uniform_", [](Tensor t, double a, double b) { init::uniform_(t, a, b); });
  m.def("_init_normal_", [](Tensor t, double mean, double std) { init::normal_(t, mean, std); });
  m.def("_init_constant_", [](Tensor t, double v) { init::constant_(t, v); });
  m.def("_init_kaiming_uniform_",
        [fan](Tensor t, double a, const std::string& mode, const std::string& nl) {
          init::kaiming_uniform_(t, a, fan(mode), nl);
        });
  m.def("_init_kaiming_normal_",
        [fan](Tensor t, double a, const std::string& mode, const std::string& nl) {
          init::kaiming_normal_(t, a, fan(mode), nl);
        });
  m.def("_init_xavier_uniform_", [](Tensor t, double gain) { init::xavier_uniform_(t, gain); });
  m.def("_init_xavier_normal_", [](Tensor t, double gain) { init::xavier_normal_(t, gain); });

  using nn::GradScaler;
  pb::class_<GradScaler>(m, "_GradScaler")
      .def(pb::init([](double init, double growth, double backoff, int64_t interval, bool on) {
        return GradScaler({init, growth, backoff, interval, on});
      }))
      .def("scale", &GradScaler::scale)
      .def("unscale_", &GradScaler::unscale_, pb::call_guard<pb::gil_scoped_release>())
      .def("step", &GradScaler::step, pb::call_guard<pb::gil_scoped_release>())
      .def("update", [](GradScaler& s) { s.update(); })
      .def("update", [](GradScaler& s, double v) { s.update(v); })
      .def("update", [](GradScaler& s, const Tensor& v) { s.update(v); })
      .def("get_scale", &GradScaler::get_scale)
      .def("get_growth_tracker", &GradScaler::get_growth_tracker)
      .def_property("growth_factor", &GradScaler::get_growth_factor, &GradScaler::set_growth_factor)
      .def_property("backoff_factor", &GradScaler::get_backoff_factor,
                    &GradScaler::set_backoff_factor)
      .def_property("growth_interval", &GradScaler::get_growth_interval,
                    &GradScaler::set_growth_interval)
      .def("is_enabled", &GradScaler::is_enabled)
      .def("state_dict", [](const GradScaler& s) { return named_list(s.state_dict()); })
      .def("load_state_dict", [](GradScaler& s, const pb::dict& d) {
        NamedTensors nt;
        for (auto kv : d)
          nt.emplace_back(kv.first.cast<std::string>(),
                          full({}, kv.second.cast<double>(), kFloat64));
        s.load_state_dict(nt);
      });
}

}  // namespace ember::py
