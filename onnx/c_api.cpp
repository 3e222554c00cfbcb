// The C API (onnx/ember_c.h) over ember::onnx::Model: argument checks, the session's state
// (inputs as set, the last run's results on the host) and the translation of every C++
// exception into an ember_status and a thread-local message.
#include "onnx/ember_c.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ember/build_config.h"
#include "onnx/model.h"
#include "runtime/error.h"
#include "runtime/gpu.h"

struct ember_session {
  ember_session(ember::onnx::Model m, std::string d) : model(std::move(m)), device(std::move(d)) {}
  ember::onnx::Model model;
  std::string device;
  std::vector<ember::Tensor> inputs;   // on the model's device; undefined until set
  std::vector<ember::Tensor> results;  // on the cpu, contiguous; empty before a successful run
  bool has_results = false;
  double ms = 0;          // the last successful run's
  size_t peak_bytes = 0;  // the last successful run's
};

namespace {

using ember::detail::str_cat;

// A misuse of the API by its caller: EMBER_INVALID_ARGUMENT.
class InvalidArgument : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Recording a message allocates, which can itself fail when the failure was std::bad_alloc;
// then ember_last_error says so instead of showing a stale message.
thread_local std::string t_message;
thread_local bool t_message_lost = false;

ember_status fail(ember_status status, const char* fn, const char* what) noexcept {
  try {
    t_message.assign(fn).append(": ").append(what);
    t_message_lost = false;
  } catch (...) {
    t_message_lost = true;
  }
  return status;
}

ember_status status_of(const ember::Error& e) {
  if (dynamic_cast<const ember::OutOfMemory*>(&e)) return EMBER_OUT_OF_MEMORY;
  if (dynamic_cast<const ember::FormatError*>(&e)) return EMBER_FORMAT_ERROR;
  if (dynamic_cast<const ember::IOError*>(&e)) return EMBER_IO_ERROR;
  if (dynamic_cast<const ember::ShapeError*>(&e)) return EMBER_SHAPE_ERROR;
  if (dynamic_cast<const ember::DTypeError*>(&e)) return EMBER_DTYPE_ERROR;
  if (dynamic_cast<const ember::IndexError*>(&e)) return EMBER_INDEX_ERROR;
  if (dynamic_cast<const ember::DeviceError*>(&e) || dynamic_cast<const ember::CudaError*>(&e) ||
      dynamic_cast<const ember::CudnnError*>(&e) || dynamic_cast<const ember::CublasError*>(&e))
    return EMBER_DEVICE_ERROR;
  if (dynamic_cast<const ember::ValueError*>(&e)) {
    // The loader lists everything a model needs that Ember lacks in one ValueError
    // (onnx/passes.cpp, check_supported).
    const bool unsupported =
        std::strstr(e.what(), "cannot run this model") || std::strstr(e.what(), "is not supported");
    return unsupported ? EMBER_UNSUPPORTED : EMBER_VALUE_ERROR;
  }
  return EMBER_RUNTIME_ERROR;
}

// Runs `body`, turning whatever it throws into a status and a message that names `fn`.
template <typename Body>
ember_status guarded(const char* fn, Body&& body) noexcept {
  try {
    body();
    return EMBER_OK;
  } catch (const InvalidArgument& e) {
    return fail(EMBER_INVALID_ARGUMENT, fn, e.what());
  } catch (const ember::Error& e) {
    return fail(status_of(e), fn, e.what());
  } catch (const std::bad_alloc&) {
    return fail(EMBER_OUT_OF_MEMORY, fn, "out of host memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return fail(EMBER_INTERNAL, fn, e.what());
  } catch (...) {
    return fail(EMBER_INTERNAL, fn, "an unknown exception");
  }
}

template <typename... Args>
[[noreturn]] void invalid(const Args&... args) {
  throw InvalidArgument(str_cat(args...));
}

template <typename T>
void require(const T* p, const char* arg) {
  if (!p) invalid(arg, " is NULL");
}

bool to_dtype(ember_element_type t, ember::DType* out) {
  switch (t) {
    case EMBER_FLOAT32:
      *out = ember::kFloat32;
      return true;
    case EMBER_UINT8:
      *out = ember::kUInt8;
      return true;
    case EMBER_INT32:
      *out = ember::kInt32;
      return true;
    case EMBER_INT64:
      *out = ember::kInt64;
      return true;
    case EMBER_BOOL:
      *out = ember::kBool;
      return true;
    case EMBER_FLOAT16:
      *out = ember::kFloat16;
      return true;
    case EMBER_FLOAT64:
      *out = ember::kFloat64;
      return true;
    case EMBER_BFLOAT16:
      *out = ember::kBFloat16;
      return true;
    case EMBER_UNDEFINED:
      break;
  }
  return false;
}

ember_element_type from_dtype(ember::DType t) {
  switch (t) {
    case ember::DType::f32:
      return EMBER_FLOAT32;
    case ember::DType::f64:
      return EMBER_FLOAT64;
    case ember::DType::f16:
      return EMBER_FLOAT16;
    case ember::DType::bf16:
      return EMBER_BFLOAT16;
    case ember::DType::i32:
      return EMBER_INT32;
    case ember::DType::i64:
      return EMBER_INT64;
    case ember::DType::u8:
      return EMBER_UINT8;
    case ember::DType::b8:
      return EMBER_BOOL;
  }
  return EMBER_UNDEFINED;
}

ember::DType checked_dtype(ember_element_type t, const char* arg) {
  ember::DType d;
  if (!to_dtype(t, &d))
    invalid(arg, " is ", static_cast<int>(t), ", not an ember_element_type Ember runs");
  return d;
}

const ember_session& checked(const ember_session* s) {
  require(s, "session");
  return *s;
}

size_t checked_index(size_t index, size_t count, const char* what) {
  if (index >= count)
    invalid("index ", index, " is out of range: the model has ", count, " ", what,
            count == 1 ? "" : "s");
  return index;
}

const ember::onnx::ValueInfo& declared(const ember_session* s, size_t index, bool input) {
  const auto& list = input ? checked(s).model.inputs() : checked(s).model.outputs();
  return list[checked_index(index, list.size(), input ? "input" : "output")];
}

size_t index_of(const ember_session* s, const char* name, bool input) {
  const auto& list = input ? checked(s).model.inputs() : checked(s).model.outputs();
  require(name, "name");
  std::string known;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].name == name) return i;
    known += (i ? ", '" : "'") + list[i].name + "'";
  }
  invalid("the model has no ", input ? "input" : "output", " named '", name, "' (it has ",
          known.empty() ? "none" : known, ")");
}

