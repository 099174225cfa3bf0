// A unit test may skip only for what the machine lacks (a tool, a device, a kernel feature),
// and CI (CI=true: root on Debian 12 with scripts/install-deps.sh) lacks none of them: there
// the skip is a failure, so a CI machine that lost a tool cannot pass with the test unrun.
// Included as "../support/skip.hpp". Use from the test body (it returns from the current function,
// as GTEST_SKIP does).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

namespace airlock::test {

inline bool in_ci() {
  const char* v = std::getenv("CI");
  if (v == nullptr) return false;
  const std::string_view s(v);
  return s == "true" || s == "1" || s == "yes";
}

}  // namespace airlock::test

#define AIRLOCK_SKIP_UNLESS_CI(why)                                        \
  do {                                                                     \
    if (::airlock::test::in_ci()) {                                        \
      GTEST_FAIL() << "CI=true, where this must run, would skip: " << why; \
    } else {                                                               \
      GTEST_SKIP() << why;                                                 \
    }                                                                      \
  } while (0)
