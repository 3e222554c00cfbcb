// Element types: names, sizes, categories and the NumPy/PyTorch type-promotion rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>

#include "runtime/half.h"

namespace ember {

enum class DType : uint8_t { f32, f64, f16, bf16, i32, i64, u8, b8 };
constexpr int kNumDTypes = 8;

constexpr DType kFloat32 = DType::f32;
constexpr DType kFloat64 = DType::f64;
constexpr DType kFloat16 = DType::f16;
constexpr DType kBFloat16 = DType::bf16;
constexpr DType kInt32 = DType::i32;
constexpr DType kInt64 = DType::i64;
constexpr DType kUInt8 = DType::u8;
constexpr DType kBool = DType::b8;

// Canonical name: "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool".
const char* dtype_name(DType t);
// Parses a canonical name or a short alias ("f32", "half", "double", ...). Throws DTypeError.
DType parse_dtype(const std::string& name);
size_t itemsize(DType t);
bool is_floating(DType t);
bool is_integral(DType t);  // integers, not bool
bool is_signed(DType t);

// Result type of a binary op between two tensors (PyTorch's promote_types: bool < integers <
// floating; u8 with a signed integer goes to the wider signed type; f16 with bf16 -> f32).
DType promote_types(DType a, DType b);

std::ostream& operator<<(std::ostream& os, DType t);

// C++ element type for each dtype, and back.
template <DType T> struct DTypeTraits;
template <> struct DTypeTraits<DType::f32> { using type = float; };
template <> struct DTypeTraits<DType::f64> { using type = double; };
template <> struct DTypeTraits<DType::f16> { using type = Half; };
template <> struct DTypeTraits<DType::bf16> { using type = BFloat16; };
template <> struct DTypeTraits<DType::i32> { using type = int32_t; };
template <> struct DTypeTraits<DType::i64> { using type = int64_t; };
template <> struct DTypeTraits<DType::u8> { using type = uint8_t; };
template <> struct DTypeTraits<DType::b8> { using type = bool; };

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<Half>() { return DType::f16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::bf16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<bool>() { return DType::b8; }

}  // namespace ember

// Calls the generic lambda `...` with a value of the C++ element type of `dtype` (as
// `decltype(tag)`), for every dtype. Use the narrower variants where an op supports fewer.
#define EMBER_DTYPE_CASE(DT, ...)          \
  case ::ember::DType::DT: {               \
    using scalar_t = typename ::ember::DTypeTraits<::ember::DType::DT>::type; \
    return __VA_ARGS__();                  \
  }
#define EMBER_DISPATCH_ALL(dtype, op_name, ...)                                        \
  [&] {                                                                                \
    switch (dtype) {                                                                   \
      EMBER_DTYPE_CASE(f32, __VA_ARGS__) EMBER_DTYPE_CASE(f64, __VA_ARGS__)            \
      EMBER_DTYPE_CASE(f16, __VA_ARGS__) EMBER_DTYPE_CASE(bf16, __VA_ARGS__)           \
      EMBER_DTYPE_CASE(i32, __VA_ARGS__) EMBER_DTYPE_CASE(i64, __VA_ARGS__)            \
      EMBER_DTYPE_CASE(u8, __VA_ARGS__) EMBER_DTYPE_CASE(b8, __VA_ARGS__)              \
    }                                                                                  \
    EMBER_THROW(DTypeError, op_name, ": unknown dtype");                               \
  }()
// f32, f64 and the integer types (no bool, no 16-bit floats): the arithmetic set on the CPU.
#define EMBER_DISPATCH_NUMERIC(dtype, op_name, ...)                                    \
  [&] {                                                                                \
    switch (dtype) {                                                                   \
      EMBER_DTYPE_CASE(f32, __VA_ARGS__) EMBER_DTYPE_CASE(f64, __VA_ARGS__)            \
      EMBER_DTYPE_CASE(i32, __VA_ARGS__) EMBER_DTYPE_CASE(i64, __VA_ARGS__)            \
      EMBER_DTYPE_CASE(u8, __VA_ARGS__)                                                \
      default: break;                                                                  \
    }                                                                                  \
    EMBER_THROW(DTypeError, op_name, ": expected a float32, float64 or integer tensor, got ", \
                ::ember::dtype_name(dtype));                                           \
  }()
#define EMBER_DISPATCH_FLOAT(dtype, op_name, ...)                                      \
  [&] {                                                                                \
    switch (dtype) {                                                                   \
      EMBER_DTYPE_CASE(f32, __VA_ARGS__) EMBER_DTYPE_CASE(f64, __VA_ARGS__)            \
      default: break;                                                                  \
    }                                                                                  \
    EMBER_THROW(DTypeError, op_name, ": expected a float32 or float64 tensor, got ",     \
                ::ember::dtype_name(dtype));                                           \
  }()

namespace ember {
// Converts one element between C++ element types the way a dtype cast does: 16-bit floats go
// through float, and anything to bool is "not equal to zero".
template <typename D, typename S>
inline D scalar_cast(S v) {
  if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
    return scalar_cast<D>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>) {
    return D(static_cast<float>(v));
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);
  } else {
    return static_cast<D>(v);
  }
}
}  // namespace ember
