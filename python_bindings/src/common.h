// Shared helpers of the Python bindings: conversions between Python objects and Ember values,
// and the init functions each binding file provides to the module.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "ember.h"

namespace ember::py {

namespace pb = pybind11;

// Note [Argument errors] (ember/_argcheck.py): a converter below that gets an argument of the
// wrong type throws ArgTypeError with what it expected (in PyTorch's words: "int or tuple of
// ints") and the object it got. Python sees ember._C._ArgTypeError, a TypeError, and the wrappers
// there name the function and the argument that received the object.
struct ArgTypeError : std::runtime_error {
  ArgTypeError(const std::string& what, std::string expected, pb::object got)
      : std::runtime_error(what), expected(std::move(expected)), got(std::move(got)) {}
  std::string expected;
  pb::object got;
};
// Throws ArgTypeError: "<context>: expected <expected>, got <type of got>".
[[noreturn]] void throw_arg_type(const char* context, const std::string& expected,
                                 const pb::handle& got);

// dtype arguments: an ember.dtype object or a name ("float32", "f32", ...); None gives `dflt`.
DType dtype_arg(const pb::handle& obj, DType dflt);
// Device arguments: an ember.device object or a string ("cpu", "cuda:0", "emu:0"); None gives
// `dflt`.
Device device_arg(const pb::handle& obj, Device dflt = kCPU);
// An int or a sequence of ints as a shape (factories accept both `zeros(2, 3)` and `zeros((2,
// 3))`).
Shape shape_arg(const pb::args& args);
Shape shape_of(const pb::handle& obj);
// An int or an (int, int) pair.
std::array<int64_t, 2> pair_arg(const pb::handle& obj, const char* what);
// None, an int or a sequence of ints, as dims (empty = all).
std::vector<int64_t> dims_arg(const pb::handle& obj);
Reduction reduction_arg(const std::string& s);

// A tensor from a Python value: a Tensor as is; a Python scalar or nested list, a NumPy array or
// an object with __array__ converted (copied). `like` picks the dtype of a bare Python scalar the
// way PyTorch does (it keeps a floating tensor's dtype).
Tensor tensor_from_py(const pb::handle& data, const pb::handle& dtype, Device device);
Tensor as_tensor_like(const pb::handle& value, const Tensor& like);
// A NumPy array sharing memory with `a` (no copy). TypeError for unsupported dtypes.
Tensor from_numpy(const pb::array& a);
// A NumPy array viewing a CPU tensor (no copy); `base` keeps the tensor alive.
pb::array to_numpy(const Tensor& t, const pb::handle& base);
// A NumPy dtype for an Ember dtype (TypeError for bfloat16).
pb::dtype numpy_dtype(DType t);

// The items of a Python index (int, slice, None, Ellipsis, bool, tensor, list or array of
// indices, or a tuple of them), for ember::index; lists and arrays become tensors on `device`.
std::vector<TensorIndex> index_items(const pb::handle& index, Device device);

void init_errors(pb::module_& m);
void init_tensor(pb::module_& m);
void init_tensor_methods(pb::class_<Tensor>& cls);
void init_create(pb::module_& m);
void init_interop(pb::module_& m, pb::class_<Tensor>& cls);
void init_ops(pb::module_& m);
void init_tensor_ops(pb::module_& m);
void init_nn_ops(pb::module_& m);
void init_autograd(pb::module_& m);
void init_nn(pb::module_& m);
void init_optim(pb::module_& m);
void init_graph(pb::module_& m);
// A node name an ember.autograd.Function records (graph.cpp shows it as is, as PyTorch does).
void note_python_function(const std::string& name);
void init_nn_layers(pb::module_& m);
void init_runtime(pb::module_& m);

}  // namespace ember::py
