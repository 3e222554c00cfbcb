// Ember's C API: load an ONNX model and run it for inference from C, or from any language that
// can call C (Python's ctypes, Rust, Go, C#, Java's FFM, ...). Part of libember_onnx.
//
//   ember_session* s = NULL;
//   if (ember_session_create_from_file("model.onnx", "cpu", 1, &s) != EMBER_OK)
//     fprintf(stderr, "%s\n", ember_last_error());
//   int64_t shape[4] = {1, 3, 32, 32};
//   ember_session_set_input(s, 0, EMBER_FLOAT32, shape, 4, x, sizeof x);
//   ember_session_run(s);
//   ember_session_result_copy(s, 0, y, sizeof y);
//   ember_session_free(s);
//
// Conventions (they hold for every function below):
// - Every function but ember_version, ember_api_version, ember_last_error, ember_status_name and
//   ember_session_free returns an ember_status; EMBER_OK is 0. Out parameters are written only
//   on success. No C++ exception ever crosses this API.
// - A NULL pointer where one is required, an index out of range, an unknown name or a buffer
//   size that does not match is EMBER_INVALID_ARGUMENT, with a message naming the function and
//   the argument.
// - Ownership: the caller owns what it passes in (the API copies input data before returning)
//   and frees a session with ember_session_free. Strings and shape arrays the API hands out
//   belong to the session and stay valid until it is freed, except the results' (valid until
//   the next ember_session_run or ember_session_free on that session).
// - Element types are numbered as in ONNX's TensorProto.DataType, so a binding can pass ONNX's
//   numbers through unchanged.
//
// Thread safety: different sessions may be used from different threads at the same time. One
// session must not be used by two threads at once for ember_session_set_input*,
// ember_session_run, ember_session_result_* or ember_session_last_run (the caller serialises
// them, e.g. one session per thread or a mutex). The functions that only describe the model
// (ember_session_device, ember_session_input_* and ember_session_output_* other than
// set_input) read what never changes after creation and may be called from any thread at any
// time. ember_last_error is per thread.
//
// Stability: existing functions, enum values and their numbers do not change; what is added
// later comes as new functions and new enum values (EMBER_C_API_VERSION counts the additions).
#ifndef EMBER_C_H_
#define EMBER_C_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define EMBER_C_EXPORT __attribute__((visibility("default")))
#else
#define EMBER_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

// The version of this header's API; ember_api_version() gives the library's.
#define EMBER_C_API_VERSION 1

typedef enum ember_status {
  EMBER_OK = 0,
  EMBER_INVALID_ARGUMENT = 1,  // the caller's mistake: NULL, out of range, unknown name, size
  EMBER_FORMAT_ERROR = 2,      // the model's bytes are not a well-formed ONNX model
  EMBER_IO_ERROR = 3,          // a file (the model, its external data) cannot be read
  EMBER_UNSUPPORTED = 4,       // a well-formed model Ember cannot run (operators, opsets, ...)
  EMBER_SHAPE_ERROR = 5,       // an input's shape differs from the model's, or a node's shapes
  EMBER_DTYPE_ERROR = 6,       // an input's element type differs from the model's
  EMBER_DEVICE_ERROR = 7,      // the device cannot be used (no GPU, a CUDA/cuDNN failure)
  EMBER_OUT_OF_MEMORY = 8,     // host or device memory ran out
  EMBER_VALUE_ERROR = 9,       // a value the model computes with is out of its range
  EMBER_INDEX_ERROR = 10,      // an index the model computes with is out of range (Gather, ...)
  EMBER_RUNTIME_ERROR = 11,    // another error Ember reported; the message says what
  EMBER_INTERNAL = 12          // an unexpected failure inside Ember (a bug: please report it)
} ember_status;

typedef enum ember_element_type {
  EMBER_UNDEFINED = 0,  // only in what the model declares: the file does not say
  EMBER_FLOAT32 = 1,
  EMBER_UINT8 = 2,
  EMBER_INT32 = 6,
  EMBER_INT64 = 7,
  EMBER_BOOL = 9,      // one byte per element, 0 or 1
  EMBER_FLOAT16 = 10,  // IEEE binary16 bits in a uint16_t
  EMBER_FLOAT64 = 11,
  EMBER_BFLOAT16 = 16  // the upper 16 bits of a float32, in a uint16_t
} ember_element_type;

