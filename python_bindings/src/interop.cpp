// Zero-copy interchange: NumPy arrays (buffer sharing both ways) and DLPack capsules (both ways).
// Memory owned by Python is kept alive by an owner that drops its reference under the GIL.
#include "common.h"
#include "dlpack.h"

namespace ember::py {
namespace {

// Drops a Python reference from wherever the last tensor handle dies (maybe without the GIL).
std::shared_ptr<void> py_owner(pb::object obj) {
  auto* held = new pb::object(std::move(obj));
  return std::shared_ptr<void>(held, [](void* p) {
    if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than crash
    pb::gil_scoped_acquire gil;
    delete static_cast<pb::object*>(p);
  });
}

DType dtype_from_numpy(const pb::dtype& d) {
  if (d.byteorder() == '>')
    throw pb::type_error("ember: NumPy arrays in big-endian byte order are not supported");
  char kind = d.kind();
  size_t size = static_cast<size_t>(d.itemsize());
  if (kind == 'f' && size == 4) return kFloat32;
  if (kind == 'f' && size == 8) return kFloat64;
  if (kind == 'f' && size == 2) return kFloat16;
  if (kind == 'i' && size == 4) return kInt32;
  if (kind == 'i' && size == 8) return kInt64;
  if (kind == 'u' && size == 1) return kUInt8;
  if (kind == 'b' && size == 1) return kBool;
  throw pb::type_error("ember: unsupported NumPy dtype " + d.attr("name").cast<std::string>() +
                       " (supported: float16, float32, float64, int32, int64, uint8, bool)");
}

// DLPack ------------------------------------------------------------------------------------------

struct ExportCtx {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed;
};

DLDataType dl_dtype(DType t) {
  switch (t) {
    case kFloat32:
      return {kDLFloat, 32, 1};
    case kFloat64:
      return {kDLFloat, 64, 1};
    case kFloat16:
      return {kDLFloat, 16, 1};
    case kBFloat16:
      return {kDLBfloat, 16, 1};
    case kInt32:
      return {kDLInt, 32, 1};
    case kInt64:
      return {kDLInt, 64, 1};
    case kUInt8:
      return {kDLUInt, 8, 1};
    case kBool:
      return {kDLBool, 8, 1};
  }
  throw DTypeError("dlpack: unknown dtype");
}

DType dtype_from_dl(DLDataType d) {
  if (d.lanes == 1) {
    if (d.code == kDLFloat && d.bits == 32) return kFloat32;
    if (d.code == kDLFloat && d.bits == 64) return kFloat64;
    if (d.code == kDLFloat && d.bits == 16) return kFloat16;
    if (d.code == kDLBfloat && d.bits == 16) return kBFloat16;
    if (d.code == kDLInt && d.bits == 32) return kInt32;
    if (d.code == kDLInt && d.bits == 64) return kInt64;
    if (d.code == kDLUInt && d.bits == 8) return kUInt8;
    if (d.code == kDLBool && d.bits == 8) return kBool;
  }
  throw pb::type_error("from_dlpack: unsupported DLPack dtype (code " + std::to_string(d.code) +
                       ", bits " + std::to_string(d.bits) + ", lanes " + std::to_string(d.lanes) +
                       ")");
}

void capsule_destructor(PyObject* capsule) {
  // A capsule nobody consumed still owns its tensor; a consumed one was renamed "used_dltensor".
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m && m->deleter) m->deleter(m);
  } else {
    PyErr_Clear();
  }
}

pb::object to_dlpack(const Tensor& t, const pb::object& stream) {
  (void)stream;  // CPU tensors need no stream ordering; Ember's GPU ops run on the default stream
  if (t.requires_grad())
    throw pb::buffer_error(
        "__dlpack__: cannot export a tensor that requires grad; use tensor.detach()");
  Device d = t.device();
  if (d.is_emu())
    throw DeviceError("__dlpack__: emu tensors have no DLPack device; move it with .cpu() first");
  auto* ctx =
      new ExportCtx{t, std::vector<int64_t>(t.shape()), std::vector<int64_t>(t.strides()), {}};
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = t.numel() ? t.data_ptr() : nullptr;
  dl.device = {d.is_cuda() ? kDLCUDA : kDLCPU, d.is_cuda() ? d.index : 0};
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = dl_dtype(t.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<ExportCtx*>(self->manager_ctx);
  };
  PyObject* cap = PyCapsule_New(&ctx->managed, "dltensor", capsule_destructor);
  if (!cap) {
    delete ctx;
    throw pb::error_already_set();
  }
  return pb::reinterpret_steal<pb::object>(cap);
}

