// Reading ONNX protobuf messages (through the ONNX package's generated classes) into onnx/graph.h,
// treating every byte as hostile: data lengths are checked against shape x element size with
// overflow checks, dims are bounded, external data stays inside the model's folder.
#include <onnx/onnx_pb.h>

#include <sys/stat.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "onnx/graph.h"
#include "runtime/error.h"

namespace ember::onnx {
namespace {

namespace fs = std::filesystem;
using TP = ::onnx::TensorProto;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ONNX raw_data is little-endian; this reader assumes a little-endian host"
#endif

// No tensor of more elements than this is read (2^40: far above any model, far below overflow).
constexpr int64_t kMaxElements = int64_t{1} << 40;

std::optional<DType> ember_dtype(int elem_type) {
  switch (elem_type) {
    case TP::FLOAT: return kFloat32;
    case TP::DOUBLE: return kFloat64;
    case TP::FLOAT16: return kFloat16;
    case TP::BFLOAT16: return kBFloat16;
    case TP::INT32: return kInt32;
    case TP::INT64: return kInt64;
    case TP::UINT8: return kUInt8;
    case TP::BOOL: return kBool;
    default: return std::nullopt;
  }
}

// The dims of a tensor, checked: non-negative, and a product that fits.
Shape checked_dims(const TP& t, const std::string& what) {
  Shape shape;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) EMBER_THROW(FormatError, what, ": negative dim ", d, " in its shape");
    if (d != 0 && n > kMaxElements / d)
      EMBER_THROW(FormatError, what, ": its shape has more than 2^40 elements");
    n *= d;
    shape.push_back(d);
  }
  return shape;
}

// The repeated field that holds the values of a tensor of `dtype` without raw data (float16,
// bfloat16, uint8 and bool values sit one per int32), its name, and how many it holds.
int64_t typed_count(const TP& t, DType dtype, const char** name) {
  switch (dtype) {
    case DType::f32: *name = "float_data"; return t.float_data_size();
    case DType::f64: *name = "double_data"; return t.double_data_size();
    case DType::i64: *name = "int64_data"; return t.int64_data_size();
    default: *name = "int32_data"; return t.int32_data_size();
  }
}

// Copies the `count` values of a repeated field into dst as T. requires: the field holds count.
template <typename T, typename Field>
void copy_field(const Field& field, int64_t count, void* dst) {
  T* out = static_cast<T*>(dst);
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(field.Get(static_cast<int>(i)));
}

// Reads external data: `location` relative to model_dir, never leaving it.
std::string read_external(const TP& t, const std::string& model_dir, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      EMBER_THROW(FormatError, what, ": external data ", kv.key(), " '", kv.value(),
                  "' is not a number");
    }
  }
  if (model_dir.empty())
    EMBER_THROW(FormatError, what, ": its data is in an external file, and a model read from ",
                "memory has no folder to read it from");
  if (location.empty()) EMBER_THROW(FormatError, what, ": external data without a location");
  const fs::path rel(location);
  bool climbs = rel.is_absolute();
  for (const auto& part : rel) climbs = climbs || part == "..";
  if (climbs)
    EMBER_THROW(FormatError, what, ": external data location '", location, "' leaves the model's ",
                "folder (absolute paths and '..' are refused)");
  std::error_code ec;
  const fs::path dir = fs::canonical(model_dir, ec);
  const fs::path file = fs::weakly_canonical(dir / rel, ec);
  const auto [d_end, f_it] = std::mismatch(dir.begin(), dir.end(), file.begin(), file.end());
  (void)f_it;
  if (ec || d_end != dir.end())
    EMBER_THROW(FormatError, what, ": external data location '", location, "' resolves outside ",
                "the model's folder (a symbolic link out is refused)");
  if (offset < 0 || length < -1)
    EMBER_THROW(FormatError, what, ": negative external data offset or length");
  std::ifstream in(file, std::ios::binary);
  if (!in) EMBER_THROW(IOError, what, ": cannot open external data file '", file.string(), "'");
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  if (length < 0) length = size - offset;
  if (offset > size || length > size - offset)
    EMBER_THROW(FormatError, what, ": external data [", offset, ", ", offset + length, ") is past ",
                "the end of '", location, "' (", size, " bytes)");
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) EMBER_THROW(IOError, what, ": reading external data from '", location, "' failed");
  return bytes;
}

