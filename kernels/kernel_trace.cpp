// The tracing kernel tables (Note [Op trace] in runtime/trace.h): one per device, generated from
// EMBER_KERNEL_LIST like the plain ones, each entry a wrapper that times the device's kernel and
// records it with its dtype and sizes. Queries (workspace sizes, plans, support checks) pass
// straight through unrecorded.
#include "kernels/kernel_trace.h"

#include <sstream>
#include <string_view>
#include <type_traits>

#include "ember/build_config.h"
#include "runtime/trace.h"

namespace ember::kernels {
namespace {

// --- What each argument type says in a trace line ----------------------------------------------

template <typename T>
void describe(std::ostream&, const T&) {}  // pointers, streams, plans: nothing

void describe(std::ostream& os, DType t) { os << dtype_name(t) << ' '; }
void describe(std::ostream& os, BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod",
                                "remainder", "eq", "ne", "lt", "le", "gt", "ge"};
  os << names[static_cast<int>(op)] << ' ';
}
void describe(std::ostream& os, UnaryOp op) {
  static const char* names[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "clamp", "sign",
                                "floor", "ceil", "round", "trunc", "sin", "cos", "erf"};
  os << names[static_cast<int>(op)] << ' ';
}
void describe(std::ostream& os, ReduceOp op) {
  static const char* names[] = {"sum", "mean", "amax", "amin", "argmax", "argmin", "var", "std"};
  os << names[static_cast<int>(op)] << ' ';
}
void describe(std::ostream& os, Activation a) {
  static const char* names[] = {"relu",     "leaky_relu", "sigmoid",   "tanh",        "gelu",
                                "gelu_tanh", "silu",      "elu",       "softplus",    "hardtanh",
                                "hardswish", "hardsigmoid", "mish"};
  const size_t i = static_cast<size_t>(a);
  if (i < sizeof(names) / sizeof(names[0]))
    os << names[i] << ' ';
  else
    os << "activation " << i << ' ';
}
void describe(std::ostream& os, ScanOp op) { os << (op == ScanOp::sum ? "sum " : "prod "); }
void describe(std::ostream& os, ScatterMode m) {
  os << (m == ScatterMode::add ? "add " : "assign ");
}
void describe(std::ostream& os, ConvDirection d) {
  static const char* names[] = {"forward", "backward_data", "backward_filter"};
  os << names[static_cast<int>(d)] << ' ';
}
void describe(std::ostream& os, WinogradTile t) {
  static const char* names[] = {"F(2x2,3x3)", "F(4x4,3x3)", "F(2x2,3x3) fused"};
  os << names[static_cast<int>(t)] << ' ';
}
void describe(std::ostream& os, int64_t n) { os << "n=" << n << ' '; }
template <int N>
void describe(std::ostream& os, const StridedIndex<N>& s) {
  os << '[';
  for (int d = 0; d < s.ndim; ++d) os << (d ? "," : "") << s.sizes[d];
  os << "] ";
}
void describe(std::ostream& os, const ConvShape& s) {
  os << "x=[" << s.n << ',' << s.c << ',' << s.h << ',' << s.w << "] w=[" << s.k << ','
     << s.cg() << ',' << s.r << ',' << s.s << "] y=[" << s.n << ',' << s.k << ',' << s.oh << ','
     << s.ow << "] stride=" << s.stride_h << ',' << s.stride_w << " pad=" << s.pad_h << ','
     << s.pad_w << " dil=" << s.dil_h << ',' << s.dil_w << " groups=" << s.groups << ' ';
}
void describe(std::ostream& os, const GemmShape& s) {
  os << "m=" << s.m << " n=" << s.n << " k=" << s.k << " batch=" << s.batch << ' ';
}
void describe(std::ostream& os, const TcGemm& g) {
  os << dtype_name(g.in) << "->" << dtype_name(g.out) << ' ';
  describe(os, g.shape);
}
void describe(std::ostream& os, const PoolShape& s) {
  os << "x=[" << s.n << ',' << s.c << ',' << s.h << ',' << s.w << "] y=[" << s.oh << ',' << s.ow
     << "] window=" << s.kh << ',' << s.kw << " stride=" << s.sh << ',' << s.sw << ' ';
}
void describe(std::ostream& os, const BatchNormShape& s) {
  os << "n=" << s.n << " c=" << s.c << " spatial=" << s.s << ' ';
}
void describe(std::ostream& os, const SoftmaxShape& s) {
  os << "[" << s.outer << ',' << s.dim << ',' << s.inner << "] ";
}
void describe(std::ostream& os, const NllShape& s) {
  os << "n=" << s.n << " classes=" << s.c << ' ';
}
void describe(std::ostream& os, const ReduceShape& s) {
  os << "outputs=" << s.kept_numel() << " reduced=" << s.reduced_numel() << ' ';
}
void describe(std::ostream& os, const SortShape& s) {
  os << "rows=" << s.rows << " n=" << s.n << (s.descending ? " descending " : " ");
}
void describe(std::ostream& os, const ScanShape& s) {
  os << "[" << s.outer << ',' << s.n << ',' << s.inner << "]" << (s.reverse ? " reverse " : " ");
}

// The device of the table kernels_for handed out last on this thread: the device the next call
// runs on.
thread_local Device t_device;

// Entries that answer questions rather than compute.
bool is_query(std::string_view name) {
  auto ends = [&](std::string_view tail) {
    return name.size() >= tail.size() && name.substr(name.size() - tail.size()) == tail;
  };
  return ends("_bytes") || ends("_supports") || ends("_plan");
}

// The traced form of kernel F (a device's function `name`).
template <typename Sig, Sig* F>
struct Traced;
template <typename R, typename... A, R (*F)(A...)>
struct Traced<R(A...), F> {
  static const char* kernel_name;
  static R call(A... args) {
    if (is_query(kernel_name) || !trace::enabled()) return F(args...);
    std::ostringstream detail;
    (describe(detail, args), ...);
    const auto begin = std::chrono::steady_clock::now();
    if constexpr (std::is_void_v<R>) {
      F(args...);
      finish(detail.str(), begin);
    } else {
      R r = F(args...);
      finish(detail.str(), begin);
      return r;
    }
  }
  static void finish(const std::string& detail, std::chrono::steady_clock::time_point begin) {
    const Device d = t_device;
    if (d.is_gpu_like()) gpu::backend(d).stream_synchronize(gpu::current_stream(d));
    trace::record("kernel", kernel_name, d, detail, begin, std::chrono::steady_clock::now());
  }
};
template <typename R, typename... A, R (*F)(A...)>
const char* Traced<R(A...), F>::kernel_name = nullptr;

// Names each wrapper, then makes the table of wrappers.
#define EMBER_TRACED(ns, name) Traced<decltype(ns::name), &ns::name>
#define EMBER_TRACED_NAME(name, ret, params) \
  EMBER_TRACED(EMBER_TRACE_NS, name)::kernel_name = #name;
#define EMBER_TRACED_ENTRY(name, ret, params) &EMBER_TRACED(EMBER_TRACE_NS, name)::call,

#define EMBER_TRACE_NS cpu
KernelTable make_cpu_table() {
  EMBER_KERNEL_LIST(EMBER_TRACED_NAME)
  return KernelTable{EMBER_KERNEL_LIST(EMBER_TRACED_ENTRY)};
}
#undef EMBER_TRACE_NS
#define EMBER_TRACE_NS emu
KernelTable make_emu_table() {
  EMBER_KERNEL_LIST(EMBER_TRACED_NAME)
  return KernelTable{EMBER_KERNEL_LIST(EMBER_TRACED_ENTRY)};
}
#undef EMBER_TRACE_NS
#if EMBER_HAVE_CUDA
#define EMBER_TRACE_NS cuda
KernelTable make_cuda_table() {
  EMBER_KERNEL_LIST(EMBER_TRACED_NAME)
  return KernelTable{EMBER_KERNEL_LIST(EMBER_TRACED_ENTRY)};
}
#undef EMBER_TRACE_NS
#endif

}  // namespace

const KernelTable& traced_kernels(Device d) {
  static const KernelTable cpu = make_cpu_table();
  static const KernelTable emu = make_emu_table();
  t_device = d;
#if EMBER_HAVE_CUDA
  static const KernelTable cuda = make_cuda_table();
  if (d.is_cuda()) return cuda;
#endif
  return d.is_emu() ? emu : cpu;
}

}  // namespace ember::kernels
