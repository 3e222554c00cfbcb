// Load-time graph passes (onnx/passes.h).
#include "onnx/passes.h"

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "autograd/elementwise.h"
#include "autograd/grad_mode.h"
#include "autograd/shape.h"
#include "onnx/op_registry.h"
#include "ops/conv2d.h"
#include "runtime/error.h"

namespace ember::onnx {
namespace {

// How many nodes read each value, and whether a graph output is it.
std::map<std::string, int> readers(const Graph& g) {
  std::map<std::string, int> n;
  for (const auto& node : g.nodes)
    for (const auto& in : node.inputs)
      if (!in.empty()) ++n[in];
  for (const auto& out : g.outputs) n[out.name] += 1 << 20;  // never rewritten away
  return n;
}

// The node that produces each value.
std::map<std::string, size_t> producers(const Graph& g) {
  std::map<std::string, size_t> p;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& out : g.nodes[i].outputs) p[out] = i;
  return p;
}

// g without the nodes whose positions are in `dropped`.
void drop_nodes(Graph& g, const std::set<size_t>& dropped) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!dropped.count(i)) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

bool all_constant(const Node& node, const Graph& g) {
  for (const auto& in : node.inputs)
    if (!in.empty() && !g.initializers.count(in)) return false;
  return true;
}

int fold_constants(Graph& g, Device device) {
  int folded = 0;
  std::vector<Node> kept;
  for (auto& node : g.nodes) {
    // Constants of constants; a node with no inputs (Constant) is folded too.
    if (!all_constant(node, g)) {
      kept.push_back(std::move(node));
      continue;
    }
    std::vector<Tensor> in;
    for (const auto& name : node.inputs) in.push_back(name.empty() ? Tensor() : g.initializers.at(name));
    auto out = run_node(node, g.opset, device, std::move(in));
    for (size_t k = 0; k < node.outputs.size() && k < out.size(); ++k)
      if (!node.outputs[k].empty()) g.initializers[node.outputs[k]] = out[k];
    ++folded;
  }
  g.nodes = std::move(kept);
  return folded;
}

// Conv -> BatchNormalization, the conv's output read by the batch norm only, every parameter
// a constant: the batch norm becomes the conv's weights and bias (nn/fuse.h has the algebra).
int fold_batch_norms(Graph& g) {
  auto uses = readers(g);
  const auto producer = producers(g);
  std::set<size_t> dropped;
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& bn = g.nodes[i];
    if (bn.op_type != "BatchNormalization" || bn.outputs.size() != 1 || bn.inputs.size() != 5) continue;
    auto it = producer.find(bn.inputs[0]);
    if (it == producer.end()) continue;
    Node& conv = g.nodes[it->second];
    if (conv.op_type != "Conv" || uses[conv.outputs[0]] != 1 || conv.inputs.size() < 2) continue;
    bool constant = g.initializers.count(conv.inputs[1]) &&
                    (conv.inputs.size() < 3 || conv.inputs[2].empty() || g.initializers.count(conv.inputs[2]));
    for (size_t k = 1; k < 5; ++k) constant = constant && g.initializers.count(bn.inputs[k]);
    if (!constant) continue;
    const Tensor& w = g.initializers.at(conv.inputs[1]);
    const Tensor gamma = g.initializers.at(bn.inputs[1]), beta = g.initializers.at(bn.inputs[2]);
    const Tensor mean = g.initializers.at(bn.inputs[3]), var = g.initializers.at(bn.inputs[4]);
    const double eps = bn.attrs.count("epsilon") ? bn.attrs.at("epsilon").f : 1e-5;
    const Tensor s = div(gamma, sqrt(add(var, eps)));
    Shape per_out(static_cast<size_t>(w.dim()), 1);
    per_out[0] = -1;
    const Tensor b = conv.inputs.size() > 2 && !conv.inputs[2].empty()
                         ? g.initializers.at(conv.inputs[2]) : zeros_like(mean);
    const std::string wname = conv.name + ".ember_folded_weight", bname = conv.name + ".ember_folded_bias";
    g.initializers[wname] = mul(w, reshape(s, per_out));
    g.initializers[bname] = add(mul(sub(b, mean), s), beta);
    conv.inputs.resize(3);
    conv.inputs[1] = wname;
    conv.inputs[2] = bname;
    conv.outputs[0] = bn.outputs[0];
    dropped.insert(i);
    ++folded;
  }
  drop_nodes(g, dropped);
  return folded;
}

