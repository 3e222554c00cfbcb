// The ONNX node test suite (Debian's libonnx-testdata: each case a model, its inputs and the
// expected outputs) run on one device. Compares with the suite's own tolerances (rtol 1e-3,
// atol 1e-7), prints one line per case run, and with --markdown writes the per-operator table
// of docs/onnx-conformance.md. With --expected-failures FILE the exit status is 0 exactly when
// the cases that fail are the ones the file lists (so the list cannot go stale).
//
//   onnx_conformance --device emu --data /usr/share/libonnx-testdata/data/node
#include <CLI/CLI.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "autograd/copy.h"
#include "onnx/graph.h"
#include "onnx/model.h"
#include "onnx/op_registry.h"
#include "runtime/error.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

struct Case {
  std::string name;
  std::vector<std::string> ops;  // the op types of its nodes
  bool supported = true;         // every op type has an Ember operator
  bool passed = false;
  std::string reason;
};

std::vector<Tensor> read_set(const fs::path& dir, const std::string& prefix) {
  std::vector<Tensor> out;
  for (int k = 0;; ++k) {
    const fs::path p = dir / (prefix + "_" + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    const std::string bytes = onnx::read_file(p.string());
    out.push_back(onnx::read_tensor(bytes.data(), bytes.size(), p.string()));
  }
  return out;
}

// "" when `got` matches `want` within rtol 1e-3, atol 1e-7 (exactly for integers and bools).
std::string compare(const Tensor& got, const Tensor& want, size_t k) {
  const std::string which = "output " + std::to_string(k);
  if (got.dtype() != want.dtype())
    return which + ": dtype " + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  if (got.shape() != want.shape())
    return which + ": shape " + detail::str_cat(got.shape()) + ", expected " +
           detail::str_cat(want.shape());
  const auto g = to(got, kCPU, kFloat64).to_vector<double>();
  const auto w = to(want, kCPU, kFloat64).to_vector<double>();
  const bool exact = !(want.dtype() == kFloat32 || want.dtype() == kFloat64 ||
                       want.dtype() == kFloat16 || want.dtype() == kBFloat16);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    const double tol = exact ? 0.0 : 1e-7 + 1e-3 * std::fabs(w[i]);
    if (!(std::fabs(g[i] - w[i]) <= tol) && !(g[i] == w[i]))
      return which + ": element " + std::to_string(i) + " is " + std::to_string(g[i]) +
             ", expected " + std::to_string(w[i]);
  }
  return "";
}

void run_case(Case& c, const fs::path& dir, Device device) {
  try {
    onnx::LoadOptions opts;
    opts.device = device;
    const auto model = onnx::load((dir / "model.onnx").string(), opts);
    for (const auto& set : fs::directory_iterator(dir)) {
      if (!set.is_directory()) continue;
      const auto inputs = read_set(set.path(), "input");
      const auto expected = read_set(set.path(), "output");
      const auto outputs = model.run(inputs);
      if (outputs.size() != expected.size()) {
        c.reason = std::to_string(outputs.size()) + " outputs, expected " + std::to_string(expected.size());
        return;
      }
      for (size_t k = 0; k < outputs.size(); ++k) {
        c.reason = compare(outputs[k], expected[k], k);
        if (!c.reason.empty()) return;
      }
    }
    c.passed = true;
  } catch (const Error& e) {
    c.reason = e.what();
  }
}

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  // The first reason of a multi-line "cannot run this model" list says more than its header.
  if (line.find("cannot run this model") != std::string::npos && s.find('\n') != std::string::npos) {
    line = s.substr(s.find('\n') + 1);
    line = line.substr(0, line.find('\n'));
    line.erase(0, line.find_first_not_of(' '));
  }
  for (auto& ch : line)
    if (ch == '|') ch = '/';
  return line.size() > 160 ? line.substr(0, 157) + "..." : line;
}

// The reason a case fails: the one expected_failures.txt gives, else the error's first line.
std::string reason_of(const Case& c, const std::map<std::string, std::string>& known) {
  auto it = known.find(c.name);
  return it != known.end() && !it->second.empty() ? it->second : first_line(c.reason);
}