Tensor tensor_from_proto(const TP& t, const std::string& model_dir, const std::string& what) {
  const auto dtype = ember_dtype(t.data_type());
  if (!dtype)
    EMBER_THROW(DTypeError, what, ": element type ", onnx_type_name(t.data_type()), " is not ",
                "supported (Ember has FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT32, INT64, UINT8, BOOL)");
  const Shape shape = checked_dims(t, what);
  const int64_t n = checked_numel(shape);
  const size_t bytes = static_cast<size_t>(n) * itemsize(*dtype);
  // The data's length is checked before the tensor is allocated: a shape the data does not fill
  // never costs memory.
  const bool external = t.data_location() == TP::EXTERNAL;
  if (external || t.has_raw_data()) {
    const std::string ext = external ? read_external(t, model_dir, what) : std::string();
    const std::string& raw = external ? ext : t.raw_data();
    if (raw.size() != bytes)
      EMBER_THROW(FormatError, what, ": ", external ? "external" : "raw", " data holds ",
                  raw.size(), " bytes, its shape ", shape, " of ", dtype_name(*dtype), " needs ",
                  bytes);
    Tensor out = empty(shape, *dtype);
    if (bytes) std::memcpy(out.data_ptr(), raw.data(), bytes);
    return out;
  }
  const char* field = nullptr;
  const int64_t have = typed_count(t, *dtype, &field);
  if (have != n)
    EMBER_THROW(FormatError, what, ": ", field, " holds ", have, " values, its shape ", shape,
                " needs ", n);
  Tensor out = empty(shape, *dtype);
  void* dst = out.data_ptr();
  switch (*dtype) {
    case DType::f32: copy_field<float>(t.float_data(), n, dst); break;
    case DType::f64: copy_field<double>(t.double_data(), n, dst); break;
    case DType::i64: copy_field<int64_t>(t.int64_data(), n, dst); break;
    case DType::i32: copy_field<int32_t>(t.int32_data(), n, dst); break;
    case DType::u8: copy_field<uint8_t>(t.int32_data(), n, dst); break;
    case DType::b8: copy_field<bool>(t.int32_data(), n, dst); break;
    case DType::f16:  // the bits of each half value, one per int32
    case DType::bf16: copy_field<uint16_t>(t.int32_data(), n, dst); break;
  }
  return out;
}

Attr attr_from_proto(const ::onnx::AttributeProto& a, const std::string& model_dir,
                     const std::string& what) {
  using AP = ::onnx::AttributeProto;
  Attr r;
  switch (a.type()) {
    case AP::INT: r.kind = Attr::Kind::i; r.i = a.i(); break;
    case AP::FLOAT: r.kind = Attr::Kind::f; r.f = a.f(); break;
    case AP::STRING: r.kind = Attr::Kind::s; r.s = a.s(); break;
    case AP::INTS: r.kind = Attr::Kind::ints; r.ints.assign(a.ints().begin(), a.ints().end()); break;
    case AP::FLOATS:
      r.kind = Attr::Kind::floats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case AP::STRINGS:
      r.kind = Attr::Kind::strings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case AP::TENSOR:
      r.kind = Attr::Kind::tensor;
      r.t = tensor_from_proto(a.t(), model_dir, what + " attribute '" + a.name() + "'");
      break;
    default: r.kind = Attr::Kind::unsupported; break;
  }
  return r;
}