// A Clip's bounds when they are constant scalars: attributes (opsets 6 to 10) or one-element
// floating initializers (11 on), an omitted one infinite; nothing otherwise (the node then runs
// as itself and reports what is wrong with it).
std::optional<std::pair<double, double>> constant_clip_bounds(const Graph& g, const Node& clip) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double bound[2] = {-kInf, kInf};
  const char* names[2] = {"min", "max"};
  for (int k = 0; k < 2; ++k) {
    auto a = clip.attrs.find(names[k]);
    if (a != clip.attrs.end()) {
      if (a->second.kind != Attr::Kind::f) return std::nullopt;
      bound[k] = a->second.f;
    }
    const size_t in = static_cast<size_t>(k) + 1;
    if (in >= clip.inputs.size() || clip.inputs[in].empty()) continue;
    auto t = g.initializers.find(clip.inputs[in]);
    if (t == g.initializers.end() || t->second.numel() != 1 || !is_floating(t->second.dtype()))
      return std::nullopt;
    bound[k] = t->second.item();
  }
  if (std::isnan(bound[0]) || std::isnan(bound[1]) || bound[0] > bound[1]) return std::nullopt;
  return std::make_pair(bound[0], bound[1]);
}

// One rewriting pass: fold(i, uses, producer) for each node i in order, with the readers and
// producers of the graph as the pass found it; the node whose position it returns is dropped.
template <typename Fold>
void rewrite(Graph& g, Fold fold) {
  const auto uses = readers(g);
  const auto producer = producers(g);
  std::set<size_t> dropped;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (const std::optional<size_t> gone = fold(i, uses, producer)) dropped.insert(*gone);
  drop_nodes(g, dropped);
}

// What a fusion folds into: the position of the Conv whose only output is `value`, read by one
// node, with no activation folded in yet (nor an Add, unless `add_folded_ok`).
std::optional<size_t> sole_conv(const Graph& g, const std::map<std::string, int>& uses,
                                const std::map<std::string, size_t>& producer,
                                const std::string& value, bool add_folded_ok) {
  auto it = producer.find(value);
  if (it == producer.end()) return std::nullopt;
  const Node& conv = g.nodes[it->second];
  if (conv.op_type != "Conv" || conv.fused_relu || conv.fused_clip ||
      (conv.fused_add && !add_folded_ok) || conv.outputs.size() != 1 || uses.at(value) != 1)
    return std::nullopt;
  return it->second;
}

// Conv -> Add, the conv's output read by the Add only and added to another value z (a residual
// block's sum, before its Relu): the conv adds z (ops::conv2d_bias_add_clamp), which becomes its
// fourth input, and takes the Add's place in the order, where z is known. Run before
// fuse_activations, which then folds the Relu after the Add into the same conv.
void fuse_residual_adds(Graph& g, PassReport& r) {
  rewrite(g, [&](size_t i, const auto& uses, const auto& producer) -> std::optional<size_t> {
    const Node& add = g.nodes[i];
    if (add.op_type != "Add" || add.inputs.size() != 2 || add.inputs[0] == add.inputs[1])
      return std::nullopt;
    for (size_t side = 0; side < 2; ++side) {
      const auto at = sole_conv(g, uses, producer, add.inputs[side], false);
      if (!at || g.nodes[*at].inputs.size() > 3) continue;
      Node fused = std::move(g.nodes[*at]);
      fused.inputs.resize(3);
      fused.inputs.push_back(add.inputs[1 - side]);
      fused.outputs[0] = add.outputs.at(0);
      fused.fused_add = true;
      g.nodes[i] = std::move(fused);
      ++r.fused_adds;
      return at;
    }
    return std::nullopt;
  });
}

