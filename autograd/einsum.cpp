// einsum (autograd/math.h): the equation is parsed into one label list per operand; repeated
// labels within an operand take its diagonal, labels no one else needs are summed at once, and
// the operands are contracted left to right, each pair through one batched matrix product of
// permuted, merged dims: [batch, left, contracted] x [batch, contracted, right]. Everything is
// built from differentiable functions, so the gradient needs no code of its own.
#include <algorithm>
#include <cctype>

#include "autograd/function.h"
#include "autograd/matmul.h"
#include "autograd/math.h"
#include "autograd/reduce.h"
#include "autograd/shape.h"

namespace ember {
namespace {

// Labels: 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51 (ASCII order); the broadcast dims of "..."
// -> 52, 53, ... aligned from the right.
constexpr int kEllipsisLabel = 52;
using Labels = std::vector<int>;

struct Operand {
  Tensor t;
  Labels labels;  // one per dim of t
};

int letter_label(char c) {
  return std::isupper(static_cast<unsigned char>(c)) ? c - 'A' : 26 + (c - 'a');
}

// The labels of one term ("ij", "...k", "b...") for a tensor of `dims` dims; `ellipsis` is the
// number of broadcast dims of the whole equation.
Labels parse_term(const std::string& eq, const std::string& term, int64_t dims, int ellipsis,
                  const char* which) {
  Labels letters_before, letters_after;
  bool seen = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      EMBER_CHECK_VALUE(!seen, "einsum: '", eq, "': more than one '...' in ", which);
      seen = true;
      i += 2;
      continue;
    }
    EMBER_CHECK_VALUE(std::isalpha(static_cast<unsigned char>(term[i])), "einsum: '", eq,
                      "': invalid subscript '", term[i], "' in ", which,
                      " (letters, '...', ',' and '->' only)");
    (seen ? letters_after : letters_before).push_back(letter_label(term[i]));
  }
  const int64_t letters = static_cast<int64_t>(letters_before.size() + letters_after.size());
  if (dims < 0) dims = letters + (seen ? ellipsis : 0);  // the output: as many dims as it names
  EMBER_CHECK_VALUE(seen ? letters <= dims : letters == dims, "einsum: '", eq, "': ", which,
                    " names ", letters, " dims", seen ? " and '...'" : "",
                    " for a tensor of ", dims, " dims");
  Labels out = letters_before;
  const int64_t e = seen ? dims - letters : 0;
  for (int64_t j = 0; j < e; ++j) out.push_back(kEllipsisLabel + ellipsis - static_cast<int>(e) + static_cast<int>(j));
  out.insert(out.end(), letters_after.begin(), letters_after.end());
  return out;
}

// A view of o.t with one dim per distinct label (a repeated label takes the diagonal).
Operand diagonal(const Operand& o) {
  Labels uniq;
  for (int l : o.labels)
    if (std::find(uniq.begin(), uniq.end(), l) == uniq.end()) uniq.push_back(l);
  if (uniq.size() == o.labels.size()) return o;
  const Labels labels = o.labels;
  Shape shape;
  for (int l : uniq) shape.push_back(o.t.size(std::find(labels.begin(), labels.end(), l) - labels.begin()));
  Tensor v = record_view("DiagonalBackward", o.t, [labels, uniq, shape](const Tensor& t) {
    Shape strides(uniq.size(), 0);
    for (size_t d = 0; d < labels.size(); ++d)
      strides[std::find(uniq.begin(), uniq.end(), labels[d]) - uniq.begin()] += t.stride(d);
    return t.as_strided(shape, strides, t.offset());
  });
  return {v, uniq};
}

bool has(const Labels& ls, int l) {
  return std::find(ls.begin(), ls.end(), l) != ls.end();
}

// o with the dims of `drop` summed out.
Operand sum_out(const Operand& o, const Labels& drop) {
  std::vector<int64_t> dims;
  Labels kept;
  for (size_t d = 0; d < o.labels.size(); ++d) {
    if (has(drop, o.labels[d]))
      dims.push_back(static_cast<int64_t>(d));
    else
      kept.push_back(o.labels[d]);
  }
  if (dims.empty()) return o;
  return {sum(o.t, dims), kept};
}

