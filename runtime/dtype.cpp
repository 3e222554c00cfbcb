#include "runtime/dtype.h"

#include <algorithm>

#include "runtime/error.h"

namespace ember {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::u8: return "uint8";
    case DType::b8: return "bool";
  }
  return "unknown";
}

DType parse_dtype(const std::string& s) {
  struct Alias { const char* name; DType t; };
  static const Alias aliases[] = {
      {"float32", DType::f32}, {"f32", DType::f32}, {"float", DType::f32},
      {"float64", DType::f64}, {"f64", DType::f64}, {"double", DType::f64},
      {"float16", DType::f16}, {"f16", DType::f16}, {"half", DType::f16},
      {"bfloat16", DType::bf16}, {"bf16", DType::bf16},
      {"int32", DType::i32}, {"i32", DType::i32}, {"int", DType::i32},
      {"int64", DType::i64}, {"i64", DType::i64}, {"long", DType::i64},
      {"uint8", DType::u8}, {"u8", DType::u8},
      {"bool", DType::b8}, {"b8", DType::b8}};
  for (const auto& a : aliases)
    if (s == a.name) return a.t;
  EMBER_THROW(DTypeError, "unknown dtype '", s,
              "': expected one of float32, float64, float16, bfloat16, int32, int64, uint8, bool");
}

size_t itemsize(DType t) {
  switch (t) {
    case DType::f64: case DType::i64: return 8;
    case DType::f32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::u8: case DType::b8: return 1;
  }
  return 0;
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}
bool is_integral(DType t) { return t == DType::i32 || t == DType::i64 || t == DType::u8; }
bool is_signed(DType t) { return t != DType::u8 && t != DType::b8; }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::b8) return b;
  if (b == DType::b8) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16))
      return DType::f32;
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  // Both integral. u8 with a signed type: the signed type (every one here is wider than u8).
  if (a == DType::u8) return b;
  if (b == DType::u8) return a;
  return itemsize(a) >= itemsize(b) ? a : b;
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

}  // namespace ember
