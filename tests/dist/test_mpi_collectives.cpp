// The collectives of the mpi backend (dist/mpi_group.cpp), run under mpirun with 2 and 3 ranks:
// every dtype, every reduction, odd and empty sizes, emu tensors through host copies, against a
// float64 reference each rank computes from every rank's inputs (dist_test_util.h, rank_values).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "dist_test_util.h"

using namespace ember;
using namespace ember::dist;
using ember::test::group;
using ember::test::rank_values;

namespace {

const DType kAll[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
const int64_t kSizes[] = {0, 1, 7, 1000, 4099};

// Rank r's input for a case, already in the dtype's range (integers small enough that a
// product of 3 ranks fits in uint8; bools half true).
std::vector<double> inputs(DType dt, int rank, int tag, int64_t n, ReduceOp op) {
  std::vector<double> v = rank_values(rank, tag, n, -3.0, 3.0);
  for (double& x : v) {
    if (dt == kBool)
      x = x > 0 ? 1.0 : 0.0;
    else if (dt == kUInt8)
      x = op == ReduceOp::product ? std::round(std::fabs(x) / 1.6) + 1
                                  : std::round(std::fabs(x) * 10);
    else if (is_integral(dt))
      x = op == ReduceOp::product ? std::round(x / 1.6) : std::round(x * 10);
  }
  return v;
}

// The values a tensor of dtype `dt` made from `v` holds (halves rounded), as float64.
std::vector<double> held(const std::vector<double>& v, DType dt) {
  return from_vector<double>(v).to(dt).to(kFloat64).to_vector<double>();
}

double combine(ReduceOp op, DType dt, double a, double b) {
  if (dt == kBool)
    return op == ReduceOp::sum || op == ReduceOp::max ? double(a || b) : double(a && b);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return a + b;
    case ReduceOp::product:
      return a * b;
    case ReduceOp::min:
      return std::min(a, b);
    case ReduceOp::max:
      return std::max(a, b);
  }
  return 0;
}

double tolerance(DType dt, double magnitude) {
  switch (dt) {
    case DType::f32:
      return 1e-6 * std::max(1.0, magnitude);
    case DType::f64:
      return 1e-13 * std::max(1.0, magnitude);
    case DType::f16:
      return std::ldexp(1.0, -10) * std::max(1.0, magnitude);  // one rounding
    case DType::bf16:
      return std::ldexp(1.0, -7) * std::max(1.0, magnitude);
    default:
      return 0.0;  // integers and bools are exact
  }
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, DType dt) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > tolerance(dt, std::fabs(want[i]))) {
      FAIL_CHECK("element ", i, ": got ", got[i], ", want ", want[i], " (", dt, ")");
      return;
    }
  }
}

Tensor make(const std::vector<double>& v, DType dt, Device dev = kCPU) {
  return from_vector<double>(v).to(dt).to(dev);
}

}  // namespace

TEST_CASE("all_reduce: every dtype and reduction, odd and empty sizes") {
  ProcessGroup& g = group();
  std::printf("rank %d of %d: all_reduce cases\n", g.rank(), g.size());
  int tag = 0;
  for (DType dt : kAll)
    for (ReduceOp op :
         {ReduceOp::sum, ReduceOp::avg, ReduceOp::product, ReduceOp::min, ReduceOp::max})
      for (int64_t n : kSizes) {
        ++tag;
        CAPTURE(dt);
        CAPTURE(reduce_op_name(op));
        CAPTURE(n);
        Tensor t = make(inputs(dt, g.rank(), tag, n, op), dt);
        if (op == ReduceOp::avg && !is_floating(dt)) {
          CHECK_THROWS_WITH_AS(g.all_reduce(t, op), doctest::Contains("AVG needs a floating"),
                               DTypeError);
          continue;
        }
        WorkPtr w = g.all_reduce(t, op);
        w->wait();
        CHECK(w->is_completed());
        std::vector<double> want = held(inputs(dt, 0, tag, n, op), dt);
        for (int r = 1; r < g.size(); ++r) {
          const std::vector<double> other = held(inputs(dt, r, tag, n, op), dt);
          for (size_t i = 0; i < want.size(); ++i) want[i] = combine(op, dt, want[i], other[i]);
        }
        if (op == ReduceOp::avg)
          for (double& x : want) x /= g.size();
        check_close(t.to(kFloat64).to_vector<double>(), want, dt);
        CHECK(t.dtype() == dt);
        CHECK(t.shape() == Shape{n});
      }
}

