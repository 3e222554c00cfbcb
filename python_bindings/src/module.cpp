// The extension module ember._C: each binding file adds its part.
#include "common.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "Ember's C++ runtime (the ember package wraps it)";
  ember::py::init_errors(m);
  ember::py::init_runtime(m);
  ember::py::init_graph(m);
  ember::py::init_tensor(m);
  ember::py::init_create(m);
  ember::py::init_ops(m);
  ember::py::init_tensor_ops(m);
  ember::py::init_nn_ops(m);
  ember::py::init_autograd(m);
  ember::py::init_nn(m);
  ember::py::init_optim(m);
  ember::py::init_nn_layers(m);
}