const ember::Tensor& result(const ember_session* s, size_t index) {
  if (!checked(s).has_results)
    invalid("no results: ember_session_run has not succeeded on this session");
  return s->results[checked_index(index, s->results.size(), "output")];
}

// Loads through `load(options)` into a new session, stored in *out only when all went well.
template <typename Load>
void create(const char* device, int optimize, ember_session** out, Load&& load) {
  require(out, "session");
  ember::onnx::LoadOptions options;
  try {
    options.device = ember::Device::parse(device ? device : "cpu");
  } catch (const ember::DeviceError& e) {
    invalid("device: ", e.what());
  }
  // A model without weights touches no device memory while loading: check the device here so
  // that an unusable one fails at creation, not at the first run.
  if (options.device.is_gpu_like()) ember::gpu::require_device(options.device);
  options.optimize = optimize != 0;
  std::unique_ptr<ember_session> s(new ember_session(load(options), options.device.str()));
  s->inputs.resize(s->model.inputs().size());
  *out = s.release();
}

void set_input(ember_session* s, size_t index, ember_element_type type, const int64_t* shape,
               size_t rank, const void* data, size_t data_bytes) {
  require(s, "session");
  checked_index(index, s->model.inputs().size(), "input");
  const ember::DType dtype = checked_dtype(type, "type");
  if (rank > 0) require(shape, "shape");
  ember::Shape dims(shape, shape + rank);
  size_t count = 1;
  bool overflow = false;
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] < 0) invalid("shape[", d, "] is ", dims[d], ": sizes must be >= 0");
    const auto n = static_cast<size_t>(dims[d]);
    overflow = overflow || (n != 0 && count > SIZE_MAX / n);
    count = overflow ? count : count * n;
  }
  const size_t item = ember::itemsize(dtype);
  if (overflow || count > SIZE_MAX / item)
    invalid("shape ", dims, " has more elements than memory can hold");
  if (data_bytes != count * item)
    invalid("data_bytes is ", data_bytes, ", expected ", count * item, " (", count, " ",
            ember::dtype_name(dtype), " elements of shape ", dims, ")");
  if (data_bytes > 0) require(data, "data");
  if (dtype == ember::kBool)
    for (size_t i = 0; i < count; ++i)
      if (static_cast<const unsigned char*>(data)[i] > 1)
        invalid("data[", i, "] is ", static_cast<int>(static_cast<const unsigned char*>(data)[i]),
                ": EMBER_BOOL elements must be 0 or 1");
  // Release the old value first so that the device holds one copy of this input at a time.
  s->inputs[index] = ember::Tensor();
  s->inputs[index] = ember::from_host(data, dims, dtype, s->model.device());
}

