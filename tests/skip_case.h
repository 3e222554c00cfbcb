// Loud skips for the doctest suites. A case, or a part of one, that this machine or build cannot
// run (no AVX-512, an algorithm the registry refuses here) calls skip_case with the reason, so
// the output says what was not checked and why instead of passing with zero checks (DESIGN.md,
// Testing). Grep a run's output for "^SKIPPED:" to list them.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

namespace ember::test {

namespace detail {
// doctest counts only the cases its filters and decorators skip, so the skips made at run time
// get a count of their own, printed once when the program ends (after doctest's summary).
struct SkipCount {
  int n = 0;
  ~SkipCount() {
    if (n > 0) std::printf("[skip_case] %d part(s) of test cases skipped: see SKIPPED lines\n", n);
  }
};
inline SkipCount& skip_count() {
  static SkipCount c;
  return c;
}
}  // namespace detail

// ensures: a line `SKIPPED: <test case>: <reason>` on stdout, and the reason as a doctest
// MESSAGE at the test case's file and line (shown by every reporter under the case's name).
// Checks nothing itself: the caller returns or moves on.
inline void skip_case(const std::string& reason) {
  const doctest::ContextOptions* o = doctest::getContextOptions();
  const doctest::TestCaseData* tc = o != nullptr ? o->currentTest : nullptr;
  ++detail::skip_count().n;
  if (tc != nullptr)
    ADD_MESSAGE_AT(tc->m_file.c_str(), static_cast<int>(tc->m_line), "SKIPPED: " << reason);
  std::printf("SKIPPED: %s: %s\n", tc != nullptr ? tc->m_name : "?", reason.c_str());
  std::fflush(stdout);
}

}  // namespace ember::test
