#include "filters/mcp/decide.hpp"
#include "filters/mcp/jsonrpc.hpp"

#include <gtest/gtest.h>

// The JSON-RPC 2.0 reader of the MCP filter and the answers it builds, without an exchange.
namespace airlock::filters::mcp {
namespace {

TEST(mcp_jsonrpc, TellsRequestsNotificationsAndResponsesApart) {
  auto p = parse_jsonrpc(R"({"jsonrpc":"2.0","id":7,"method":"tools/call",)"
                         R"("params":{"name":"echo","arguments":{"text":"hi"}}})",
                         32);
  ASSERT_FALSE(p.error);
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_FALSE(p.batch);
  const message& m = p.messages[0];
  EXPECT_EQ(m.kind, message_kind::request);
  EXPECT_EQ(m.id, "7");
  EXPECT_EQ(m.method, "tools/call");
  EXPECT_TRUE(m.tool_named);
  EXPECT_EQ(m.tool, "echo");
  ASSERT_NE(m.arguments, nullptr);
  EXPECT_EQ(m.arguments->size(), 1u);

  p = parse_jsonrpc(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", 32);
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0].kind, message_kind::notification);
  EXPECT_TRUE(p.messages[0].id.empty());

  p = parse_jsonrpc(R"({"jsonrpc":"2.0","id":"s-1","result":{}})", 32);
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0].kind, message_kind::response);
  EXPECT_EQ(p.messages[0].id, R"("s-1")");
}

TEST(mcp_jsonrpc, Batches) {
  auto p = parse_jsonrpc(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},)"
                         R"({"jsonrpc":"2.0","method":"notifications/cancelled"},)"
                         R"({"jsonrpc":"1.0","id":3,"method":"ping"}])",
                         32);
  ASSERT_FALSE(p.error);
  EXPECT_TRUE(p.batch);
  ASSERT_EQ(p.messages.size(), 3u);
  EXPECT_EQ(p.messages[0].kind, message_kind::request);
  EXPECT_EQ(p.messages[1].kind, message_kind::notification);
  EXPECT_EQ(p.messages[2].kind, message_kind::invalid);
  EXPECT_EQ(p.messages[2].id, "3");  // still answered with its id

  p = parse_jsonrpc("[]", 32);
  ASSERT_TRUE(p.error);
  EXPECT_EQ(p.error_code, kInvalidRequest);
  p = parse_jsonrpc(R"([{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}])", 1);
  ASSERT_TRUE(p.error);
  EXPECT_EQ(*p.error, "too many messages in one batch");
}

TEST(mcp_jsonrpc, RefusesWhatServersCouldReadTwoWays) {
  // A duplicate key: a server keeping the last "name" would run another tool than the one
  // decided on.
  auto p = parse_jsonrpc(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
                         R"("params":{"name":"echo","name":"delete_repository"}})",
                         32);
  ASSERT_TRUE(p.error);
  EXPECT_EQ(p.error_code, kParseError);
  for (const char* bad : {"", "{", "nul", R"({"jsonrpc":"2.0","id":1,"method":"a"} x)", "42"}) {
    p = parse_jsonrpc(bad, 32);
    EXPECT_TRUE(p.error) << bad;
  }
}

TEST(mcp_jsonrpc, InvalidShapes) {
  struct shape {
    const char* body;
    const char* id;  // as answered
  };
  for (const shape& s : {
           shape{R"({"id":1,"method":"ping"})", "1"},                          // no jsonrpc
           shape{R"({"jsonrpc":"2.0","id":null,"method":"ping"})", ""},        // null id
           shape{R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", ""},         // fraction
           shape{R"({"jsonrpc":"2.0","id":1,"method":3})", "1"},               // method type
           shape{R"({"jsonrpc":"2.0","id":1,"method":"a","params":3})", "1"},  // params type
           shape{R"({"jsonrpc":"2.0","id":1})", "1"},                          // nothing
           shape{R"({"jsonrpc":"2.0","id":1,"result":1,"error":{}})", "1"},    // both
           shape{R"({"jsonrpc":"2.0","id":1,"method":"a","result":1})", "1"},  // mixed
       }) {
    auto p = parse_jsonrpc(s.body, 32);
    ASSERT_FALSE(p.error) << s.body;
    ASSERT_EQ(p.messages.size(), 1u);
    EXPECT_EQ(p.messages[0].kind, message_kind::invalid) << s.body;
    EXPECT_EQ(p.messages[0].id, s.id) << s.body;
    EXPECT_FALSE(p.messages[0].invalid_why.empty());
  }
}

TEST(mcp_jsonrpc, ToolsCallParams) {
  auto p =
      parse_jsonrpc(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}})", 32);
  EXPECT_FALSE(p.messages[0].tool_named);
  p = parse_jsonrpc(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[1]}})",
      32);
  EXPECT_TRUE(p.messages[0].arguments_malformed);
  EXPECT_EQ(p.messages[0].arguments, nullptr);
}

TEST(mcp_jsonrpc, AnswersKeepTheIdAndSayWhy) {
  auto p = parse_jsonrpc(R"({"jsonrpc":"2.0","id":"a\"b","method":"x"})", 32);
  std::vector<std::optional<refusal>> why(1);
  why[0] = refusal{kMethodNotAllowed, core::errc::mcp_method_denied, "method 'x' is not allowed"};
  auto a = answer_for(p, why);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 200u);
  EXPECT_EQ(a->content_type, "application/json");
  EXPECT_EQ(a->body,
            R"({"jsonrpc":"2.0","id":"a\"b","error":{"code":-32601,"message":"airlock: method )"
            R"('x' is not allowed","data":{"reason":"mcp_method_denied"}}})");

  // A batch: the refused request its own error, the others -32003, notifications nothing.
  p = parse_jsonrpc(R"([{"jsonrpc":"2.0","id":1,"method":"ok"},{"jsonrpc":"2.0","method":"n"},)"
                    R"({"jsonrpc":"2.0","id":2,"method":"x"}])",
                    32);
  why.assign(3, std::nullopt);
  why[2] = refusal{kMethodNotAllowed, core::errc::mcp_method_denied, "no"};
  a = answer_for(p, why);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->body.front(), '[');
  EXPECT_NE(a->body.find(R"("id":1,"error":{"code":-32003)"), std::string::npos) << a->body;
  EXPECT_NE(a->body.find(R"("id":2,"error":{"code":-32601)"), std::string::npos) << a->body;

  // Notifications only: no JSON-RPC answer is possible.
  p = parse_jsonrpc(R"({"jsonrpc":"2.0","method":"n"})", 32);
  why.assign(1, refusal{kMethodNotAllowed, core::errc::mcp_method_denied, "no"});
  EXPECT_FALSE(answer_for(p, why));

  // Not JSON: -32700 with id null, HTTP 400.
  p = parse_jsonrpc("{", 32);
  a = answer_for(p, {});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 400u);
  EXPECT_NE(a->body.find(R"("id":null,"error":{"code":-32700)"), std::string::npos);
}

}  // namespace
}  // namespace airlock::filters::mcp