TEST_CASE("broadcast from every root, all_gather and reduce_scatter, every dtype") {
  ProcessGroup& g = group();
  int tag = 5000;
  for (DType dt : kAll)
    for (int64_t n : kSizes) {
      CAPTURE(dt);
      CAPTURE(n);
      for (int root = 0; root < g.size(); ++root) {
        ++tag;
        Tensor t = make(inputs(dt, g.rank(), tag, n, ReduceOp::sum), dt);
        g.broadcast(t, root)->wait();
        check_close(t.to(kFloat64).to_vector<double>(),
                    held(inputs(dt, root, tag, n, ReduceOp::sum), dt), dt);
      }
      ++tag;
      // A 2-D input: all_gather keeps the shape of each part.
      const int64_t rows = n > 1 ? 2 : 1;
      const Shape shape{rows, n / rows};
      const int64_t m = rows * (n / rows);
      Tensor in = make(inputs(dt, g.rank(), tag, m, ReduceOp::sum), dt).view(shape);
      std::vector<Tensor> out;
      for (int r = 0; r < g.size(); ++r) out.push_back(zeros(shape, dt));
      g.all_gather(out, in)->wait();
      for (int r = 0; r < g.size(); ++r) {
        CHECK(out[r].shape() == shape);
        check_close(out[r].to(kFloat64).reshape({m}).to_vector<double>(),
                    held(inputs(dt, r, tag, m, ReduceOp::sum), dt), dt);
      }
      ++tag;
      // reduce_scatter: rank r's output is the sum over ranks of their inputs[r].
      std::vector<Tensor> parts;
      for (int r = 0; r < g.size(); ++r)
        parts.push_back(make(inputs(dt, g.rank(), tag * 10 + r, n, ReduceOp::sum), dt));
      Tensor mine = zeros({n}, dt);
      const ReduceOp op = is_floating(dt) ? ReduceOp::avg : ReduceOp::sum;
      g.reduce_scatter(mine, parts, op)->wait();
      std::vector<double> want = held(inputs(dt, 0, tag * 10 + g.rank(), n, ReduceOp::sum), dt);
      for (int r = 1; r < g.size(); ++r) {
        const auto other = held(inputs(dt, r, tag * 10 + g.rank(), n, ReduceOp::sum), dt);
        for (size_t i = 0; i < want.size(); ++i) want[i] = combine(op, dt, want[i], other[i]);
      }
      if (op == ReduceOp::avg)
        for (double& x : want) x /= g.size();
      check_close(mine.to(kFloat64).to_vector<double>(), want, dt);
    }
  g.barrier()->wait();
}

TEST_CASE("emu tensors travel as host copies and come back on emu") {
  ProcessGroup& g = group();
  const Device emu(DeviceType::EMU, 0);
  for (DType dt : {kFloat32, kFloat16, kInt64}) {
    CAPTURE(dt);
    Tensor t = make(inputs(dt, g.rank(), 9001, 37, ReduceOp::sum), dt, emu);
    g.all_reduce(t, ReduceOp::sum)->wait();
    CHECK(t.device() == emu);
    std::vector<double> want(37, 0.0);
    for (int r = 0; r < g.size(); ++r) {
      const auto v = held(inputs(dt, r, 9001, 37, ReduceOp::sum), dt);
      for (size_t i = 0; i < want.size(); ++i) want[i] += v[i];
    }
    check_close(t.to(kCPU).to(kFloat64).to_vector<double>(), want, dt);
    Tensor b = make(inputs(dt, g.rank(), 9002, 5, ReduceOp::sum), dt, emu);
    g.broadcast(b, g.size() - 1)->wait();
    check_close(b.to(kCPU).to(kFloat64).to_vector<double>(),
                held(inputs(dt, g.size() - 1, 9002, 5, ReduceOp::sum), dt), dt);
    std::vector<Tensor> out;
    for (int r = 0; r < g.size(); ++r) out.push_back(zeros({5}, {dt, emu}));
    g.all_gather(out, b)->wait();
    for (int r = 0; r < g.size(); ++r) CHECK(out[r].device() == emu);
  }
}

TEST_CASE("bad arguments are refused on every rank before anything is sent") {
  ProcessGroup& g = group();
  Tensor m = zeros({4, 6});
  CHECK_THROWS_WITH_AS(g.all_reduce(m.transpose(0, 1)), doctest::Contains("contiguous"),
                       ValueError);
  CHECK_THROWS_WITH_AS(g.broadcast(m, g.size()), doctest::Contains("root"), ValueError);
  std::vector<Tensor> few{zeros({4, 6})};
  CHECK_THROWS_WITH_AS(g.all_gather(few, m), doctest::Contains("one per rank"), ValueError);
  std::vector<Tensor> wrong;
  for (int r = 0; r < g.size(); ++r) wrong.push_back(zeros({4, 5}));
  CHECK_THROWS_AS(g.all_gather(wrong, m), ShapeError);
  std::vector<Tensor> ints;
  for (int r = 0; r < g.size(); ++r) ints.push_back(zeros({4, 6}, kInt32));
  CHECK_THROWS_AS(g.reduce_scatter(m, ints), DTypeError);
  CHECK_THROWS_AS(g.all_reduce(Tensor()), ValueError);
  // The group still works after refusals.
  Tensor one = full({1}, 1.0);
  g.all_reduce(one)->wait();
  CHECK(one.item() == g.size());
}

TEST_CASE("many collectives in flight complete in issue order; poll() moves them along") {
  ProcessGroup& g = group();
  std::vector<Tensor> ts;
  std::vector<WorkPtr> ws;
  for (int i = 0; i < 20; ++i) {
    ts.push_back(full({257 * (i + 1)}, static_cast<double>(g.rank() + i)));
    ws.push_back(g.all_reduce(ts.back()));
    g.poll();
  }
  for (int i = 19; i >= 0; --i) ws[i]->wait();  // waiting out of order is fine
  const double ranks = g.size();
  for (int i = 0; i < 20; ++i) {
    const double want = ranks * (ranks - 1) / 2 + ranks * i;
    CHECK(ts[i].to_vector<double>().front() == want);
    CHECK(ts[i].to_vector<double>().back() == want);
  }
}
