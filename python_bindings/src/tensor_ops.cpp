// ember.<op> for indexing, sorting, scans, reordering, factories and the added maths, with
// PyTorch's argument names. Each binds a function of the autograd API (or of ops/ where nothing
// is differentiable). The Python layer (ember/_ops.py) adds the Tensor methods, the named-tuple
// results and the in-place `op_` forms.
#include "common.h"
#include "runtime/trace.h"

namespace ember::py {
namespace {

std::optional<int64_t> opt_dim(const pb::object& dim) {
  if (dim.is_none()) return std::nullopt;
  return dim.cast<int64_t>();
}

std::optional<DType> opt_dtype(const pb::object& dtype) {
  if (dtype.is_none()) return std::nullopt;
  return dtype_arg(dtype, kFloat32);
}

// An int or a sequence of ints (dims, shifts, repeats).
std::vector<int64_t> int_list(const pb::handle& obj) {
  if (pb::isinstance<pb::int_>(obj)) return {obj.cast<int64_t>()};
  return obj.cast<std::vector<int64_t>>();
}

Tensor tensor_or_scalar(const pb::handle& v, const Tensor& like) {
  Tensor t = as_tensor_like(v, like);
  return t.device() == like.device() ? t : t.to(like.device());
}

pb::tuple pair(const Tensor& a, const Tensor& b) {
  return pb::make_tuple(a, b);
}

}  // namespace

void init_tensor_ops(pb::module_& m) {
  using pb::arg;
  auto none = pb::none();
  // --- indexing ---------------------------------------------------------------------------
  m.def("gather", [](const Tensor& x, int64_t dim, const Tensor& index) {
    return gather(x, dim, index);
  }, arg("input"), arg("dim"), arg("index"));
  m.def("index_select", [](const Tensor& x, int64_t dim, const Tensor& index) {
    return index_select(x, dim, index);
  }, arg("input"), arg("dim"), arg("index"));
  m.def("take_along_dim", [](const Tensor& x, const Tensor& indices, const pb::object& dim) {
    return take_along_dim(x, indices, opt_dim(dim));
  }, arg("input"), arg("indices"), arg("dim") = none);
  m.def("masked_select", [](const Tensor& x, const Tensor& mask) { return masked_select(x, mask); },
        arg("input"), arg("mask"));
  m.def("masked_fill", [](const Tensor& x, const Tensor& mask, const pb::object& value) {
    return masked_fill(x, mask, tensor_or_scalar(value, x));
  }, arg("input"), arg("mask"), arg("value"));
  m.def("scatter", [](const Tensor& x, int64_t dim, const Tensor& index, const pb::object& src) {
    if (pb::isinstance<Tensor>(src)) return scatter(x, dim, index, src.cast<Tensor>());
    return scatter(x, dim, index, src.cast<double>());
  }, arg("input"), arg("dim"), arg("index"), arg("src"));
  m.def("scatter_add", [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
    return scatter_add(x, dim, index, src);
  }, arg("input"), arg("dim"), arg("index"), arg("src"));
  m.def("index_add", [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                        double alpha) { return index_add(x, dim, index, src, alpha); },
        arg("input"), arg("dim"), arg("index"), arg("source"), pb::kw_only(), arg("alpha") = 1.0);
  m.def("index_put", [](const Tensor& x, const pb::tuple& indices, const Tensor& values,
                        bool accumulate) {
    return index_put(x, index_items(indices, x.device()), values, accumulate);
  }, arg("input"), arg("indices"), arg("values"), arg("accumulate") = false);
  m.def("_index_put_", [](Tensor& x, const pb::tuple& indices, const Tensor& values,
                          bool accumulate) -> Tensor& {
    return index_put_(x, index_items(indices, x.device()), values, accumulate);
  }, pb::return_value_policy::reference_internal);
  // Writes into x with no autograd record, for the in-place methods where autograd has nothing
  // to record (ember/_ops.py); they check their arguments as the recorded forms do.
  m.def("_scatter_direct_", [](Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                               bool add) { ops::scatter_(x, dim, index, src, add); });
  m.def("_index_add_direct_", [](Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
    ops::index_add_(x, dim, index, src);
  });
  m.def("embedding", [](const Tensor& input, const Tensor& weight, const pb::object& padding_idx,
                        bool scale_grad_by_freq) {
    return embedding(input, weight, opt_dim(padding_idx), scale_grad_by_freq);
  }, arg("input"), arg("weight"), arg("padding_idx") = none, arg("scale_grad_by_freq") = false);
  m.def("_embedding_renorm_", [](Tensor& weight, const Tensor& input, double max_norm,
                                 double norm_type) -> Tensor& {
    return nn::embedding_renorm_(weight, input, max_norm, norm_type);
  }, pb::return_value_policy::reference_internal);
  m.def("one_hot", [](const Tensor& x, int64_t num_classes) { return one_hot(x, num_classes); },
        arg("tensor"), arg("num_classes") = -1);
  m.def("nonzero", [](const Tensor& x, bool as_tuple) -> pb::object {
    const Tensor nz = ops::nonzero(x);
    if (!as_tuple) return pb::cast(nz);
    pb::list out;
    if (x.dim() == 0) out.append(nz.reshape({nz.size(0)}));
    for (int64_t d = 0; d < x.dim(); ++d) out.append(nz.select(1, d).contiguous());
    return pb::tuple(out);
  }, arg("input"), pb::kw_only(), arg("as_tuple") = false);

  // --- sorting and scans -----------------------------------------------------------------
  m.def("_sort", [](const Tensor& x, int64_t dim, bool descending) {
    SortResult r = sort(x, dim, descending);
    return pair(r.values, r.indices);
  });
  m.def("argsort", [](const Tensor& x, int64_t dim, bool descending, bool) {
    return argsort(x, dim, descending);
  }, arg("input"), arg("dim") = -1, arg("descending") = false, pb::kw_only(),
        arg("stable") = false);
  m.def("_topk", [](const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
    SortResult r = topk(x, k, dim, largest, sorted);
    return pair(r.values, r.indices);
  });
  m.def("_kthvalue", [](const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
    SortResult r = kthvalue(x, k, dim, keepdim);
    return pair(r.values, r.indices);
  });
  m.def("_unique", [](const Tensor& x, bool inverse, bool counts, const pb::object& dim) {
    UniqueResult r = unique(x, inverse, counts, opt_dim(dim));
    return pb::make_tuple(r.values, r.inverse, r.counts);
  });
  m.def("cumsum", [](const Tensor& x, int64_t dim, const pb::object& dtype) {
    return cumsum(x, dim, opt_dtype(dtype));
  }, arg("input"), arg("dim"), pb::kw_only(), arg("dtype") = none);
  m.def("cumprod", [](const Tensor& x, int64_t dim, const pb::object& dtype) {
    return cumprod(x, dim, opt_dtype(dtype));
  }, arg("input"), arg("dim"), pb::kw_only(), arg("dtype") = none);

  // --- reordering and shapes ----------------------------------------------------------------
  m.def("flip", [](const Tensor& x, const pb::object& dims) { return flip(x, int_list(dims)); },
        arg("input"), arg("dims"));
  m.def("roll", [](const Tensor& x, const pb::object& shifts, const pb::object& dims) {
    return roll(x, int_list(shifts), dims.is_none() ? std::vector<int64_t>{} : int_list(dims));
  }, arg("input"), arg("shifts"), arg("dims") = none);
  m.def("narrow", [](const Tensor& x, int64_t dim, int64_t start, int64_t length) {
    return narrow(x, dim, start, length);
  }, arg("input"), arg("dim"), arg("start"), arg("length"));
  m.def("split", [](const Tensor& x, const pb::object& size, int64_t dim) {
    if (pb::isinstance<pb::int_>(size)) return split(x, size.cast<int64_t>(), dim);
    return split(x, size.cast<std::vector<int64_t>>(), dim);
  }, arg("tensor"), arg("split_size_or_sections"), arg("dim") = 0);
  m.def("chunk", [](const Tensor& x, int64_t chunks, int64_t dim) { return chunk(x, chunks, dim); },
        arg("input"), arg("chunks"), arg("dim") = 0);
  m.def("unbind", [](const Tensor& x, int64_t dim) { return unbind(x, dim); }, arg("input"),
        arg("dim") = 0);
  m.def("movedim", [](const Tensor& x, const pb::object& src, const pb::object& dst) {
    return movedim(x, int_list(src), int_list(dst));
  }, arg("input"), arg("source"), arg("destination"));
  m.def("_repeat", [](const Tensor& x, const std::vector<int64_t>& sizes) {
    return repeat(x, sizes);
  });
  m.def("tile", [](const Tensor& x, const pb::object& reps) { return tile(x, int_list(reps)); },
        arg("input"), arg("dims"));
  m.def("repeat_interleave", [](const Tensor& x, const pb::object& repeats,
                                const pb::object& dim) -> Tensor {
    if (repeats.is_none()) return repeat_interleave(x);  // torch.repeat_interleave(repeats)
    if (pb::isinstance<Tensor>(repeats)) return repeat_interleave(x, repeats.cast<Tensor>(), opt_dim(dim));
    return repeat_interleave(x, repeats.cast<int64_t>(), opt_dim(dim));
  }, arg("input"), arg("repeats") = none, arg("dim") = none);
  m.def("tril", [](const Tensor& x, int64_t k) { return tril(x, k); }, arg("input"),
        arg("diagonal") = 0);
  m.def("triu", [](const Tensor& x, int64_t k) { return triu(x, k); }, arg("input"),
        arg("diagonal") = 0);

  // --- factories ------------------------------------------------------------------------
  // generator: an ember.Generator's C++ generator, or None for the default one.
  m.def("_randint", [](int64_t low, int64_t high, const pb::object& size, const pb::object& dtype,
                       const pb::object& device, const std::shared_ptr<Generator>& gen) {
    return ops::randint(low, high, shape_of(size), {dtype_arg(dtype, kInt64), device_arg(device)},
                        gen.get());
  });
  m.def("_randperm", [](int64_t n, const pb::object& dtype, const pb::object& device,
                        const std::shared_ptr<Generator>& gen) {
    return ops::randperm(n, {dtype_arg(dtype, kInt64), device_arg(device)}, gen.get());
  });
  m.def("_linspace", [](double start, double end, int64_t steps, const pb::object& dtype,
                        const pb::object& device) {
    return ops::linspace(start, end, steps, {dtype_arg(dtype, kFloat32), device_arg(device)});
  });
  m.def("_logspace", [](double start, double end, int64_t steps, double base,
                        const pb::object& dtype, const pb::object& device) {
    return ops::logspace(start, end, steps, base, {dtype_arg(dtype, kFloat32), device_arg(device)});
  });
  m.def("_eye", [](int64_t n, const pb::object& m, const pb::object& dtype,
                   const pb::object& device) {
    return ops::eye(n, m.is_none() ? -1 : m.cast<int64_t>(),
                    {dtype_arg(dtype, kFloat32), device_arg(device)});
  });

  // --- maths ----------------------------------------------------------------------------
  m.def("sign", [](const Tensor& x) { return sign(x); }, arg("input"));
  m.def("floor", [](const Tensor& x) { return floor(x); }, arg("input"));
  m.def("ceil", [](const Tensor& x) { return ceil(x); }, arg("input"));
  m.def("round", [](const Tensor& x, int64_t decimals) { return round(x, decimals); },
        arg("input"), pb::kw_only(), arg("decimals") = 0);
  m.def("trunc", [](const Tensor& x) { return trunc(x); }, arg("input"));
  m.def("sin", [](const Tensor& x) { return sin(x); }, arg("input"));
  m.def("cos", [](const Tensor& x) { return cos(x); }, arg("input"));
  m.def("erf", [](const Tensor& x) { return erf(x); }, arg("input"));
  m.def("fmod", [](const Tensor& a, const pb::object& b) { return fmod(a, tensor_or_scalar(b, a)); },
        arg("input"), arg("other"));
  m.def("remainder", [](const pb::object& a, const pb::object& b) {
    const Tensor& like = pb::isinstance<Tensor>(a) ? a.cast<const Tensor&>() : b.cast<const Tensor&>();
    return remainder(tensor_or_scalar(a, like), tensor_or_scalar(b, like));
  }, arg("input"), arg("other"));
  m.def("lerp", [](const Tensor& a, const Tensor& b, const pb::object& w) {
    return lerp(a, b, tensor_or_scalar(w, a));
  }, arg("input"), arg("end"), arg("weight"));
  m.def("isnan", [](const Tensor& x) { return isnan(x); }, arg("input"));
  m.def("isinf", [](const Tensor& x) { return isinf(x); }, arg("input"));
  m.def("isfinite", [](const Tensor& x) { return isfinite(x); }, arg("input"));
  m.def("logical_not", [](const Tensor& x) { return logical_not(x); }, arg("input"));
  m.def("any", [](const Tensor& x, const pb::object& dim, bool keepdim) {
    return any(x, dims_arg(dim), keepdim);
  }, arg("input"), arg("dim") = none, arg("keepdim") = false);
  m.def("all", [](const Tensor& x, const pb::object& dim, bool keepdim) {
    return all(x, dims_arg(dim), keepdim);
  }, arg("input"), arg("dim") = none, arg("keepdim") = false);
  m.def("logsumexp", [](const Tensor& x, const pb::object& dim, bool keepdim) {
    return logsumexp(x, dims_arg(dim), keepdim);
  }, arg("input"), arg("dim"), arg("keepdim") = false);
  m.def("_vector_norm", [](const Tensor& x, double ord, const pb::object& dim, bool keepdim) {
    return vector_norm(x, ord, dims_arg(dim), keepdim);
  });
  m.def("outer", [](const Tensor& a, const Tensor& b) { return outer(a, b); }, arg("input"),
        arg("vec2"));
  m.def("addmm", [](const Tensor& in, const Tensor& a, const Tensor& b, double beta, double alpha) {
    return addmm(in, a, b, beta, alpha);
  }, arg("input"), arg("mat1"), arg("mat2"), pb::kw_only(), arg("beta") = 1.0, arg("alpha") = 1.0);
  m.def("baddbmm", [](const Tensor& in, const Tensor& a, const Tensor& b, double beta,
                      double alpha) { return baddbmm(in, a, b, beta, alpha); },
        arg("input"), arg("batch1"), arg("batch2"), pb::kw_only(), arg("beta") = 1.0,
        arg("alpha") = 1.0);
  m.def("_einsum", [](const std::string& eq, const std::vector<Tensor>& operands) {
    return einsum(eq, operands);
  });
  // The op trace (Note [Op trace] in runtime/trace.h).
  m.def("_trace_start", [](const std::string& target) { trace::start(target); });
  m.def("_trace_stop", [] { return trace::stop(); });
  m.def("_trace_enabled", [] { return trace::enabled(); });
  // In-place ops: f(snapshot) gives the new values (Note [In-place ops]).
  m.def("_apply_inplace", [](Tensor& x, const std::string& op, const std::vector<Tensor>& others,
                             const pb::function& f) -> Tensor& {
    return apply_inplace(op.c_str(), x, others,
                         [&](const Tensor& s) { return f(s).cast<Tensor>(); });
  }, pb::return_value_policy::reference_internal);
}

}  // namespace ember::py
