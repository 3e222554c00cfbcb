#include "cli/validate.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

namespace ember::cli {
namespace {

// "in [1, 100000]" or, with no upper bound worth printing, ">= 1".
template <typename T>
std::string integer_range_text(T lo, T hi) {
  if (hi == std::numeric_limits<T>::max() && lo != std::numeric_limits<T>::min())
    return ">= " + std::to_string(lo);
  return "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

std::string invalid(const std::string& input, const std::string& expected) {
  return "invalid value '" + input + "': expected " + expected;
}

// Parses the whole of `input` as a decimal T (from_chars: no base prefixes, no octal, and no
// minus sign for an unsigned T).
template <typename T>
bool parse_integer(const std::string& input, T* out) {
  const char* end = input.data() + input.size();
  auto [ptr, ec] = std::from_chars(input.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

template <typename T>
CLI::Validator integer_validator(T lo, T hi) {
  const std::string range = integer_range_text(lo, hi);
  return CLI::Validator(
      [lo, hi, range](std::string& input) -> std::string {
        T v{};
        if (!parse_integer(input, &v) || v < lo || v > hi)
          return invalid(input, "an integer " + range);
        input = std::to_string(v);  // CLI11 reads "010" as octal: hand it plain decimal
        return {};
      },
      range);
}

std::string real_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// "> 0", ">= 0" or "in [0, 1)".
std::string real_range_text(RealBound lo, RealBound hi) {
  if (std::isinf(hi.value)) return (lo.open ? "> " : ">= ") + real_text(lo.value);
  return std::string(lo.open ? "in (" : "in [") + real_text(lo.value) + ", " + real_text(hi.value) +
         (hi.open ? ")" : "]");
}

}  // namespace

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return integer_validator(lo, hi);
}

CLI::Validator unsigned_in(uint64_t lo, uint64_t hi) {
  return integer_validator(lo, hi);
}

CLI::Validator one_of(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return CLI::Validator(
      [names, list](std::string& input) -> std::string {
        for (const std::string& n : names)
          if (input == n) return {};
        return invalid(input, "one of " + list);
      },
      list);
}

CLI::Validator device_of(const std::vector<DeviceType>& types) {
  std::vector<std::string> names;
  for (DeviceType t : types)
    names.push_back(t == DeviceType::CPU ? "cpu" : t == DeviceType::CUDA ? "cuda[:N]" : "emu[:N]");
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return CLI::Validator(
      [types, list](std::string& input) -> std::string {
        try {
          const Device d = Device::parse(input);
          for (DeviceType t : types)
            if (d.type == t) return {};
        } catch (const std::exception&) {
        }
        return invalid(input, list);
      },
      list);
}

CLI::Validator real_in(RealBound lo, RealBound hi) {
  const std::string range = real_range_text(lo, hi);
  return CLI::Validator(
      [lo, hi, range](std::string& input) -> std::string {
        double v = 0;
        const char* end = input.data() + input.size();
        auto [ptr, ec] = std::from_chars(input.data(), end, v);
        // isfinite refuses NaN, which a range test written as `v < lo || v > hi` lets through.
        const bool ok = ec == std::errc() && ptr == end && std::isfinite(v) &&
                        (lo.open ? v > lo.value : v >= lo.value) &&
                        (hi.open ? v < hi.value : v <= hi.value);
        if (!ok) return invalid(input, "a finite number " + range);
        char canonical[32];
        std::snprintf(canonical, sizeof canonical, "%.17g", v);  // round-trips exactly
        input = canonical;
        return {};
      },
      "finite, " + range);
}

}  // namespace ember::cli