void write_markdown(const std::string& path, const std::vector<Case>& cases, const std::string& device,
                    const std::string& data, const std::map<std::string, std::string>& known) {
  std::map<std::string, std::vector<const Case*>> by_op;
  std::map<std::string, int> unsupported_ops;
  int multi = 0, multi_passed = 0, run = 0, passed = 0;
  for (const auto& c : cases) {
    if (!c.supported) {
      for (const auto& op : c.ops)
        if (!onnx::find_op(op)) ++unsupported_ops[op];
      continue;
    }
    ++run;
    passed += c.passed;
    if (std::set<std::string>(c.ops.begin(), c.ops.end()).size() == 1) by_op[c.ops[0]].push_back(&c);
    else {
      ++multi;
      multi_passed += c.passed;
    }
  }
  std::ofstream md(path);
  md << "# ONNX conformance\n\n"
     << "Generated by `onnx_conformance --device " << device << " --markdown` from the ONNX node "
     << "test suite that Debian ships (`libonnx-testdata`, ONNX 1.12, `" << data << "`); "
     << "tolerances as the suite's runner uses them (rtol 1e-3, atol 1e-7; integers and bools "
     << "exactly). ctest runs the suite on `cpu` and on `emu` (`onnx.conformance.*`); "
     << "`tests/onnx/expected_failures.txt` lists the cases known to fail, with the reason.\n\n"
     << "Cases of the operators Ember supports: **" << passed << " of " << run << " pass** on `"
     << device << "`.\n\n"
     << "| operator | cases | passed | failed (first reason) |\n|---|---|---|---|\n";
  for (const auto& [op, list] : by_op) {
    int ok = 0;
    std::vector<std::string> failed;
    for (const Case* c : list) {
      ok += c->passed;
      if (!c->passed) failed.push_back("`" + c->name + "`: " + reason_of(*c, known));
    }
    md << "| " << op << " | " << list.size() << " | " << ok << " | ";
    for (size_t i = 0; i < failed.size(); ++i) md << (i ? "<br>" : "") << failed[i];
    md << " |\n";
  }
  md << "| (graphs of several operators: `_expanded` function bodies and others) | " << multi << " | "
     << multi_passed << " | ";
  bool sep = false;
  for (const auto& c : cases)
    if (c.supported && !c.passed && std::set<std::string>(c.ops.begin(), c.ops.end()).size() > 1) {
      md << (sep ? "<br>" : "") << "`" << c.name << "`: " << reason_of(c, known);
      sep = true;
    }
  md << " |\n\n"
     << "Operators of the suite that Ember does not run (cases):\n\n";
  bool first = true;
  for (const auto& [op, n] : unsupported_ops) {
    md << (first ? "" : ", ") << op << " (" << n << ")";
    first = false;
  }
  md << ".\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs the ONNX node test suite on one Ember device."};
  std::string data = "/usr/share/libonnx-testdata/data/node", device_name = "cpu", markdown, expected_file;
  std::string filter;
  app.add_option("--data", data, "the suite's node folder")->check(CLI::ExistingDirectory);
  app.add_option("--device", device_name, "cpu, emu or cuda");
  app.add_option("--markdown", markdown, "write the per-operator table to this file");
  app.add_option("--expected-failures", expected_file, "the cases expected to fail, one per line")
      ->check(CLI::ExistingFile);
  app.add_option("--filter", filter, "run only cases whose name contains this");
  CLI11_PARSE(app, argc, argv);
  Device device;
  try {
    device = Device::parse(device_name);
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(data))
    if (entry.is_directory() && entry.path().filename().string().find(filter) != std::string::npos)
      dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  std::vector<Case> cases;
  for (const auto& dir : dirs) {
    Case c;
    c.name = dir.filename().string();
    try {
      const std::string bytes = onnx::read_file((dir / "model.onnx").string());
      const auto g = onnx::read_model(bytes.data(), bytes.size(), dir.string(), c.name);
      for (const auto& n : g.nodes) {
        c.ops.push_back(n.op_type);
        c.supported = c.supported && n.domain.empty() && onnx::find_op(n.op_type);
      }
    } catch (const Error& e) {
      c.reason = e.what();
    }
    if (c.ops.empty()) c.supported = false;
    if (c.supported) {
      run_case(c, dir, device);
      std::cout << (c.passed ? "pass " : "FAIL ") << c.name
                << (c.passed ? "" : ": " + first_line(c.reason)) << "\n";
    }
    cases.push_back(std::move(c));
  }
  int run = 0, passed = 0;
  for (const auto& c : cases)
    if (c.supported) ++run, passed += c.passed;
  std::cout << passed << " of " << run << " cases of supported operators pass on " << device_name
            << " (" << cases.size() - run << " cases of other operators not run)\n";
  // expected_failures.txt: "<case>  # <reason>" per line.
  std::map<std::string, std::string> expected;
  if (!expected_file.empty()) {
    std::ifstream in(expected_file);
    for (std::string line; std::getline(in, line);) {
      const size_t hash = line.find('#');
      std::string name = line.substr(0, hash), why = hash == std::string::npos ? "" : line.substr(hash + 1);
      name.erase(name.find_last_not_of(" \t") + 1);
      why.erase(0, why.find_first_not_of(' '));
      if (!name.empty()) expected[name] = why;
    }
  }
  if (!markdown.empty()) write_markdown(markdown, cases, device_name, data, expected);
  if (expected_file.empty()) return passed == run ? 0 : 1;
  int surprises = 0;
  for (const auto& c : cases) {
    if (!c.supported) continue;
    const bool listed = expected.count(c.name) != 0;
    if (!c.passed && !listed) {
      std::cout << "UNEXPECTED FAILURE " << c.name << ": " << first_line(c.reason) << "\n";
      ++surprises;
    } else if (c.passed && listed) {
      std::cout << "UNEXPECTED PASS " << c.name << " (remove it from " << expected_file << ")\n";
      ++surprises;
    }
  }
  return surprises ? 1 : 0;
}
