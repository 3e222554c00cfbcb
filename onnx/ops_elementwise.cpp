// ONNX's elementwise operators: arithmetic with broadcasting, unary maths, activations,
// comparisons, Where, Cast, Clip, Softmax and the inference-time identities (Identity, Dropout).
// ONNX never promotes types: both operands of a binary operator have one type, which the
// result keeps (integer Div truncates, as ONNX's reference does).
#include <limits>
#include <string>

#include "autograd/activation.h"
#include "autograd/copy.h"
#include "autograd/elementwise.h"
#include "autograd/math.h"
#include "autograd/softmax.h"
#include "onnx/op_registry.h"
#include "ops/activation.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"

namespace ember::onnx {
namespace {

using Out = std::vector<Tensor>;

bool integral(DType t) { return t == kInt32 || t == kInt64 || t == kUInt8 || t == kBool; }

Out div_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const Tensor& y = a.input(1);
  if (!integral(x.dtype())) return {div(x, y)};
  // The quotient of two integers below 2^53 is exact enough in double to truncate.
  return {to(trunc(div(to(x, kFloat64), to(y, kFloat64))), x.dtype())};
}

Out pow_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  return {to(pow(x, a.input(1)), x.dtype())};
}

Out reciprocal_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  return {div(ones({}, TensorOptions(x.dtype(), x.device())), x)};
}

// Each of Clip, Relu and Add writes into its first input where the node owns it
// (OpArgs::owned: the graph's last reader of a value nothing else shares), saving a tensor's
// allocation and a pass over new memory.

// clamp(x, lo, hi), in place when owned.
Tensor clamp_owned(const OpArgs& a, double lo, double hi) {
  return a.owned(0) ? ops::clamp_(a.input(0), lo, hi) : clamp(a.input(0), lo, hi);
}

Out relu_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  return {a.owned(0) && is_floating(x.dtype()) ? ops::relu_(x) : relu(x)};
}

// x + y, written into whichever input the node owns that has the result's shape and dtype.
Out add_op(const OpArgs& a) {
  const Tensor &x = a.input(0), &y = a.input(1);
  if (x.dtype() == kUInt8) return {to(add(to(x, kInt32), to(y, kInt32)), kUInt8)};
  if (x.dtype() == y.dtype() && x.shape() == y.shape()) {  // ONNX: one type; the common case
    if (a.owned(0)) return {ops::add_(x, y)};
    if (a.owned(1)) return {ops::add_(y, x)};  // x + y == y + x, exactly
  }
  return {add(x, y)};
}

Out clip_op(const OpArgs& a) {
  const Tensor& x = a.input(0);  // a reference: a copy would keep the input from being owned
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (a.has("min") || a.has("max"))  // opsets 6 to 10: the bounds are attributes
    return {clamp_owned(a, a.f("min", -kInf), a.f("max", kInf))};
  // One pass when the bounds are scalars of a floating input (ReLU6 is Clip(x, 0, 6)).
  if (is_floating(x.dtype()) && (!a.has_input(1) || a.input(1).numel() == 1) &&
      (!a.has_input(2) || a.input(2).numel() == 1))
    return {clamp_owned(a, a.has_input(1) ? a.scalar_input(1) : -kInf,
                        a.has_input(2) ? a.scalar_input(2) : kInf)};
  Tensor y = x;
  if (a.has_input(1)) y = maximum(y, a.input(1));
  if (a.has_input(2)) y = minimum(y, a.input(2));
  return {a.has_input(1) || a.has_input(2) ? y : clone(y)};
}

Out prelu_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const Tensor zero = zeros({}, TensorOptions(x.dtype(), x.device()));
  return {where(lt(x, zero), mul(x, a.input(1)), x)};
}

Out hard_sigmoid_op(const OpArgs& a) {
  return {clamp(add(mul(a.input(0), a.f("alpha", 0.2)), a.f("beta", 0.5)), 0.0, 1.0)};
}

Out selu_op(const OpArgs& a) {
  return {mul(elu(a.input(0), a.f("alpha", 1.67326319217681884765625)),
              a.f("gamma", 1.05070102214813232421875))};
}

Out cast_op(const OpArgs& a) {
  const int to_type = static_cast<int>(a.i("to", 0));
  static const std::pair<int, DType> kTypes[] = {{1, kFloat32}, {11, kFloat64}, {10, kFloat16},
                                                 {16, kBFloat16}, {6, kInt32}, {7, kInt64},
                                                 {2, kUInt8}, {9, kBool}};
  for (const auto& [code, dtype] : kTypes)
    if (code == to_type) return {to(a.input(0), dtype)};
  a.fail("cast to " + onnx_type_name(to_type) + " is not supported");
}

// Inference: the identity, every mask element true. Training (the training_mode input true,
// opset 12 on): each element zeroed with probability `ratio` (default 0.5), the rest scaled by
// 1 / (1 - ratio), the mask drawn from Ember's Philox generator (seeded by `seed` when given, the
// default generator otherwise), so it is not the mask another runtime draws.
Out dropout_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  const bool training = a.has_input(2) && a.scalar_input(2) != 0;
  const double ratio = training && a.has_input(1) ? a.scalar_input(1) : 0.5;
  if (training && !(ratio >= 0 && ratio < 1))
    a.fail("ratio must be in [0, 1) in training mode, got " + std::to_string(ratio));
  Out out{x};
  Tensor mask;
  if (training) {
    Generator seeded(static_cast<uint64_t>(a.i("seed", 0)));
    ops::DropoutOutput d = ops::dropout(x, ratio, true, a.has("seed") ? &seeded : nullptr);
    out[0] = d.out;
    mask = d.mask;
  }
  if (a.node.outputs.size() > 1)
    out.push_back(mask.defined() ? mask : ones(x.shape(), TensorOptions(kBool, x.device())));
  return out;
}

