// dtype names, sizes, parsing, the promotion table, and 16-bit float conversions.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/dtype.h"
#include "runtime/error.h"

using namespace ember;

TEST_CASE("dtype names, sizes and parsing") {
  const struct { DType t; const char* name; size_t size; bool fl; } rows[] = {
      {kFloat32, "float32", 4, true}, {kFloat64, "float64", 8, true},
      {kFloat16, "float16", 2, true}, {kBFloat16, "bfloat16", 2, true},
      {kInt32, "int32", 4, false},    {kInt64, "int64", 8, false},
      {kUInt8, "uint8", 1, false},    {kBool, "bool", 1, false}};
  for (const auto& r : rows) {
    CHECK(std::string(dtype_name(r.t)) == r.name);
    CHECK(itemsize(r.t) == r.size);
    CHECK(is_floating(r.t) == r.fl);
    CHECK(parse_dtype(r.name) == r.t);
  }
  CHECK(parse_dtype("half") == kFloat16);
  CHECK(parse_dtype("double") == kFloat64);
  CHECK_THROWS_AS(parse_dtype("float128"), DTypeError);
  try {
    parse_dtype("complex64");
  } catch (const DTypeError& e) {
    CHECK(std::string(e.what()).find("complex64") != std::string::npos);
    CHECK(std::string(e.what()).find("float32") != std::string::npos);
  }
}

TEST_CASE("type promotion follows PyTorch's table") {
  // Rows and columns in the order f32 f64 f16 bf16 i32 i64 u8 bool; written out from
  // torch.promote_types, not derived from the implementation.
  const DType order[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
  const DType F = kFloat32, D = kFloat64, H = kFloat16, B = kBFloat16, I = kInt32, L = kInt64,
              U = kUInt8, O = kBool;
  const DType table[8][8] = {
      /* f32  */ {F, D, F, F, F, F, F, F},
      /* f64  */ {D, D, D, D, D, D, D, D},
      /* f16  */ {F, D, H, F, H, H, H, H},
      /* bf16 */ {F, D, F, B, B, B, B, B},
      /* i32  */ {F, D, H, B, I, L, I, I},
      /* i64  */ {F, D, H, B, L, L, L, L},
      /* u8   */ {F, D, H, B, I, L, U, U},
      /* bool */ {F, D, H, B, I, L, U, O}};
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      CAPTURE(dtype_name(order[i]));
      CAPTURE(dtype_name(order[j]));
      CHECK(promote_types(order[i], order[j]) == table[i][j]);
    }
}

TEST_CASE("float16 conversions round to nearest even") {
  // Bit patterns from the IEEE 754 binary16 definition.
  CHECK(Half(1.0f).bits == 0x3c00);
  CHECK(Half(-2.0f).bits == 0xc000);
  CHECK(Half(65504.0f).bits == 0x7bff);          // largest finite
  CHECK(Half(65520.0f).bits == 0x7c00);          // rounds up to infinity
  CHECK(Half(std::ldexp(1.0f, -24)).bits == 0x0001);  // smallest subnormal
  CHECK(Half(std::ldexp(1.0f, -14)).bits == 0x0400);  // smallest normal
  CHECK(Half(0.1f).bits == 0x2e66);
  CHECK(Half(1.0f + std::ldexp(1.0f, -11)).bits == 0x3c00);  // tie -> even
  CHECK(Half(1.0f + 3 * std::ldexp(1.0f, -11)).bits == 0x3c02);  // tie -> even (up)
  CHECK(std::isnan(static_cast<float>(Half(NAN))));
  CHECK(static_cast<float>(Half::from_bits(0x7c00)) == INFINITY);
  CHECK(static_cast<float>(Half::from_bits(0x0001)) == std::ldexp(1.0f, -24));
  CHECK(static_cast<float>(Half::from_bits(0x3555)) == doctest::Approx(0.333251953125));
  // Every finite half survives half -> float -> half.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7c00) == 0x7c00) continue;
    Half h = Half::from_bits(static_cast<uint16_t>(b));
    REQUIRE(Half(static_cast<float>(h)).bits == b);
  }
}

TEST_CASE("bfloat16 conversions") {
  CHECK(BFloat16(1.0f).bits == 0x3f80);
  CHECK(BFloat16(3.14159265f).bits == 0x4049);
  CHECK(BFloat16(-0.0f).bits == 0x8000);
  CHECK(std::isnan(static_cast<float>(BFloat16(NAN))));
  CHECK(static_cast<float>(BFloat16::from_bits(0x4049)) == 3.140625f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even -> 1.
  CHECK(BFloat16(1.0f + std::ldexp(1.0f, -8)).bits == 0x3f80);
}

TEST_CASE("scalar_cast") {
  CHECK(scalar_cast<bool>(0.5) == true);
  CHECK(scalar_cast<bool>(Half(0.0f)) == false);
  CHECK(scalar_cast<int32_t>(-2.7) == -2);
  CHECK(scalar_cast<uint8_t>(int64_t{255}) == 255);
  CHECK(static_cast<float>(scalar_cast<BFloat16>(1.5)) == 1.5f);
}