Tensor from_dlpack(const pb::object& obj) {
  pb::object capsule = obj;
  if (!PyCapsule_CheckExact(obj.ptr())) {
    if (!pb::hasattr(obj, "__dlpack__"))
      throw pb::type_error(
          "from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got " +
          pb::str(obj.get_type().attr("__name__")).cast<std::string>());
    if (pb::hasattr(obj, "__dlpack_device__")) {
      auto dev = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
      if (dev.first != kDLCPU)
        throw DeviceError("from_dlpack: the producer's memory is on DLPack device type " +
                          std::to_string(dev.first) + " (id " + std::to_string(dev.second) +
                          "); Ember imports only CPU memory (kDLCPU = 1)");
    }
    capsule = obj.attr("__dlpack__")();
  }
  if (!PyCapsule_CheckExact(capsule.ptr()))
    throw pb::type_error("from_dlpack: __dlpack__ did not return a capsule");
  const char* name = PyCapsule_GetName(capsule.ptr());
  if (name && std::string(name) == "used_dltensor")
    throw pb::value_error(
        "from_dlpack: this DLPack capsule was already consumed (a capsule can be imported once)");
  if (!name || std::string(name) != "dltensor")
    throw pb::value_error("from_dlpack: not a DLPack capsule (name '" +
                          std::string(name ? name : "") + "')");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (!m) throw pb::error_already_set();
  const DLTensor& dl = m->dl_tensor;
  if (dl.device.device_type != kDLCPU)
    throw DeviceError("from_dlpack: the capsule's memory is on DLPack device type " +
                      std::to_string(dl.device.device_type) +
                      "; Ember imports only CPU memory (kDLCPU = 1)");
  DType dt = dtype_from_dl(dl.dtype);
  Shape shape(dl.shape, dl.shape + dl.ndim);
  Shape strides = dl.strides ? Shape(dl.strides, dl.strides + dl.ndim) : contiguous_strides(shape);
  // Ownership passes to the tensor: the capsule is renamed so its destructor leaves it alone.
  if (PyCapsule_SetName(capsule.ptr(), "used_dltensor") != 0) throw pb::error_already_set();
  std::shared_ptr<void> owner(m, [](void* p) {
    auto* mt = static_cast<DLManagedTensor*>(p);
    if (!mt->deleter) return;
    if (!Py_IsInitialized()) return;
    pb::gil_scoped_acquire gil;  // producers such as NumPy drop Python references in their deleter
    mt->deleter(mt);
  });
  char* data = static_cast<char*>(dl.data) + dl.byte_offset;
  return from_blob(data, shape, strides, dt, owner);
}

}  // namespace

pb::dtype numpy_dtype(DType t) {
  switch (t) {
    case kFloat32:
      return pb::dtype("float32");
    case kFloat64:
      return pb::dtype("float64");
    case kFloat16:
      return pb::dtype("float16");
    case kInt32:
      return pb::dtype("int32");
    case kInt64:
      return pb::dtype("int64");
    case kUInt8:
      return pb::dtype("uint8");
    case kBool:
      return pb::dtype("bool");
    case kBFloat16:
      break;
  }
  throw pb::type_error("numpy(): NumPy has no bfloat16 dtype; convert with .float() first");
}

Tensor from_numpy(const pb::array& a) {
  DType dt = dtype_from_numpy(a.dtype());
  Shape shape, strides;
  const auto isz = static_cast<int64_t>(itemsize(dt));
  for (pb::ssize_t i = 0; i < a.ndim(); ++i) {
    shape.push_back(a.shape(i));
    int64_t s = a.strides(i);
    if (s < 0)
      throw pb::value_error(
          "from_numpy: arrays with negative strides are not supported; use a.copy()");
    if (s % isz != 0)
      throw pb::value_error(
          "from_numpy: strides that are not a multiple of the item size are not supported");
    strides.push_back(s / isz);
  }
  void* data = const_cast<void*>(a.data());
  return from_blob(data, shape, strides, dt, py_owner(a));
}

pb::array to_numpy(const Tensor& t, const pb::handle& base) {
  if (!t.device().is_cpu())
    throw pb::type_error("numpy(): the tensor is on " + t.device().str() +
                         "; copy it with .cpu() first");
  if (t.requires_grad())
    throw pb::value_error(
        "numpy(): cannot view a tensor that requires grad; use tensor.detach().numpy()");
  std::vector<pb::ssize_t> shape(t.shape().begin(), t.shape().end()), strides;
  for (int64_t s : t.strides()) strides.push_back(s * static_cast<int64_t>(t.element_size()));
  return pb::array(numpy_dtype(t.dtype()), shape, strides, t.data_ptr(), base);
}

void init_interop(pb::module_& m, pb::class_<Tensor>& cls) {
  cls.def(
      "numpy", [](const pb::object& self) { return to_numpy(self.cast<const Tensor&>(), self); },
      "A NumPy array sharing this CPU tensor's memory (no copy).");
  cls.def("__dlpack__", &to_dlpack, pb::arg("stream") = pb::none());
  cls.def("__dlpack_device__", [](const Tensor& t) {
    Device d = t.device();
    if (d.is_emu()) throw DeviceError("__dlpack_device__: emu tensors have no DLPack device");
    return pb::make_tuple(static_cast<int>(d.is_cuda() ? kDLCUDA : kDLCPU),
                          d.is_cuda() ? d.index : 0);
  });
  m.def(
      "from_numpy",
      [](const pb::object& a) {
        if (!pb::isinstance<pb::array>(a))
          throw pb::type_error("from_numpy: expected a numpy.ndarray, got " +
                               pb::str(a.get_type().attr("__name__")).cast<std::string>());
        return from_numpy(a.cast<pb::array>());
      },
      pb::arg("ndarray"), "A tensor sharing the array's memory (no copy).");
  m.def("from_dlpack", &from_dlpack, pb::arg("ext_tensor"),
        "A tensor sharing the memory of an object with __dlpack__ (or of a DLPack capsule).");
  m.def("_to_dlpack", &to_dlpack, pb::arg("tensor"), pb::arg("stream") = pb::none());
}

}  // namespace ember::py
