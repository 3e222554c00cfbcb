// Validators for the numeric and device options of the `ember` commands and the benchmarks. A bad
// value is a parse error: the command does not run, and the message names the option, the value
// given and what is allowed
// ("--lr: invalid value 'nan': expected a finite number > 0").
//
// CLI11's own Range is not enough: every comparison with NaN is false, so NaN passes it, and its
// integer conversion reads "010" as octal and "-1" as 2^64-1 for an unsigned option. These parse
// the text themselves (decimal only), check it, and hand CLI11 the canonical spelling of the value
// they checked, so the value that runs is the value that was validated. Attach them with
// Option::transform: Option::check runs a validator on a copy and drops that spelling.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace ember::cli {

// requires: lo <= hi. ensures: accepts a decimal integer n with lo <= n <= hi.
CLI::Validator integer_in(int64_t lo, int64_t hi);
// The same for an unsigned option (e.g. a seed): no sign accepted.
CLI::Validator unsigned_in(uint64_t lo, uint64_t hi);

// ensures: accepts exactly one of `names` ("invalid value 'x': expected one of a, b, c").
CLI::Validator one_of(const std::vector<std::string>& names);

// One end of a real interval; an open end excludes its value. An infinite end means no bound
// (infinities themselves are always refused).
struct RealBound {
  double value;
  bool open;
};
inline RealBound inclusive(double v) {
  return {v, false};
}
inline RealBound exclusive(double v) {
  return {v, true};
}
inline RealBound unbounded_above() {
  return {std::numeric_limits<double>::infinity(), true};
}

// ensures: accepts a finite real number x within [lo, hi] (ends open or closed as asked).
CLI::Validator real_in(RealBound lo, RealBound hi);

// requires: `types` not empty. ensures: accepts what Device::parse accepts ("cpu", "cuda:1",
// "emu") when its type is one of `types` ("invalid value 'x': expected cuda[:N] or emu[:N]").
// Whether the device is present is for the command to say; this checks the spelling only.
CLI::Validator device_of(const std::vector<DeviceType>& types);

}  // namespace ember::cli
