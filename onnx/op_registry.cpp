// The operator table and the attribute accessors every operator uses.
#include "onnx/op_registry.h"

#include <algorithm>
#include <map>

#include "autograd/copy.h"
#include "runtime/error.h"

namespace ember::onnx {
namespace {

const std::map<std::string, OpDef>& table() {
  static const std::map<std::string, OpDef> t = [] {
    std::vector<OpDef> defs;
    add_elementwise_ops(defs);
    add_nn_ops(defs);
    add_shape_ops(defs);
    add_resize_ops(defs);
    std::map<std::string, OpDef> m;
    for (auto& d : defs) m.emplace(d.name, std::move(d));
    return m;
  }();
  return t;
}

// The node's attribute `name` if it has one (null otherwise), a FormatError if not of `kind`.
const Attr* attr_if(const OpArgs& a, const char* name, Attr::Kind kind, const char* kind_name) {
  const auto it = a.node.attrs.find(name);
  if (it == a.node.attrs.end()) return nullptr;
  if (it->second.kind != kind) a.fail(std::string("attribute '") + name + "' is not " + kind_name);
  return &it->second;
}

const Attr& attr_of(const OpArgs& a, const char* name, Attr::Kind kind, const char* kind_name) {
  const Attr* at = attr_if(a, name, kind, kind_name);
  if (at == nullptr) a.fail(std::string("attribute '") + name + "' is missing");
  return *at;
}

}  // namespace

const OpDef* find_op(const std::string& op_type) {
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<const OpDef*> all_ops() {
  std::vector<const OpDef*> out;
  for (const auto& [name, def] : table()) out.push_back(&def);
  return out;
}

std::vector<std::string> unsupported(const Node& node, int64_t opset) {
  std::vector<std::string> why;
  const std::string where = node.op_type + " node '" + node.name + "'";
  if (!node.domain.empty()) {
    why.push_back(where + ": domain '" + node.domain + "' is not supported (only the default " +
                  "ONNX domain is)");
    return why;
  }
  const OpDef* def = find_op(node.op_type);
  if (!def) {
    why.push_back(where + ": operator " + node.op_type + " is not supported");
    return why;
  }
  if (opset < def->since)
    why.push_back(where + ": " + node.op_type + " is supported from opset " +
                  std::to_string(def->since) + ", the model imports opset " +
                  std::to_string(opset));
  for (const auto& kv : node.attrs) {
    const std::string& name = kv.first;
    const Attr& attr = kv.second;
    const bool known = std::any_of(def->attrs.begin(), def->attrs.end(),
                                   [&](const char* a) { return name == a; });
    if (!known) why.push_back(where + ": attribute '" + name + "' is not supported");
    else if (attr.kind == Attr::Kind::unsupported)
      why.push_back(where + ": attribute '" + name + "' is of a kind Ember does not read");
  }
  if (def->check) {
    std::string reason = def->check(node);
    if (!reason.empty()) why.push_back(where + ": " + reason);
  }
  return why;
}

bool OpArgs::owned(size_t k) const {
  if (!has_input(k)) return false;
  const Tensor& t = in[k];
  return t.impl_ptr().use_count() == 1 && t.storage().use_count() == 1 && t.is_contiguous() &&
         t.impl()->autograd == nullptr;
}

const Tensor& OpArgs::input(size_t k) const {
  if (!has_input(k)) fail("input " + std::to_string(k) + " is required");
  return in[k];
}

std::vector<int64_t> OpArgs::ints_input(size_t k) const {
  const Tensor& t = input(k);
  if (t.dtype() != kInt64 && t.dtype() != kInt32)
    fail("input " + std::to_string(k) + " must be int64, got " + dtype_name(t.dtype()));
  return t.to_vector<int64_t>();
}

double OpArgs::scalar_input(size_t k) const {
  const Tensor& t = input(k);
  if (t.numel() != 1)
    fail("input " + std::to_string(k) + " must hold one value, got shape " +
         detail::str_cat(t.shape()));
  return t.item();
}

int64_t OpArgs::i(const char* attr, int64_t fallback) const {
  return has(attr) ? attr_of(*this, attr, Attr::Kind::i, "an int").i : fallback;
}
double OpArgs::f(const char* attr, double fallback) const {
  return has(attr) ? attr_of(*this, attr, Attr::Kind::f, "a float").f : fallback;
}
std::string OpArgs::s(const char* attr, const std::string& fallback) const {
  return has(attr) ? attr_of(*this, attr, Attr::Kind::s, "a string").s : fallback;
}
std::vector<int64_t> OpArgs::ints(const char* attr, std::vector<int64_t> fallback) const {
  return has(attr) ? attr_of(*this, attr, Attr::Kind::ints, "a list of ints").ints : fallback;
}
const std::vector<int64_t>* OpArgs::ints_if(const char* attr) const {
  const Attr* at = attr_if(*this, attr, Attr::Kind::ints, "a list of ints");
  return at != nullptr ? &at->ints : nullptr;
}
std::vector<double> OpArgs::floats(const char* attr) const {
  return has(attr) ? attr_of(*this, attr, Attr::Kind::floats, "a list of floats").floats
                   : std::vector<double>{};
}
const Tensor& OpArgs::tensor(const char* attr) const {
  return attr_of(*this, attr, Attr::Kind::tensor, "a tensor").t;
}

void OpArgs::fail(const std::string& message) const {
  EMBER_THROW(FormatError, node.op_type, " node '", node.name, "': ", message);
}

int64_t normalize_axis(const OpArgs& args, int64_t a, int64_t rank) {
  if (a < -rank || a >= rank)
    args.fail("axis " + std::to_string(a) + " is outside a rank-" + std::to_string(rank) +
              " tensor");
  return a < 0 ? a + rank : a;
}

}  // namespace ember::onnx