// A loaded model, its inputs as last set, and the results of its last run.
typedef struct ember_session ember_session;

// --- Library ---------------------------------------------------------------------------------

// ensures: Ember's version, "MAJOR.MINOR.PATCH"; static storage, never NULL.
EMBER_C_EXPORT const char* ember_version(void);
// ensures: the EMBER_C_API_VERSION the library was built with; a program built against an
// older header works with any library whose number is at least its own.
EMBER_C_EXPORT int ember_api_version(void);
// ensures: the message of the last call on this thread that did not return EMBER_OK (it names
// the function); "" when there was none. Successful calls leave it unchanged. Owned by the
// library, valid until the next failing call on this thread.
EMBER_C_EXPORT const char* ember_last_error(void);
// ensures: the status's name ("EMBER_SHAPE_ERROR"), or "EMBER_UNKNOWN_STATUS"; static storage.
EMBER_C_EXPORT const char* ember_status_name(ember_status status);
// requires: size not NULL; type one of ember_element_type other than EMBER_UNDEFINED.
// ensures: *size = bytes per element.
EMBER_C_EXPORT ember_status ember_element_size(ember_element_type type, size_t* size);

// --- Sessions --------------------------------------------------------------------------------

// Loads an ONNX model and places its weights on `device`.
// requires: path, session not NULL. device: "cpu", "cuda", "cuda:N", "emu", "emu:N" or "auto"
// (the first usable GPU, else the cpu); NULL means "cpu". optimize != 0 folds constants and
// batch norms and fuses conv+relu (the same results, less work).
// ensures: on EMBER_OK, *session is a new session the caller frees with ember_session_free.
// Errors: EMBER_IO_ERROR (the file or its external data), EMBER_FORMAT_ERROR (malformed, with
// the node or initializer named), EMBER_UNSUPPORTED (every reason listed at once),
// EMBER_DEVICE_ERROR, EMBER_OUT_OF_MEMORY.
EMBER_C_EXPORT ember_status ember_session_create_from_file(const char* path, const char* device,
                                                           int optimize, ember_session** session);
// The same from a serialised model in memory (which cannot refer to external data files).
// requires: data not NULL, size > 0; the bytes are copied, the caller may free them on return.
EMBER_C_EXPORT ember_status ember_session_create_from_memory(const void* data, size_t size,
                                                             const char* device, int optimize,
                                                             ember_session** session);
// Frees the session, its inputs and results. Accepts NULL (does nothing).
EMBER_C_EXPORT void ember_session_free(ember_session* session);
// ensures: *device = the device the session runs on ("cpu", "cuda:0", "emu:0").
EMBER_C_EXPORT ember_status ember_session_device(const ember_session* session, const char** device);

// --- What the model declares -----------------------------------------------------------------
// The graph's inputs (those no initializer provides) and outputs, in the file's order. Index
// arguments run over [0, count); an index out of range is EMBER_INVALID_ARGUMENT.

EMBER_C_EXPORT ember_status ember_session_input_count(const ember_session* session, size_t* count);
EMBER_C_EXPORT ember_status ember_session_output_count(const ember_session* session, size_t* count);
// ensures: *name = the input's (output's) name, owned by the session.
EMBER_C_EXPORT ember_status ember_session_input_name(const ember_session* session, size_t index,
                                                     const char** name);
EMBER_C_EXPORT ember_status ember_session_output_name(const ember_session* session, size_t index,
                                                      const char** name);
// ensures: *type = the declared element type, EMBER_UNDEFINED when the file does not say.
EMBER_C_EXPORT ember_status ember_session_input_type(const ember_session* session, size_t index,
                                                     ember_element_type* type);
EMBER_C_EXPORT ember_status ember_session_output_type(const ember_session* session, size_t index,
                                                      ember_element_type* type);
// ensures: *rank = the declared rank, or -1 when the file gives no shape; *dims = rank sizes,
// -1 for a symbolic dim ("batch"), owned by the session (NULL allowed when rank <= 0).
EMBER_C_EXPORT ember_status ember_session_input_shape(const ember_session* session, size_t index,
                                                      int64_t* rank, const int64_t** dims);
