// Ember's C++ errors as Python exceptions. Each ember error type becomes a Python class that
// derives from ember.Error and from the matching built-in (ShapeError is a ValueError, ...), so
// both `except ember.ShapeError` and `except ValueError` catch it. Messages pass through intact.
#include "common.h"

namespace ember::py {
namespace {

struct PyErrors {
  pb::object error, shape, dtype, device, index, value, oom, format, io, cuda, cudnn, cublas;
  pb::object arg_type;  // Note [Argument errors] in common.h
};
PyErrors* errors = nullptr;  // owned by the module for the interpreter's lifetime

pb::object make_error(pb::module_& m, const char* name, pb::handle bases, const char* doc) {
  std::string full = std::string("ember.") + name;
  pb::object cls = pb::reinterpret_steal<pb::object>(
      PyErr_NewExceptionWithDoc(full.c_str(), doc, bases.ptr(), nullptr));
  if (!cls) throw pb::error_already_set();
  m.attr(name) = cls;
  return cls;
}

void set(const pb::object& cls, const std::exception& e) {
  PyErr_SetString(cls.ptr(), e.what());
}

}  // namespace

void throw_arg_type(const char* context, const std::string& expected, const pb::handle& got) {
  const std::string type =
      got.is_none() ? "NoneType" : pb::str(got.get_type().attr("__name__")).cast<std::string>();
  throw ArgTypeError(std::string(context) + ": expected " + expected + ", got " + type + " (" +
                         pb::repr(got).cast<std::string>() + ")",
                     expected, pb::reinterpret_borrow<pb::object>(got));
}

void init_errors(pb::module_& m) {
  errors = new PyErrors();
  auto b = pb::module_::import("builtins");
  auto& E = *errors;
  E.error = make_error(m, "Error", b.attr("RuntimeError"), "Base class of Ember's errors.");
  auto with = [&](const char* builtin) { return pb::make_tuple(E.error, b.attr(builtin)); };
  E.shape = make_error(m, "ShapeError", with("ValueError"), "Shapes that do not fit together.");
  E.dtype = make_error(m, "DTypeError", with("TypeError"), "An unsupported or mismatched dtype.");
  E.device =
      make_error(m, "DeviceError", pb::make_tuple(E.error), "An unusable or mismatched device.");
  E.index = make_error(m, "IndexError", with("IndexError"), "An index or dim out of range.");
  E.value = make_error(m, "ValueError", with("ValueError"), "An invalid argument value.");
  E.oom = make_error(m, "OutOfMemoryError", with("MemoryError"),
                     "An allocator could not satisfy a request.");
  E.format = make_error(m, "FormatError", with("ValueError"), "A malformed file.");
  // OSError's instance layout extends BaseException's, so it must come first among the bases.
  E.io = make_error(m, "IOError", pb::make_tuple(b.attr("OSError"), E.error),
                    "A file that cannot be read or written.");
  E.cuda = make_error(m, "CudaError", pb::make_tuple(E.error), "A failed CUDA runtime call.");
  E.cudnn = make_error(m, "CudnnError", pb::make_tuple(E.error), "A failed cuDNN call.");
  E.cublas = make_error(m, "CublasError", pb::make_tuple(E.error), "A failed cuBLAS call.");
  E.arg_type = make_error(m, "_ArgTypeError", pb::make_tuple(b.attr("TypeError")),
                          "An argument of the wrong type (ember/_argcheck.py names it).");

  // Most-derived first: a handler for ember::Error would also catch every subtype.
  pb::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    const PyErrors& E = *errors;
    try {
      std::rethrow_exception(p);
    } catch (const ArgTypeError& e) {
      pb::object exc = E.arg_type(pb::str(e.what()));
      exc.attr("expected") = e.expected;
      exc.attr("got") = e.got;
      PyErr_SetObject(E.arg_type.ptr(), exc.ptr());
    } catch (const OutOfMemory& e) {
      set(E.oom, e);
    } catch (const ShapeError& e) {
      set(E.shape, e);
    } catch (const DTypeError& e) {
      set(E.dtype, e);
    } catch (const DeviceError& e) {
      set(E.device, e);
    } catch (const IndexError& e) {
      set(E.index, e);
    } catch (const ValueError& e) {
      set(E.value, e);
    } catch (const FormatError& e) {
      set(E.format, e);
    } catch (const IOError& e) {
      set(E.io, e);
    } catch (const CudaError& e) {
      set(E.cuda, e);
    } catch (const CudnnError& e) {
      set(E.cudnn, e);
    } catch (const CublasError& e) {
      set(E.cublas, e);
    } catch (const Error& e) {
      set(E.error, e);
    }
  });

  // Raise each C++ error type from Python, so the tests can check every mapping.
  m.def("_raise", [](const std::string& kind, const std::string& msg) {
    if (kind == "shape") throw ShapeError(msg);
    if (kind == "dtype") throw DTypeError(msg);
    if (kind == "device") throw DeviceError(msg);
    if (kind == "index") throw IndexError(msg);
    if (kind == "value") throw ValueError(msg);
    if (kind == "oom") throw OutOfMemory("cpu", 1 << 20, 0, 0, 0);
    if (kind == "format") throw FormatError(msg);
    if (kind == "io") throw IOError(msg);
    if (kind == "cuda") throw CudaError(msg);
    if (kind == "cudnn") throw CudnnError(msg);
    if (kind == "cublas") throw CublasError(msg);
    throw Error(msg);
  });
}

}  // namespace ember::py