// Conv -> Relu and Conv -> Clip (constant scalar bounds: ReLU6), the conv's output read by the
// activation only: the conv applies it (ops::conv2d_bias_relu, conv2d_bias_clamp). Counts each
// kind in the report.
void fuse_activations(Graph& g, PassReport& r) {
  rewrite(g, [&](size_t i, const auto& uses, const auto& producer) -> std::optional<size_t> {
    const Node& act = g.nodes[i];
    if (act.op_type != "Relu" && act.op_type != "Clip") return std::nullopt;
    const auto at = sole_conv(g, uses, producer, act.inputs.at(0), true);
    if (!at) return std::nullopt;
    Node& conv = g.nodes[*at];
    if (act.op_type == "Relu") {
      conv.fused_relu = true;
      ++r.fused_relus;
    } else {
      conv.fused_clip = constant_clip_bounds(g, act);
      if (!conv.fused_clip) return std::nullopt;
      ++r.fused_clips;
    }
    conv.outputs[0] = act.outputs[0];
    return i;
  });
}

// Each Conv whose filters are a constant gets them packed once for the cpu's implicit GEMM
// (ops::pack_conv2d_filters), which otherwise packs them on every run. Weights the packing
// cannot take (a malformed model) are left for the run to report.
void pack_conv_filters(Graph& g, Device device) {
  if (!device.is_cpu()) return;
  for (Node& node : g.nodes) {
    if (node.op_type != "Conv" || node.inputs.size() < 2) continue;
    auto it = g.initializers.find(node.inputs[1]);
    if (it == g.initializers.end()) continue;
    const Tensor& w = it->second;
    auto group = node.attrs.find("group");
    ops::Conv2dParams p;
    if (group != node.attrs.end()) {
      if (group->second.kind != Attr::Kind::i) continue;
      p.groups = group->second.i;
    }
    if ((w.dim() != 3 && w.dim() != 4) || p.groups < 1 || w.size(0) == 0 ||
        w.size(0) % p.groups != 0)
      continue;
    // The stride chooses the layout (the filters in lanes for strided layers): packed for the
    // stride the run will use. One the run reads otherwise (a malformed attribute) only costs a
    // packing per call, never a wrong result.
    auto strides = node.attrs.find("strides");
    if (strides != node.attrs.end() && strides->second.kind == Attr::Kind::ints) {
      const std::vector<int64_t>& st = strides->second.ints;
      if (w.dim() == 4 && st.size() == 2 && st[0] > 0 && st[1] > 0) p.stride = {st[0], st[1]};
      if (w.dim() == 3 && st.size() == 1 && st[0] > 0) p.stride = {1, st[0]};
    }
    auto packed = ops::pack_conv2d_filters(w.dim() == 3 ? unsqueeze(w, 2) : w, p);
    if (packed.data.defined()) {
      node.packed_filters = std::make_shared<const ops::PackedConv2dFilters>(std::move(packed));
      node.prepared_conv = std::make_shared<Node::PreparedConv>();
    }
  }
}

int remove_dead(Graph& g) {
  std::set<std::string> needed;
  for (const auto& out : g.outputs) needed.insert(out.name);
  std::vector<bool> live(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    for (const auto& out : g.nodes[i].outputs) live[i] = live[i] || needed.count(out);
    if (live[i])
      for (const auto& in : g.nodes[i].inputs) needed.insert(in);
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (live[i]) kept.push_back(std::move(g.nodes[i]));
  const int removed = static_cast<int>(g.nodes.size() - kept.size());
  g.nodes = std::move(kept);
  for (auto it = g.initializers.begin(); it != g.initializers.end();)
    it = needed.count(it->first) ? std::next(it) : g.initializers.erase(it);
  return removed;
}

}  // namespace