ValueInfo value_info(const ::onnx::ValueInfoProto& v) {
  ValueInfo info;
  info.name = v.name();
  const auto& type = v.type();
  if (type.has_sequence_type()) info.kind = "sequence";
  else if (type.has_map_type()) info.kind = "map";
  else if (type.has_optional_type()) info.kind = "optional";
  else if (type.has_sparse_tensor_type()) info.kind = "sparse tensor";
  if (v.type().has_tensor_type()) {
    const auto& tt = v.type().tensor_type();
    info.dtype = ember_dtype(tt.elem_type());
    if (tt.has_shape()) {
      info.has_shape = true;
      for (const auto& d : tt.shape().dim())
        info.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
  }
  return info;
}

template <typename Message>
void parse(Message& m, const void* data, size_t size, const std::string& source) {
  if (size > static_cast<size_t>(INT_MAX))
    EMBER_THROW(FormatError, source, ": ", size, " bytes is more than protobuf reads (2 GiB); ",
                "keep the weights in external data files");
  if (!m.ParseFromArray(data, static_cast<int>(size)))
    EMBER_THROW(FormatError, source, ": not a valid ", m.GetTypeName(), " (truncated or corrupt)");
}

}  // namespace

Graph read_model(const void* data, size_t size, const std::string& model_dir,
                 const std::string& source) {
  ::onnx::ModelProto model;
  parse(model, data, size, source);
  Graph g;
  g.producer = model.producer_name();
  for (const auto& op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") g.opset = op.version();
  if (g.opset == 0)
    EMBER_THROW(FormatError, source, ": no opset of the default ONNX domain is imported");
  if (!model.has_graph()) EMBER_THROW(FormatError, source, ": the model has no graph");
  const auto& graph = model.graph();
  for (const auto& init : graph.initializer()) {
    const std::string what = "initializer '" + init.name() + "'";
    if (init.name().empty()) EMBER_THROW(FormatError, source, ": an initializer has no name");
    if (!g.initializers.emplace(init.name(), tensor_from_proto(init, model_dir, what)).second)
      EMBER_THROW(FormatError, what, " is defined twice");
  }
  if (graph.sparse_initializer_size())
    EMBER_THROW(FormatError, source, ": sparse initializers are not supported");
  for (const auto& in : graph.input())
    if (!g.initializers.count(in.name())) g.inputs.push_back(value_info(in));
  for (const auto& out : graph.output()) g.outputs.push_back(value_info(out));
  int index = 0;
  for (const auto& n : graph.node()) {
    Node node;
    node.op_type = n.op_type();
    node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    node.name = n.name().empty() ? n.op_type() + " #" + std::to_string(index) : n.name();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute())
      node.attrs[a.name()] = attr_from_proto(a, model_dir, "node '" + node.name + "'");
    g.nodes.push_back(std::move(node));
    ++index;
  }
  return g;
}

Tensor read_tensor(const void* data, size_t size, const std::string& source) {
  TP t;
  parse(t, data, size, source);
  return tensor_from_proto(t, "", source);
}

std::string read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) EMBER_THROW(IOError, "cannot open '", path, "'");
  if (!S_ISREG(st.st_mode)) EMBER_THROW(IOError, "'", path, "' is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) EMBER_THROW(IOError, "cannot open '", path, "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int onnx_elem_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return TP::FLOAT;
    case DType::f64: return TP::DOUBLE;
    case DType::f16: return TP::FLOAT16;
    case DType::bf16: return TP::BFLOAT16;
    case DType::i32: return TP::INT32;
    case DType::i64: return TP::INT64;
    case DType::u8: return TP::UINT8;
    case DType::b8: return TP::BOOL;
  }
  return TP::UNDEFINED;
}

std::string onnx_type_name(int elem_type) {
  return TP::DataType_IsValid(elem_type)
             ? TP::DataType_Name(static_cast<TP::DataType>(elem_type))
             : "unknown type " + std::to_string(elem_type);
}

}  // namespace ember::onnx
