#include "filters/mcp/answer_id.hpp"
#include "filters/mcp/media_type.hpp"

#include <boost/beast/http/fields.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

// What an MCP body is read as: only application/json in UTF-8, unencoded (a server decoding a
// body in the charset the request names, UTF-7 say, reads another call than the filter did);
// and which answer ids a client takes for a request's (the TypeScript SDK: Number(id)).
namespace airlock::filters::mcp {
namespace {
namespace http = boost::beast::http;

http::fields head(std::initializer_list<std::pair<http::field, const char*>> lines) {
  http::fields f;
  for (const auto& [name, value] : lines)
    f.insert(name, value);
  return f;
}

TEST(mcp_media_type, ParsesByTheGrammar) {
  auto m = parse_media_type("Application/JSON ;\tCharset=\"UTF-8\"");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->is("application", "json"));
  ASSERT_EQ(m->params.size(), 1u);
  EXPECT_EQ(m->params[0].first, "charset");
  EXPECT_EQ(m->params[0].second, "UTF-8");
  m = parse_media_type(R"(text/plain; a="x\"; charset=utf-7")");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->params.size(), 1u);  // the quoted-pair keeps the quote inside the value
  EXPECT_EQ(m->params[0].second, "x\"; charset=utf-7");
  for (const char* bad : {"", "application", "application/", "/json", "application/json x",
                          "application/json; charset",
                          "application/json; charset=", "application/json; charset=\"utf-8",
                          "application/json, text/plain", "application/json; charset=utf 8"})
    EXPECT_FALSE(parse_media_type(bad)) << bad;
}

TEST(mcp_media_type, RequestReadOnlyAsUtf8Json) {
  for (const char* ok : {"application/json", "application/json; charset=utf-8",
                         "APPLICATION/Json;CHARSET=\"UTF-8\"", "application/json ; charset=utf-8;"})
    EXPECT_EQ(unreadable_request(head({{http::field::content_type, ok}})), "") << ok;
  EXPECT_EQ(unreadable_request(head({{http::field::content_type, "application/json"},
                                     {http::field::content_encoding, "identity"}})),
            "");
  struct refused {
    http::fields fields;
    const char* why;
  };
  for (const refused& r : {
           refused{head({{http::field::content_type, "application/json; charset=utf-7"}}),
                   "charset 'utf-7'"},
           refused{head({{http::field::content_type, "application/json; charset=\"UTF-7\""}}),
                   "charset 'UTF-7'"},
           refused{head({{http::field::content_type, "application/json; charset=utf-16le"}}),
                   "charset 'utf-16le'"},
           refused{head({{http::field::content_type,
                          "application/json; charset=utf-8; charset=utf-7"}}),
                   "several charset parameters"},
           refused{head({{http::field::content_type, "application/json"},
                         {http::field::content_type, "application/json; charset=utf-7"}}),
                   "several field lines"},
           refused{head({{http::field::content_type, "application/json"},
                         {http::field::accept, "*/*"},
                         {http::field::content_type, "application/json"}}),
                   "several field lines"},
           refused{head({{http::field::content_type, "application/json"},
                         {http::field::content_encoding, "gzip"}}),
                   "Content-Encoding 'gzip'"},
           refused{head({{http::field::content_type, "application/json"},
                         {http::field::content_encoding, "identity"},
                         {http::field::content_encoding, "identity, br"}}),
                   "Content-Encoding 'br'"},
           refused{head({}), "no Content-Type"},
           refused{head({{http::field::content_type, "text/plain"}}), "'text/plain'"},
           refused{head({{http::field::content_type, "application/json; x=1"}}), "parameter 'x'"},
           refused{head({{http::field::content_type, "application/json;charset=utf-8,x"}}),
                   "does not parse"},
       }) {
    const std::string why = unreadable_request(r.fields);
    EXPECT_NE(why.find(r.why), std::string::npos) << why;
  }
}

TEST(mcp_media_type, ResponseHead) {
  auto r = read_body_head(head({{http::field::content_type, "text/event-stream;\tcharset=utf-8"}}));
  EXPECT_EQ(r.unreadable, "");
  ASSERT_TRUE(r.type);
  EXPECT_TRUE(r.type->is("text", "event-stream"));
  r = read_body_head(head({{http::field::content_type, "application/json\t; charset=utf-7"}}));
  EXPECT_NE(r.unreadable.find("charset 'utf-7'"), std::string::npos) << r.unreadable;
  r = read_body_head(head({}));
  EXPECT_EQ(r.unreadable, "");
  EXPECT_FALSE(r.type);
}

bool answers(const char* answer, const char* request) {
  return answers_id(boost::json::parse(answer), request);
}

TEST(mcp_answer_id, AsTheSdkMatchesIds) {
  for (const char* same : {"1", "\"1\"", "1.0", "1e0", "\" 1\\n\"", "\"0x1\"", "\"+1\"", "\"1.\"",
                           "\"0b1\"", "\"\\u00a01\""})
    EXPECT_TRUE(answers(same, "1")) << same;
  EXPECT_TRUE(answers("\"a-1\"", "\"a-1\""));
  EXPECT_TRUE(answers("7", "\"7\""));
  EXPECT_TRUE(answers("0", "\"\""));  // Number("") is 0
  for (const char* other : {"2", "\"1a\"", "\"one\"", "true", "null", "[1]", "\"Infinity\"",
                            "\"1e\"", "\".\"", "\"0x\"", "\"-0x1\""})
    EXPECT_FALSE(answers(other, "1")) << other;
  EXPECT_FALSE(answers("\"a-1\"", "\"a-2\""));
  EXPECT_FALSE(answers("1", "not json"));
}

}  // namespace
}  // namespace airlock::filters::mcp