void sort_and_check(Graph& g, const std::string& source) {
  std::map<std::string, int> producer;  // -1: a graph input or an initializer
  for (const auto& [name, t] : g.initializers) producer[name] = -1;
  for (const auto& in : g.inputs) {
    if (in.name.empty()) EMBER_THROW(FormatError, source, ": a graph input has no name");
    if (!producer.emplace(in.name, -1).second)
      EMBER_THROW(FormatError, source, ": graph input '", in.name, "' is declared twice");
  }
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& out : g.nodes[i].outputs) {
      if (out.empty()) continue;
      if (!producer.emplace(out, static_cast<int>(i)).second)
        EMBER_THROW(FormatError, g.nodes[i].op_type, " node '", g.nodes[i].name, "': its output '",
                    out, "' is already defined by ",
                    producer[out] < 0 ? std::string("a graph input or initializer")
                                      : "node '" + g.nodes[producer[out]].name + "'");
    }
  // Kahn's algorithm over the nodes; what is left over lies on a cycle.
  std::vector<int> waiting(g.nodes.size(), 0);
  std::vector<std::vector<size_t>> next(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& in : g.nodes[i].inputs) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        EMBER_THROW(FormatError, g.nodes[i].op_type, " node '", g.nodes[i].name, "': input '", in,
                    "' is not a graph input, an initializer or any node's output");
      if (it->second >= 0) {
        ++waiting[i];
        next[it->second].push_back(i);
      }
    }
  std::vector<size_t> ready, order;
  for (size_t i = g.nodes.size(); i-- > 0;)
    if (!waiting[i]) ready.push_back(i);
  while (!ready.empty()) {
    const size_t i = ready.back();
    ready.pop_back();
    order.push_back(i);
    for (size_t j : next[i])
      if (--waiting[j] == 0) ready.push_back(j);
  }
  if (order.size() != g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (waiting[i])
        EMBER_THROW(FormatError, g.nodes[i].op_type, " node '", g.nodes[i].name, "' is on a cycle ",
                    "(the graph must be acyclic)");
  }
  std::vector<Node> sorted;
  for (size_t i : order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
  for (const auto& out : g.outputs)
    if (!producer.count(out.name))
      EMBER_THROW(FormatError, source, ": graph output '", out.name, "' is not produced by any node");
}

void check_supported(const Graph& g, const std::string& source) {
  std::vector<std::string> why;
  if (g.opset < kMinOpset || g.opset > kMaxOpset)
    why.push_back("the model imports opset " + std::to_string(g.opset) + "; Ember reads opsets " +
                  std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
  for (const auto* list : {&g.inputs, &g.outputs})
    for (const auto& v : *list)
      if (v.kind != "tensor")
        why.push_back("graph " + std::string(list == &g.inputs ? "input" : "output") + " '" +
                      v.name + "' is a " + v.kind + "; Ember runs graphs of tensors");
  for (const auto& node : g.nodes) {
    auto more = unsupported(node, g.opset);
    why.insert(why.end(), more.begin(), more.end());
  }
  if (why.empty()) return;
  std::ostringstream msg;
  msg << source << ": Ember cannot run this model (" << why.size() << " reason"
      << (why.size() == 1 ? "" : "s") << "):";
  for (const auto& w : why) msg << "\n  " << w;
  throw ValueError(msg.str());
}

std::vector<Tensor> run_node(const Node& node, int64_t opset, Device device,
                             std::vector<Tensor> inputs, const OpDef* def) {
  if (!def) def = find_op(node.op_type);
  if (!def) EMBER_THROW(ValueError, "operator ", node.op_type, " is not supported");
  NoGradGuard no_grad;
  OpArgs args{node, opset, device, std::move(inputs)};
  // The node named in front of an error (built only then: this runs for every node on every run).
  auto where = [&](const std::exception& e) {
    return node.op_type + " node '" + node.name + "': " + e.what();
  };
  try {
    return def->run(args);
  } catch (const FormatError&) {
    throw;  // already names the node
  } catch (const ShapeError& e) {
    throw ShapeError(where(e));
  } catch (const DTypeError& e) {
    throw DTypeError(where(e));
  } catch (const IndexError& e) {
    throw IndexError(where(e));
  } catch (const DeviceError& e) {
    throw DeviceError(where(e));
  } catch (const ValueError& e) {
    throw ValueError(where(e));
  }
}

PassReport optimize(Graph& g, Device device) {
  PassReport r;
  r.folded_constants = fold_constants(g, device);
  r.folded_batch_norms = fold_batch_norms(g);
  fuse_residual_adds(g, r);
  fuse_activations(g, r);
  r.removed_nodes = remove_dead(g);
  pack_conv_filters(g, device);
  return r;
}

}  // namespace ember::onnx
