// A rule's `protocols` (http/1.1, h2, websocket) and `websocket` limits: reading, loader errors
// with their keys, decide() refusing a WebSocket upgrade with protocol_denied, and explain.

#include "policy/explain.hpp"
#include "policy/snapshot.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

using core::errc;
using test::must_load;
using T = test::target_builder;

const char* kPolicy = R"(agents: {default: {rules: [chat, api]}}
rules:
  - name: chat
    hosts: [chat.example]
    upgrades: [websocket]
    websocket: {max_message_bytes: 256KiB, messages_per_minute: 120, burst: 10}
  - {name: api, hosts: [api.example], upgrades: [websocket], protocols: [http/1.1, h2]}
)";

TEST(Protocols, DefaultsAndValuesAreRead) {
  auto p = must_load(kPolicy);
  ASSERT_TRUE(p);
  const auto& chat = *p->rules()[0].source;
  EXPECT_EQ(chat.protocols, model::protocol_http1 | model::protocol_h2 | model::protocol_websocket);
  EXPECT_EQ(chat.websocket.max_message_bytes, 256u * 1024);
  EXPECT_EQ(chat.websocket.messages_per_minute, 120u);
  EXPECT_EQ(chat.websocket.burst, 10u);
  const auto& api = *p->rules()[1].source;
  EXPECT_EQ(api.protocols, model::protocol_http1 | model::protocol_h2);
  EXPECT_EQ(api.websocket.max_message_bytes, 1024u * 1024);  // the default
  EXPECT_EQ(api.websocket.messages_per_minute, 0u);
}

TEST(Protocols, AWebsocketUpgradeUnderARuleWithoutItIsProtocolDenied) {
  auto p = must_load(kPolicy);
  ASSERT_TRUE(p);
  const auto* agent = p->find_agent("default");
  EXPECT_EQ(p->decide(*agent, T("chat.example", 80, "GET", "/", "websocket").t).reason, errc::ok);
  const auto d = p->decide(*agent, T("api.example", 80, "GET", "/", "websocket").t);
  EXPECT_EQ(d.reason, errc::protocol_denied);
  EXPECT_EQ(d.detail, "rule api: protocol websocket not in its protocols");
  EXPECT_EQ(p->decide(*agent, T("api.example", 80, "GET", "/").t).reason, errc::ok);
  explain_request ok;
  ok.method = "GET";
  ok.url = "http://chat.example/";
  ok.upgrade = "websocket";
  const auto allowed = explain(*p, ok);
  EXPECT_TRUE(allowed.allowed);
  EXPECT_NE(allowed.text.find("upgrade websocket ok (each message checked whole, up to 262144 "
                              "bytes, 120 per minute)"),
            std::string::npos)
      << allowed.text;
  explain_request q;
  q.method = "GET";
  q.url = "http://api.example/";
  q.upgrade = "websocket";
  const auto e = explain(*p, q);
  EXPECT_FALSE(e.allowed);
  EXPECT_NE(e.text.find("protocol websocket is not in the rule's protocols"), std::string::npos)
      << e.text;
}

TEST(Protocols, BadValuesAreErrorsWithTheirKeys) {
  struct bad {
    const char* rule;
    const char* key;
    const char* what;
  };
  const bad cases[] = {
      {"protocols: [http/2]", "rules[0].protocols[0]", "unknown protocol 'http/2'"},
      {"protocols: [h2, h2]", "rules[0].protocols[1]", "listed twice"},
      {"protocols: []", "rules[0].protocols", "must not be empty"},
      {"protocols: websocket", "rules[0].protocols", "a list of protocols"},
      {"websocket: {max_message_bytes: 0}", "rules[0].websocket.max_message_bytes", "at least"},
      {"websocket: {max_message_bytes: 2GiB}", "rules[0].websocket.max_message_bytes",
       "at most 1GiB"},
      {"websocket: {messages_per_minute: 0}", "rules[0].websocket.messages_per_minute", "between"},
      {"websocket: {per_second: 3}", "rules[0].websocket.per_second", ""},
  };
  for (const auto& c : cases) {
    const std::string yaml = std::string(
                                 "agents: {default: {rules: [r]}}\nrules:\n  - {name: r, "
                                 "hosts: [h.example], ") +
                             c.rule + "}\n";
    const auto errors = load_string(yaml, "p.yaml").errors;
    ASSERT_FALSE(errors.empty()) << c.rule;
    EXPECT_EQ(errors[0].key, c.key) << c.rule << ": " << errors[0].to_string();
    EXPECT_NE(errors[0].to_string().find(c.what), std::string::npos)
        << c.rule << ": " << errors[0].to_string();
  }
}

}  // namespace
}  // namespace airlock::policy