Out softmax_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  return {softmax(x, normalize_axis(a, a.i("axis", -1), x.dim()))};
}

Out log_softmax_op(const OpArgs& a) {
  const Tensor& x = a.input(0);
  return {log_softmax(x, normalize_axis(a, a.i("axis", -1), x.dim()))};
}

// Max, Min, Sum, Mean: variadic, broadcasting.
template <Tensor (*Combine)(const Tensor&, const Tensor&)>
Out fold_op(const OpArgs& a) {
  const DType t = a.input(0).dtype();
  const bool u8 = t == kUInt8;  // in int32, as EMBER_BINARY_U8 says
  Tensor acc = u8 ? to(a.input(0), kInt32) : a.input(0);
  for (size_t k = 1; k < a.in.size(); ++k) acc = Combine(acc, u8 ? to(a.input(k), kInt32) : a.input(k));
  return {a.in.size() == 1 ? clone(acc) : to(acc, t)};
}

Out mean_op(const OpArgs& a) {
  Tensor s = fold_op<add>(a)[0];
  return {div(s, full({}, static_cast<double>(a.in.size()), TensorOptions(s.dtype(), s.device())))};
}

#define EMBER_UNARY(Name, fn, since) \
  OpDef { Name, since, {}, [](const OpArgs& a) -> Out { return {fn(a.input(0))}; } }
#define EMBER_BINARY(Name, fn, since) \
  OpDef { Name, since, {}, [](const OpArgs& a) -> Out { return {fn(a.input(0), a.input(1))}; } }
// uint8 arithmetic runs in int32 and wraps back to uint8 on the cast, as ONNX's does (the GPU
// kernels have no uint8 arithmetic).
#define EMBER_BINARY_U8(Name, fn, since)                                            \
  OpDef {                                                                          \
    Name, since, {}, [](const OpArgs& a) -> Out {                                  \
      const Tensor &x = a.input(0), &y = a.input(1);                               \
      if (x.dtype() != kUInt8) return {fn(x, y)};                                  \
      return {to(fn(to(x, kInt32), to(y, kInt32)), kUInt8)};                       \
    }                                                                              \
  }

}  // namespace

void add_elementwise_ops(std::vector<OpDef>& ops) {
  ops.insert(ops.end(), {
    OpDef{"Add", 7, {}, add_op}, EMBER_BINARY_U8("Sub", sub, 7), EMBER_BINARY_U8("Mul", mul, 7),
    OpDef{"Div", 7, {}, div_op}, OpDef{"Pow", 12, {}, pow_op},
    EMBER_BINARY("Equal", eq, 7), EMBER_BINARY("Less", lt, 7), EMBER_BINARY("Greater", gt, 7),
    EMBER_BINARY("LessOrEqual", le, 12), EMBER_BINARY("GreaterOrEqual", ge, 12),
    EMBER_UNARY("Sqrt", sqrt, 6), EMBER_UNARY("Exp", exp, 6), EMBER_UNARY("Log", log, 6),
    EMBER_UNARY("Abs", abs, 6), EMBER_UNARY("Neg", neg, 6), EMBER_UNARY("Erf", erf, 9),
    EMBER_UNARY("Floor", floor, 6), EMBER_UNARY("Ceil", ceil, 6), EMBER_UNARY("Sign", sign, 9),
    EMBER_UNARY("Sin", sin, 7), EMBER_UNARY("Cos", cos, 7), EMBER_UNARY("Not", logical_not, 1),
    OpDef{"Relu", 6, {}, relu_op}, EMBER_UNARY("Sigmoid", sigmoid, 6), EMBER_UNARY("Tanh", tanh, 6),
    EMBER_UNARY("HardSwish", hardswish, 14),
    OpDef{"Reciprocal", 6, {}, reciprocal_op},
    OpDef{"Identity", 1, {}, [](const OpArgs& a) -> Out { return {a.input(0)}; }},
    OpDef{"LeakyRelu", 6, {"alpha"},
          [](const OpArgs& a) -> Out { return {leaky_relu(a.input(0), a.f("alpha", 0.01))}; }},
    OpDef{"Elu", 6, {"alpha"},
          [](const OpArgs& a) -> Out { return {elu(a.input(0), a.f("alpha", 1.0))}; }},
    OpDef{"Softplus", 1, {},
          [](const OpArgs& a) -> Out { return {softplus(a.input(0))}; }},
    OpDef{"Selu", 6, {"alpha", "gamma"}, selu_op},
    OpDef{"HardSigmoid", 6, {"alpha", "beta"}, hard_sigmoid_op},
    OpDef{"PRelu", 9, {}, prelu_op},
    OpDef{"Clip", 6, {"min", "max"}, clip_op},
    OpDef{"Where", 9, {}, [](const OpArgs& a) -> Out {
            return {where(a.input(0), a.input(1), a.input(2))};
          }},
    OpDef{"Cast", 6, {"to"}, cast_op},
    OpDef{"Dropout", 7, {"seed", "ratio"}, dropout_op},
    OpDef{"Softmax", 13, {"axis"}, softmax_op},
    OpDef{"LogSoftmax", 13, {"axis"}, log_softmax_op},
    OpDef{"Max", 8, {}, fold_op<maximum>}, OpDef{"Min", 8, {}, fold_op<minimum>},
    OpDef{"Sum", 8, {}, fold_op<add>}, OpDef{"Mean", 8, {}, mean_op},
  });
}

}  // namespace ember::onnx
