/* run_onnx: load an ONNX model through Ember's C API (onnx/ember_c.h), fill each input with a
 * fixed pattern, run it, and print each output's shape and first values. C99.
 *
 *   example_run_onnx MODEL.onnx [DEVICE] [BATCH]
 *
 * DEVICE is cpu (default), cuda, emu, ...; symbolic input dims (-1, "batch") take BATCH
 * (default 1). Element i of a floating input holds ((i % 19) - 9) / 9, of an integer input
 * i % 7, of a bool input i % 2. Output lines read
 *
 *   output 0 'logits': float32 [2, 10]: 0.0312 -0.25 ...
 *
 * Exits 0 on success, 1 with the API's status and message on stderr on any error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/ember_c.h"

/* Prints the failed call's status and message and jumps to the clean-up. */
#define TRY(call)                                                                         \
  do {                                                                                    \
    ember_status status_ = (call);                                                        \
    if (status_ != EMBER_OK) {                                                            \
      fprintf(stderr, "error: %s: %s\n", ember_status_name(status_), ember_last_error()); \
      goto done;                                                                          \
    }                                                                                     \
  } while (0)

static const char* type_name(ember_element_type t) {
  switch (t) {
    case EMBER_FLOAT32:
      return "float32";
    case EMBER_FLOAT64:
      return "float64";
    case EMBER_FLOAT16:
      return "float16";
    case EMBER_BFLOAT16:
      return "bfloat16";
    case EMBER_INT32:
      return "int32";
    case EMBER_INT64:
      return "int64";
    case EMBER_UINT8:
      return "uint8";
    case EMBER_BOOL:
      return "bool";
    default:
      return "undefined";
  }
}

/* Writes the pattern into `count` elements of type `t`; 0 for a type the example does not fill. */
static int fill(void* data, ember_element_type t, size_t count) {
  size_t i;
  for (i = 0; i < count; ++i) {
    const double f = ((double)(i % 19) - 9.0) / 9.0;
    switch (t) {
      case EMBER_FLOAT32:
        ((float*)data)[i] = (float)f;
        break;
      case EMBER_FLOAT64:
        ((double*)data)[i] = f;
        break;
      case EMBER_INT32:
        ((int32_t*)data)[i] = (int32_t)(i % 7);
        break;
      case EMBER_INT64:
        ((int64_t*)data)[i] = (int64_t)(i % 7);
        break;
      case EMBER_UINT8:
        ((uint8_t*)data)[i] = (uint8_t)(i % 7);
        break;
      case EMBER_BOOL:
        ((uint8_t*)data)[i] = (uint8_t)(i % 2);
        break;
      default:
        return 0;
    }
  }
  return 1;
}

static void print_value(const void* data, ember_element_type t, size_t i) {
  switch (t) {
    case EMBER_FLOAT32:
      printf(" %.6g", ((const float*)data)[i]);
      break;
    case EMBER_FLOAT64:
      printf(" %.6g", ((const double*)data)[i]);
      break;
    case EMBER_INT32:
      printf(" %ld", (long)((const int32_t*)data)[i]);
      break;
    case EMBER_INT64:
      printf(" %lld", (long long)((const int64_t*)data)[i]);
      break;
    case EMBER_UINT8:
    case EMBER_BOOL:
      printf(" %u", (unsigned)((const uint8_t*)data)[i]);
      break;
    default:
      printf(" ?");
      break;
  }
}

int main(int argc, char** argv) {
  const char* device = argc > 2 ? argv[2] : "cpu";
  const int64_t batch = argc > 3 ? atoll(argv[3]) : 1;
  ember_session* session = NULL;
  void* buffer = NULL;
  int ok = 0;
  size_t n_in = 0, n_out = 0, i, d;
  double ms = 0;
  size_t peak = 0;
  if (argc < 2 || batch < 1) {
    fprintf(stderr, "usage: %s MODEL.onnx [DEVICE] [BATCH >= 1]\n", argv[0]);
    return 2;
  }
  printf("Ember %s (C API %d)\n", ember_version(), ember_api_version());
  TRY(ember_session_create_from_file(argv[1], device, 1, &session));
  TRY(ember_session_input_count(session, &n_in));
  TRY(ember_session_output_count(session, &n_out));

  for (i = 0; i < n_in; ++i) {
    const char* name;
    ember_element_type type;
    int64_t rank;
    const int64_t* declared;
    int64_t shape[16];
    size_t count = 1, item = 0;
    TRY(ember_session_input_name(session, i, &name));
    TRY(ember_session_input_type(session, i, &type));
    TRY(ember_session_input_shape(session, i, &rank, &declared));
    if (type == EMBER_UNDEFINED) type = EMBER_FLOAT32; /* the file does not say: try float */
    if (rank < 0 || rank > 16) {
      fprintf(stderr, "error: input '%s' has no declared shape of rank <= 16\n", name);
      goto done;
    }
    for (d = 0; d < (size_t)rank; ++d) {
      shape[d] = declared[d] < 0 ? batch : declared[d];
      count *= (size_t)shape[d];
    }
    TRY(ember_element_size(type, &item));
    buffer = malloc(count * item + 1);
    if (!buffer || !fill(buffer, type, count)) {
      fprintf(stderr, "error: input '%s' (%s): cannot fill it\n", name, type_name(type));
      goto done;
    }
    TRY(ember_session_set_input(session, i, type, shape, (size_t)rank, buffer, count * item));
    free(buffer); /* the session holds its own copy */
    buffer = NULL;
  }

  TRY(ember_session_run(session));
  TRY(ember_session_last_run(session, &ms, &peak));
  printf("ran on %s in %.3f ms, peak %lu bytes\n", device, ms, (unsigned long)peak);

  for (i = 0; i < n_out; ++i) {
    const char* name;
    ember_element_type type;
    size_t rank, bytes, item, count, shown;
    const int64_t* shape;
    TRY(ember_session_output_name(session, i, &name));
    TRY(ember_session_result_type(session, i, &type));
    TRY(ember_session_result_shape(session, i, &rank, &shape));
    TRY(ember_session_result_bytes(session, i, &bytes));
    TRY(ember_element_size(type, &item));
    buffer = malloc(bytes + 1);
    if (!buffer) {
      fprintf(stderr, "error: out of memory\n");
      goto done;
    }
    TRY(ember_session_result_copy(session, i, buffer, bytes));
    printf("output %lu '%s': %s [", (unsigned long)i, name, type_name(type));
    for (d = 0; d < rank; ++d) printf("%s%lld", d ? ", " : "", (long long)shape[d]);
    printf("]:");
    count = bytes / item;
    shown = count < 8 ? count : 8;
    for (d = 0; d < shown; ++d) print_value(buffer, type, d);
    printf("\n");
    free(buffer);
    buffer = NULL;
  }
  ok = 1;

done:
  free(buffer);
  ember_session_free(session);
  return ok ? 0 : 1;
}
