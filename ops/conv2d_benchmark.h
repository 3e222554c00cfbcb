// The benchmark policy's internals (docs/conv.md, "The benchmark policy"): timing the candidates
// for a key (ops/conv2d_benchmark.cpp), the measurements the registry keeps per key
// (ops/conv2d_registry.cpp), and the file they are saved in (ops/conv2d_cache.cpp). Not a public
// header: the API is in ops/conv2d_algo.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ops/conv2d_algo.h"

namespace ember::ops {

struct ConvMeasurement {
  std::string name;
  double median_ms = 0.0;
};

// What the benchmark found for one key.
struct ConvBenchEntry {
  ConvKey key;
  std::vector<ConvMeasurement> timed;  // the candidates that ran, fastest first
  // Candidates not timed or that failed while timed, with the reason (not saved in files).
  std::vector<std::pair<std::string, std::string>> skipped;
  std::string source;  // "timed in this process" or "loaded from FILE"
};

// "" when `a` may be timed for `key` under the benchmark policy, else why not: not supported,
// not deterministic while the key asks for determinism, or a workspace over `limit` bytes.
std::string conv_benchmark_exclusion(const ConvAlgo& a, const ConvKey& key, size_t limit);

// Times every candidate of `algos` that conv_benchmark_exclusion lets through: a warm-up, then
// the median of `runs` timed runs on scratch buffers of the key's shape on its device (GPU: events
// on the device's current stream; cpu: a steady clock). A candidate that throws ConvNotSupported
// or OutOfMemory goes to `skipped` with the message; other errors propagate.
// ensures: entry.timed fastest first (ties in registration order), entry.source set.
ConvBenchEntry run_conv_benchmark(const std::vector<ConvAlgoPtr>& algos, const ConvKey& key,
                                  size_t limit, int runs);

// A candidate's basic facts for `key`: name, backend, deterministic, supported (the reason in
// *why when not), and when supported its workspace and estimated cost.
ConvCandidate conv_candidate_of(const ConvAlgo& a, const ConvKey& key, std::string* why);

// The verdict under the benchmark policy from a measurement of `key`: the timed candidates that
// are still eligible (conv_benchmark_exclusion), fastest first, each with its time_ms; the others
// with the reason. `source` says where the measurement comes from. `order` (may be null) gets the
// ranked algorithms. An empty `chosen` means the measurement no longer applies (nothing in it can
// run now) and the key must be timed again.
ConvSelection explain_measured(const std::vector<ConvAlgoPtr>& algos, const ConvKey& key,
                               const ConvBenchEntry& entry, size_t limit, const std::string& source,
                               std::vector<ConvAlgoPtr>* order);

// The name of the hardware behind a device, as cache files record it: the cpu's model and its
// OpenMP thread count ("Intel(R) Xeon(R) ... , 2 threads"), a GPU's name. Throws DeviceError for
// a GPU device that is not usable here.
std::string conv_device_name(Device d);

// The file's text for `entries`, made under the registered algorithms `algos`.
std::string conv_cache_text(const std::vector<ConvBenchEntry>& entries,
                            const std::vector<std::string>& algos);

// How far a rejected file got: a file recognised as an Ember convolution cache (its "format"
// field right) that is merely stale or foreign may be replaced; anything else is left alone.
struct ConvCacheParse {
  std::vector<ConvBenchEntry> entries;
  size_t ignored = 0;  // entries whose key no longer parses back to itself
  bool recognised = false;
};
// Parses `text` (read from `path`) strictly. Throws FormatError "conv cache PATH: REASON" for
// garbage, truncation, a checksum mismatch, another format version, library version, algorithm
// set or device name; `out->recognised` says how far it got either way.
void parse_conv_cache(const std::string& text, const std::string& path,
                      const std::vector<std::string>& algos, ConvCacheParse* out);

// The whole file as text. Throws IOError naming the file when it cannot be read.
std::string read_conv_cache_file(const std::string& path);
// Writes `text` to PATH.tmp, then renames it over `path`. Throws IOError naming the file.
void write_conv_cache_file(const std::string& path, const std::string& text);

}  // namespace ember::ops
