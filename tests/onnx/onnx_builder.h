// Small ModelProto builders for the ONNX tests: a graph of nodes over float tensors, serialised
// to bytes, so that each test states the model it loads (and the hostile ones can break it).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ember::onnx_test {

// n values from N(0, 1), reproducible from `seed`.
inline std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}


using Attrs = std::vector<::onnx::AttributeProto>;

// An attribute with its name and type set; each builder below sets its value.
inline ::onnx::AttributeProto attr_named(const std::string& name,
                                         ::onnx::AttributeProto::AttributeType type) {
  ::onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(type);
  return a;
}

inline ::onnx::AttributeProto attr_i(const std::string& name, int64_t v) {
  auto a = attr_named(name, ::onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

inline ::onnx::AttributeProto attr_f(const std::string& name, float v) {
  auto a = attr_named(name, ::onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

inline ::onnx::AttributeProto attr_ints(const std::string& name, std::vector<int64_t> v) {
  auto a = attr_named(name, ::onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

inline ::onnx::AttributeProto attr_s(const std::string& name, const std::string& v) {
  auto a = attr_named(name, ::onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

struct ModelBuilder {
  ::onnx::ModelProto m;
  ModelBuilder(int64_t opset = 13) {
    m.set_ir_version(8);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
  }
  ::onnx::GraphProto& g() { return *m.mutable_graph(); }
  ModelBuilder& input(const std::string& name, std::vector<int64_t> shape,
                      int elem = ::onnx::TensorProto::FLOAT) {
    value(g().add_input(), name, shape, elem);
    return *this;
  }
  ModelBuilder& output(const std::string& name, int elem = ::onnx::TensorProto::FLOAT) {
    auto* v = g().add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    return *this;
  }
  ModelBuilder& node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                     const Attrs& attrs = {}, const std::string& name = "") {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    for (const auto& a : attrs) *n->add_attribute() = a;
    return *this;
  }
  // A float initializer holding `values` (raw_data) of `shape`.
  ::onnx::TensorProto& init(const std::string& name, std::vector<int64_t> shape,
                            const std::vector<float>& values) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
    return *t;
  }
  std::string bytes() const { return m.SerializeAsString(); }

 private:
  static void value(::onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& shape,
                    int elem) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* s = tt->mutable_shape();
    for (int64_t d : shape) {
      auto* dim = s->add_dim();
      if (d >= 0) dim->set_dim_value(d);
      else dim->set_dim_param("N");
    }
  }
};

}  // namespace ember::onnx_test
