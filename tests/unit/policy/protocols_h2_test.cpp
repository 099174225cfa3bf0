// A rule's `protocols` (http/1.1, h2, websocket): reading it, its errors with file:line:key,
// the default, and its printing.
#include "policy/ports.hpp"
#include "policy/snapshot.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

const std::string head = "rules:\n  - name: r\n    hosts: [a.example]\n";

std::uint8_t protocols_of(const std::string& yaml) {
  auto loaded = load_string(yaml, "p.yaml");
  EXPECT_TRUE(loaded.errors.empty()) << (loaded.errors.empty() ? "" : loaded.errors[0].to_string());
  if (!loaded.policy || loaded.policy->rules().empty()) return 0;
  return loaded.policy->rules()[0].source->protocols;
}

TEST(ProtocolsReadAndPrinted, DefaultIsAll) {
  EXPECT_EQ(protocols_of(head),
            model::protocol_http1 | model::protocol_h2 | model::protocol_websocket);
}

TEST(ProtocolsReadAndPrinted, Listed) {
  EXPECT_EQ(protocols_of(head + "    protocols: [h2]\n"), model::protocol_h2);
  EXPECT_EQ(protocols_of(head + "    protocols: [http/1.1, websocket]\n"),
            model::protocol_http1 | model::protocol_websocket);
  EXPECT_EQ(protocols_text(model::protocol_http1 | model::protocol_h2), "http/1.1, h2");
}

TEST(ProtocolsReadAndPrinted, Errors) {
  auto errors = load_string(head + "    protocols: [h2, spdy]\n", "p.yaml").errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string(),
            "p.yaml:4:21: rules[0].protocols[1]: unknown protocol 'spdy' (http/1.1, h2, "
            "websocket)");
  errors = load_string(head + "    protocols: [h2, h2]\n", "p.yaml").errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "rules[0].protocols[1]");
  errors = load_string(head + "    protocols: []\n", "p.yaml").errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("must not be empty"), std::string::npos);
}

}  // namespace
}  // namespace airlock::policy