// o's dims in the order of `order`, each expanded to its label's size, merged into groups of
// the given lengths.
Tensor arrange(const Operand& o, const Labels& order, const std::vector<int64_t>& size_of,
               const std::vector<size_t>& groups) {
  std::vector<int64_t> perm;
  Shape full;
  for (int l : order) {
    perm.push_back(std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin());
    full.push_back(size_of[l]);
  }
  Tensor t = expand(permute(o.t, perm), full);
  Shape merged;
  size_t at = 0;
  for (size_t g : groups) {
    int64_t n = 1;
    for (size_t k = 0; k < g; ++k) n *= full[at++];
    merged.push_back(n);
  }
  return reshape(t, merged);
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back().push_back(c);
  }
  EMBER_CHECK_VALUE(terms.size() == operands.size(), "einsum: '", equation, "' has ", terms.size(),
                    " operand terms for ", operands.size(), " tensors");
  // The broadcast dims of "...": as many as the operand that has most.
  int ellipsis = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].find("...") == std::string::npos) continue;
    int64_t letters = 0;
    for (char c : terms[i]) letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
    ellipsis = std::max<int>(ellipsis, static_cast<int>(operands[i].dim() - letters));
  }
  std::vector<Operand> ops;
  std::vector<int64_t> size_of(kEllipsisLabel + ellipsis, 1);
  std::vector<int> count(kEllipsisLabel + ellipsis, 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string which = "operand " + std::to_string(i);
    Operand o{operands[i], parse_term(eq, terms[i], operands[i].dim(), ellipsis, which.c_str())};
    for (size_t d = 0; d < o.labels.size(); ++d) {
      const int l = o.labels[d];
      const int64_t n = o.t.size(static_cast<int64_t>(d));
      EMBER_CHECK_VALUE(count[l] == 0 || n == size_of[l] || n == 1 || size_of[l] == 1, "einsum: '",
                        equation, "': ", which, " has size ", n, " for a subscript of size ",
                        size_of[l], " elsewhere");
      if (count[l] == 0 || size_of[l] == 1) size_of[l] = n;
      ++count[l];
    }
    ops.push_back(diagonal(o));
  }
  // The output's labels: given, or the broadcast dims then the letters seen once, in order.
  Labels out;
  if (arrow != std::string::npos) {
    out = parse_term(eq, eq.substr(arrow + 2), -1, ellipsis, "the output");
    for (size_t k = 0; k < out.size(); ++k) {
      EMBER_CHECK_VALUE(count[out[k]] > 0, "einsum: '", equation,
                        "': the output names a subscript no operand has");
      EMBER_CHECK_VALUE(std::count(out.begin(), out.end(), out[k]) == 1, "einsum: '", equation,
                        "': the output names a subscript twice");
    }
  } else {
    for (int l = kEllipsisLabel; l < kEllipsisLabel + ellipsis; ++l) out.push_back(l);
    for (int l = 0; l < kEllipsisLabel; ++l)
      if (count[l] == 1) out.push_back(l);
  }
  // Labels needed after operand i: in the output or in a later operand.
  auto needed_after = [&](size_t i) {
    Labels need = out;
    for (size_t j = i + 1; j < ops.size(); ++j)
      need.insert(need.end(), ops[j].labels.begin(), ops[j].labels.end());
    return need;
  };
  auto unneeded = [&](const Operand& o, const Labels& need, const Labels& other) {
    Labels drop;
    for (int l : o.labels)
      if (!has(need, l) && !has(other, l)) drop.push_back(l);
    return drop;
  };
  Operand cur = sum_out(ops[0], unneeded(ops[0], needed_after(0), ops.size() > 1 ? ops[1].labels : Labels{}));
  for (size_t i = 1; i < ops.size(); ++i) {
    const Labels need = needed_after(i);
    Operand next = sum_out(ops[i], unneeded(ops[i], need, cur.labels));
    cur = sum_out(cur, unneeded(cur, need, next.labels));
    Labels batch, left, contract, right;
    for (int l : cur.labels) {
      if (!has(next.labels, l))
        left.push_back(l);
      else
        (has(need, l) ? batch : contract).push_back(l);
    }
    for (int l : next.labels)
      if (!has(cur.labels, l)) right.push_back(l);
    Labels lo = batch, ro = batch;
    lo.insert(lo.end(), left.begin(), left.end());
    lo.insert(lo.end(), contract.begin(), contract.end());
    ro.insert(ro.end(), contract.begin(), contract.end());
    ro.insert(ro.end(), right.begin(), right.end());
    const Tensor a = arrange(cur, lo, size_of, {batch.size(), left.size(), contract.size()});
    const Tensor b = arrange(next, ro, size_of, {batch.size(), contract.size(), right.size()});
    Shape result;
    Labels labels = batch;
    labels.insert(labels.end(), left.begin(), left.end());
    labels.insert(labels.end(), right.begin(), right.end());
    for (int l : labels) result.push_back(size_of[l]);
    cur = {reshape(matmul(a, b), result), labels};
  }
  cur = sum_out(cur, unneeded(cur, out, {}));
  std::vector<int64_t> perm;
  for (int l : out) perm.push_back(std::find(cur.labels.begin(), cur.labels.end(), l) - cur.labels.begin());
  Shape full;
  for (int l : out) full.push_back(size_of[l]);
  return expand(permute(cur.t, perm), full);
}

}  // namespace ember