EMBER_C_EXPORT ember_status ember_session_output_shape(const ember_session* session, size_t index,
                                                       int64_t* rank, const int64_t** dims);
// ensures: *index = the position of the input (output) called `name`.
EMBER_C_EXPORT ember_status ember_session_input_index(const ember_session* session,
                                                      const char* name, size_t* index);
EMBER_C_EXPORT ember_status ember_session_output_index(const ember_session* session,
                                                       const char* name, size_t* index);

// --- Running ---------------------------------------------------------------------------------

// Sets input `index` to a copy of a host array: `rank` sizes in `shape` (row-major, C order),
// `data_bytes` bytes at `data`. An input keeps its value over runs until set again.
// requires: session not NULL; index < input count; type a valid element type; shape not NULL
// when rank > 0, every size >= 0; data_bytes == (product of the sizes) * element size; data not
// NULL when data_bytes > 0; EMBER_BOOL data holds only 0 and 1.
// The model checks the type and shape against its declaration when it runs (EMBER_DTYPE_ERROR,
// EMBER_SHAPE_ERROR). Copies the data to the session's device: EMBER_DEVICE_ERROR,
// EMBER_OUT_OF_MEMORY.
EMBER_C_EXPORT ember_status ember_session_set_input(ember_session* session, size_t index,
                                                    ember_element_type type, const int64_t* shape,
                                                    size_t rank, const void* data,
                                                    size_t data_bytes);
// The same for the input called `name` (not NULL).
EMBER_C_EXPORT ember_status ember_session_set_input_by_name(ember_session* session,
                                                            const char* name,
                                                            ember_element_type type,
                                                            const int64_t* shape, size_t rank,
                                                            const void* data, size_t data_bytes);
// Runs the model on the inputs set. Blocks until the results are on the host.
// requires: every input set (else EMBER_INVALID_ARGUMENT naming the first one missing).
// ensures: on EMBER_OK, one result per declared output, in the outputs' order, read with
// ember_session_result_*. The previous run's results (and pointers to them) are released first,
// so after a failure there are none.
EMBER_C_EXPORT ember_status ember_session_run(ember_session* session);

// The results of the last successful run; `index` runs over [0, output count). Before a
// successful run every ember_session_result_* call is EMBER_INVALID_ARGUMENT.
// ensures: *type = the result's element type.
EMBER_C_EXPORT ember_status ember_session_result_type(const ember_session* session, size_t index,
                                                      ember_element_type* type);
// ensures: *rank = the result's rank; *dims = its sizes (NULL allowed when rank is 0), owned by
// the session until the next run.
EMBER_C_EXPORT ember_status ember_session_result_shape(const ember_session* session, size_t index,
                                                       size_t* rank, const int64_t** dims);
// ensures: *bytes = the size of the result's data (elements * element size).
EMBER_C_EXPORT ember_status ember_session_result_bytes(const ember_session* session, size_t index,
                                                       size_t* bytes);
// Copies the result's data (row-major) into a caller buffer.
// requires: buffer_bytes >= ember_session_result_bytes (else EMBER_INVALID_ARGUMENT saying
// both sizes); buffer not NULL when the result has data.
// ensures: the first result-bytes bytes of buffer hold the data; the rest is untouched.
EMBER_C_EXPORT ember_status ember_session_result_copy(const ember_session* session, size_t index,
                                                      void* buffer, size_t buffer_bytes);
// ensures: *data = the result's data (row-major) on the host, without a copy; owned by the
// session, valid until the next ember_session_run or ember_session_free (NULL allowed when the
// result has no elements).
EMBER_C_EXPORT ember_status ember_session_result_data(const ember_session* session, size_t index,
                                                      const void** data);
// ensures: *ms = the last successful run's time in milliseconds; *peak_bytes = the device
// allocator's high-water mark during it (runs on the same device at the same time share it).
// Either pointer may be NULL (not written). EMBER_INVALID_ARGUMENT before a successful run.
EMBER_C_EXPORT ember_status ember_session_last_run(const ember_session* session, double* ms,
                                                   size_t* peak_bytes);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // EMBER_C_H_