ember_status value_name(const char* fn, const ember_session* session, size_t index,
                        const char** name, bool input) {
  return guarded(fn, [&] {
    const auto& info = declared(session, index, input);
    require(name, "name");
    *name = info.name.c_str();
  });
}

ember_status value_type(const char* fn, const ember_session* session, size_t index,
                        ember_element_type* type, bool input) {
  return guarded(fn, [&] {
    const auto& info = declared(session, index, input);
    require(type, "type");
    *type = info.dtype ? from_dtype(*info.dtype) : EMBER_UNDEFINED;
  });
}

ember_status value_shape(const char* fn, const ember_session* session, size_t index, int64_t* rank,
                         const int64_t** dims, bool input) {
  return guarded(fn, [&] {
    const auto& info = declared(session, index, input);
    require(rank, "rank");
    require(dims, "dims");
    *rank = info.has_shape ? static_cast<int64_t>(info.shape.size()) : -1;
    *dims = info.has_shape ? info.shape.data() : nullptr;
  });
}

size_t nbytes(const ember::Tensor& t) {
  return static_cast<size_t>(t.numel()) * t.element_size();
}

}  // namespace

extern "C" {

const char* ember_version(void) {
  return EMBER_VERSION_STRING;
}

int ember_api_version(void) {
  return EMBER_C_API_VERSION;
}

const char* ember_last_error(void) {
  return t_message_lost ? "(the error message was lost: out of host memory)" : t_message.c_str();
}

const char* ember_status_name(ember_status status) {
  switch (status) {
    case EMBER_OK:
      return "EMBER_OK";
    case EMBER_INVALID_ARGUMENT:
      return "EMBER_INVALID_ARGUMENT";
    case EMBER_FORMAT_ERROR:
      return "EMBER_FORMAT_ERROR";
    case EMBER_IO_ERROR:
      return "EMBER_IO_ERROR";
    case EMBER_UNSUPPORTED:
      return "EMBER_UNSUPPORTED";
    case EMBER_SHAPE_ERROR:
      return "EMBER_SHAPE_ERROR";
    case EMBER_DTYPE_ERROR:
      return "EMBER_DTYPE_ERROR";
    case EMBER_DEVICE_ERROR:
      return "EMBER_DEVICE_ERROR";
    case EMBER_OUT_OF_MEMORY:
      return "EMBER_OUT_OF_MEMORY";
    case EMBER_VALUE_ERROR:
      return "EMBER_VALUE_ERROR";
    case EMBER_INDEX_ERROR:
      return "EMBER_INDEX_ERROR";
    case EMBER_RUNTIME_ERROR:
      return "EMBER_RUNTIME_ERROR";
    case EMBER_INTERNAL:
      return "EMBER_INTERNAL";
  }
  return "EMBER_UNKNOWN_STATUS";
}

ember_status ember_element_size(ember_element_type type, size_t* size) {
  return guarded(__func__, [&] {
    const ember::DType dtype = checked_dtype(type, "type");
    require(size, "size");
    *size = ember::itemsize(dtype);
  });
}

ember_status ember_session_create_from_file(const char* path, const char* device, int optimize,
                                            ember_session** session) {
  return guarded(__func__, [&] {
    require(path, "path");
    create(device, optimize, session, [&](const ember::onnx::LoadOptions& options) {
      return ember::onnx::load(path, options);
    });
  });
}

ember_status ember_session_create_from_memory(const void* data, size_t size, const char* device,
                                              int optimize, ember_session** session) {
  return guarded(__func__, [&] {
    require(data, "data");
    if (size == 0) invalid("size is 0: a model has at least one byte");
    create(device, optimize, session, [&](const ember::onnx::LoadOptions& options) {
      return ember::onnx::load_from_memory(data, size, options);
    });
  });
}

void ember_session_free(ember_session* session) {
  delete session;
}

ember_status ember_session_device(const ember_session* session, const char** device) {
  return guarded(__func__, [&] {
    const auto& s = checked(session);
    require(device, "device");
    *device = s.device.c_str();
  });
}

ember_status ember_session_input_count(const ember_session* session, size_t* count) {
  return guarded(__func__, [&] {
    const auto& s = checked(session);
    require(count, "count");
    *count = s.model.inputs().size();
  });
}

ember_status ember_session_output_count(const ember_session* session, size_t* count) {
  return guarded(__func__, [&] {
    const auto& s = checked(session);
    require(count, "count");
    *count = s.model.outputs().size();
  });
}

ember_status ember_session_input_name(const ember_session* session, size_t index,
                                      const char** name) {
  return value_name(__func__, session, index, name, true);
}

ember_status ember_session_output_name(const ember_session* session, size_t index,
                                       const char** name) {
  return value_name(__func__, session, index, name, false);
}

ember_status ember_session_input_type(const ember_session* session, size_t index,
                                      ember_element_type* type) {
  return value_type(__func__, session, index, type, true);
}

ember_status ember_session_output_type(const ember_session* session, size_t index,
                                       ember_element_type* type) {
  return value_type(__func__, session, index, type, false);
}

ember_status ember_session_input_shape(const ember_session* session, size_t index, int64_t* rank,
                                       const int64_t** dims) {
  return value_shape(__func__, session, index, rank, dims, true);
}

ember_status ember_session_output_shape(const ember_session* session, size_t index, int64_t* rank,
                                        const int64_t** dims) {
  return value_shape(__func__, session, index, rank, dims, false);
}

ember_status ember_session_input_index(const ember_session* session, const char* name,
                                       size_t* index) {
  return guarded(__func__, [&] {
    const size_t i = index_of(session, name, true);
    require(index, "index");
    *index = i;
  });
}

ember_status ember_session_output_index(const ember_session* session, const char* name,
                                        size_t* index) {
  return guarded(__func__, [&] {
    const size_t i = index_of(session, name, false);
    require(index, "index");
    *index = i;
  });
}

ember_status ember_session_set_input(ember_session* session, size_t index, ember_element_type type,
                                     const int64_t* shape, size_t rank, const void* data,
                                     size_t data_bytes) {
  return guarded(__func__, [&] { set_input(session, index, type, shape, rank, data, data_bytes); });
}

ember_status ember_session_set_input_by_name(ember_session* session, const char* name,
                                             ember_element_type type, const int64_t* shape,
                                             size_t rank, const void* data, size_t data_bytes) {
  return guarded(__func__, [&] {
    set_input(session, index_of(session, name, true), type, shape, rank, data, data_bytes);
  });
}

ember_status ember_session_run(ember_session* session) {
  return guarded(__func__, [&] {
    require(session, "session");
    ember_session& s = *session;
    s.results.clear();
    s.has_results = false;
    for (size_t i = 0; i < s.inputs.size(); ++i)
      if (!s.inputs[i].defined())
        invalid("input ", i, " ('", s.model.inputs()[i].name,
                "') has not been set (ember_session_set_input)");
    std::vector<ember::Tensor> out = s.model.run(s.inputs);
    std::vector<ember::Tensor> host;
    host.reserve(out.size());
    for (auto& t : out) host.push_back(t.to(ember::kCPU).contiguous());
    const ember::onnx::RunStats stats = s.model.last_run();
    s.results = std::move(host);
    s.ms = stats.ms;
    s.peak_bytes = stats.peak_bytes;
    s.has_results = true;
  });
}

ember_status ember_session_result_type(const ember_session* session, size_t index,
                                       ember_element_type* type) {
  return guarded(__func__, [&] {
    const ember::Tensor& t = result(session, index);
    require(type, "type");
    *type = from_dtype(t.dtype());
  });
}

ember_status ember_session_result_shape(const ember_session* session, size_t index, size_t* rank,
                                        const int64_t** dims) {
  return guarded(__func__, [&] {
    const ember::Tensor& t = result(session, index);
    require(rank, "rank");
    require(dims, "dims");
    *rank = t.shape().size();
    *dims = t.shape().data();
  });
}

ember_status ember_session_result_bytes(const ember_session* session, size_t index, size_t* bytes) {
  return guarded(__func__, [&] {
    const ember::Tensor& t = result(session, index);
    require(bytes, "bytes");
    *bytes = nbytes(t);
  });
}

ember_status ember_session_result_copy(const ember_session* session, size_t index, void* buffer,
                                       size_t buffer_bytes) {
  return guarded(__func__, [&] {
    const ember::Tensor& t = result(session, index);
    const size_t n = nbytes(t);
    if (buffer_bytes < n)
      invalid("buffer_bytes is ", buffer_bytes, ", the result needs ", n, " (", t.numel(), " ",
              ember::dtype_name(t.dtype()), " elements of shape ", t.shape(), ")");
    if (n == 0) return;
    require(buffer, "buffer");
    std::memcpy(buffer, t.data_ptr(), n);
  });
}

ember_status ember_session_result_data(const ember_session* session, size_t index,
                                       const void** data) {
  return guarded(__func__, [&] {
    const ember::Tensor& t = result(session, index);
    require(data, "data");
    *data = t.numel() > 0 ? t.data_ptr() : nullptr;
  });
}

ember_status ember_session_last_run(const ember_session* session, double* ms, size_t* peak_bytes) {
  return guarded(__func__, [&] {
    const auto& s = checked(session);
    if (!s.has_results) invalid("no run: ember_session_run has not succeeded on this session");
    if (ms) *ms = s.ms;
    if (peak_bytes) *peak_bytes = s.peak_bytes;
  });
}

}  // extern "C"
