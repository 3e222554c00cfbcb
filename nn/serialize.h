// Saving and loading named tensors in the safetensors format (what Hugging Face's `safetensors`
// package writes): an 8-byte little-endian header length N, N bytes of UTF-8 JSON padded with
// spaces to a multiple of 8, then the raw little-endian tensor bytes.
//
// This is also how model state (weights, optimizer buffers) is saved: a state is a list of
// named tensors, and there is no second format for it.
//
// The reader treats every file as untrusted: any malformed header or buffer raises FormatError
// naming the file and the problem; it never reads out of bounds or aborts.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

// Tensors in file order. The order is kept on save and recovered on load.
// The optional "__metadata__" string map of a safetensors header.
using Metadata = std::map<std::string, std::string>;

struct SafetensorsFile {
  NamedTensors tensors;  // in the order of their data offsets
  Metadata metadata;

  // The tensor called `name`; throws IndexError (listing the names present) if there is none.
  const Tensor& at(const std::string& name) const;
  bool contains(const std::string& name) const;
};

// The bytes of a safetensors file holding `tensors` (any device, any layout; they are copied to
// contiguous CPU memory) and `metadata`.
// requires: names unique, not "__metadata__", valid UTF-8 (ValueError otherwise).
// ensures:  tensors are laid out in the given order; the header lists "__metadata__" first
//           (omitted when empty), then each tensor as {"dtype","shape","data_offsets"}, compact
//           JSON, as the reference implementation writes it.
std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata = {});

// Writes serialize_safetensors(tensors, metadata) to `path` atomically: a temporary file in the
// same directory is written, flushed, fsync'ed and renamed over `path`. On any failure the
// temporary is removed, `path` is untouched, and IOError names the path and the system error.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata = {});

// Reads a safetensors file into CPU tensors.
// IOError: the file is missing or unreadable (path and strerror).
// FormatError: anything malformed (message: "<path>: <problem>").
SafetensorsFile load_safetensors(const std::string& path);

// The same as load_safetensors, from bytes in memory; `source` names them in error messages.
SafetensorsFile deserialize_safetensors(const void* data, size_t size,
                                        const std::string& source = "<memory>");

// Largest header load_safetensors accepts (the reference implementation's limit).
constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;

}  // namespace ember
