// NumPy's .npy files (format versions 1.0, 2.0 and 3.0): one tensor per file, what
// `numpy.save` writes and `numpy.load` reads. Used by `ember run` for inputs and outputs.
#pragma once

#include <string>

#include "runtime/tensor.h"

namespace ember {

// Reads a .npy file into a cpu tensor. dtypes: float32/64, float16, int32/64, uint8, bool
// (little-endian or byte-order-free); Fortran-ordered arrays are read into row-major order.
// Throws IOError (file), FormatError (malformed header or data length, with the reason),
// DTypeError (a dtype Ember does not have, named).
Tensor load_npy(const std::string& path);
// The same from bytes in memory; `source` names them in errors.
Tensor deserialize_npy(const void* data, size_t size, const std::string& source);

// Writes `t` (any device, any layout) as a .npy file (version 1.0), atomically.
void save_npy(const std::string& path, const Tensor& t);

}  // namespace ember
