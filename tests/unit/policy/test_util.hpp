#pragma once
// Helpers shared by the policy tests: load inline YAML, build targets.

#include "policy/loader.hpp"
#include "policy/snapshot.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

namespace airlock::policy::test {

// Loads YAML that must be valid; fails the test (with every error) otherwise.
inline std::shared_ptr<const snapshot> must_load(std::string_view yaml,
                                                 const load_options& options = {}) {
  auto r = load_string(yaml, "test.yaml", options);
  std::string all;
  for (const auto& e : r.errors)
    all += e.to_string() + "\n";
  EXPECT_TRUE(r.ok()) << all;
  EXPECT_TRUE(r.errors.empty());
  return r.policy;
}

// A target for decide(): keeps the normalised host alive.
struct target_builder {
  net::normalized_host host;
  request_target t;
  target_builder(std::string_view h, std::uint16_t port, std::string_view method = "GET",
                 std::string_view path = "/", std::string_view upgrade = "") {
    auto n = net::normalize_host(h);
    EXPECT_TRUE(n.has_value()) << h;
    if (n) host = *n;
    t.host = &host;
    t.port = port;
    t.method = method;
    t.path = path;
    t.upgrade = upgrade;
  }
  static target_builder connect(std::string_view h, std::uint16_t port) {
    target_builder b(h, port, "CONNECT", "");
    b.t.is_connect = true;
    return b;
  }
  target_builder(const target_builder& o) : host(o.host), t(o.t) { t.host = &host; }
};

}  // namespace airlock::policy::test
