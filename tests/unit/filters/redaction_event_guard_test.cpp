#include "filters/redaction/builtin.hpp"
#include "filters/redaction/engine.hpp"
#include "filters/redaction/event_guard.hpp"
#include "filters/redaction/response_body.hpp"

#include <boost/beast/http/fields.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

// A secret split across server-sent events (event_guard.hpp): held back while it may go on,
// the body cut when it completes, released unchanged when it does not.
namespace airlock::filters::redaction {
namespace {

// limits.response_bytes, larger than any body here.
constexpr std::uint64_t kResponseBytes = std::uint64_t{1} << 30;

constexpr std::string_view kSecret = "sk-live-AIRLOCKTEST-0123456789abcdefXYZ";

std::shared_ptr<const engine> secret_engine() {
  auto specs = builtin_redactor("email");
  auto built = engine::build(*specs, {{"api", std::string(kSecret)}});
  EXPECT_TRUE(built.errors.empty());
  return built.compiled;
}

// An answer streamed as a model API does: one JSON delta per event.
std::string delta(std::string_view text, std::string_view end = "\n\n") {
  return "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" +
         std::string(text) + "\"}}]}" + std::string(end);
}

// The guard cuts `body` (in one write) and lets none of `held` through.
void expect_cut(const engine& e, const std::string& body, const std::string& held) {
  event_guard g(e, framing::events);
  std::string out;
  EXPECT_FALSE(g.write(body, out)) << body;
  EXPECT_EQ(out.find(held), std::string::npos) << body;
}

TEST(redaction_event_guard, ASecretSplitOverDeltasIsHeldThenCut) {
  const auto e = secret_engine();
  for (std::size_t cut = event_guard::kMinStart; cut < kSecret.size(); cut += 5) {
    event_guard g(*e, framing::events);
    std::string out;
    ASSERT_TRUE(g.write(delta("your key is "), out));
    EXPECT_EQ(out, delta("your key is "));  // nothing of the secret yet: it goes on
    out.clear();
    ASSERT_TRUE(g.write(delta(kSecret.substr(0, cut)), out)) << cut;
    EXPECT_EQ(out, "") << "the start of the secret is held back, " << cut;
    EXPECT_FALSE(g.write(delta(kSecret.substr(cut)) + delta("."), out)) << cut;
    EXPECT_EQ(out, "");
    EXPECT_NE(g.why(), nullptr);
    EXPECT_FALSE(g.finish(out));
  }
}

TEST(redaction_event_guard, ThreePiecesOtherFieldsBetweenAndCrlf) {
  const auto e = secret_engine();
  event_guard g(*e, framing::events);
  std::string out;
  const std::string a(kSecret.substr(0, 10)), b(kSecret.substr(10, 10)), c(kSecret.substr(20));
  ASSERT_TRUE(g.write(delta(a, "\r\n\r\n"), out));
  ASSERT_TRUE(g.write("data: {\"usage\":{\"note\":\"other field\"}}\r\n\r\n", out));
  ASSERT_TRUE(g.write(delta(b, "\r\n\r\n"), out));
  EXPECT_EQ(out, "");
  EXPECT_FALSE(g.write(delta(c, "\r\n\r\n"), out));
  EXPECT_EQ(out.find(a), std::string::npos);
}

TEST(redaction_event_guard, AStartThatDoesNotGoOnIsReleasedUnchanged) {
  const auto e = secret_engine();
  event_guard g(*e, framing::events);
  std::string out;
  const std::string body = delta("the prefix sk-live-AIR") + delta("PLANE is not it") +
                           "event: ping\ndata: not json\n\n" + delta("bye", "\n");
  // Byte by byte: the output is the input, in whole events, however it was split.
  for (char ch : body)
    ASSERT_TRUE(g.write(std::string_view(&ch, 1), out));
  ASSERT_TRUE(g.finish(out));
  EXPECT_EQ(out, body);
}

TEST(redaction_event_guard, AValueARedactorFindsSplitIsNotJoined) {
  // A model streams an e-mail address in pieces; each answer that holds one is not cut.
  const auto e = secret_engine();
  event_guard g(*e, framing::events);
  std::string out;
  const std::string body = delta("write to ops") + delta("@example") + delta(".com today");
  ASSERT_TRUE(g.write(body, out));
  ASSERT_TRUE(g.finish(out));
  EXPECT_EQ(out, body);
}

TEST(redaction_event_guard, HeldEventsAreBounded) {
  const auto e = secret_engine();
  event_guard g(*e, framing::events);
  std::string out;
  ASSERT_TRUE(g.write(delta(kSecret.substr(0, 12)), out));
  // Another field's events pile up behind the held one: past kMaxHeld the body is cut.
  bool ok = true;
  for (int i = 0; i < 2000 && ok; ++i)
    ok = g.write("data: {\"pad\":\"" + std::string(100, 'p') + "\"}\n\n", out);
  EXPECT_FALSE(ok);
  EXPECT_EQ(out, "");
}

// A model that writes a key's vendor prefix ("export KEY=sk-live-") and then a long tool
// call: past kMaxHeld the prefix and the events behind it go on. What follows the prefix in
// its field is still read on from it: the rest of the secret cuts the body, none of it sent.
TEST(redaction_event_guard, PastTheBoundAShortStartGoesOnAndTheRestIsStillCut) {
  const auto e = secret_engine();
  const std::string prefix(kSecret.substr(0, 8));  // "sk-live-": 8 bytes of 38
  const std::string pad = "data: {\"tool\":\"" + std::string(100, 'p') + "\"}\n\n";
  event_guard g(*e, framing::events);
  std::string out;
  ASSERT_TRUE(g.write(delta("export KEY=" + prefix), out));
  EXPECT_EQ(out, "");
  std::string sent = delta("export KEY=" + prefix);
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(g.write(pad, out)) << i;
    sent += pad;
  }
  EXPECT_EQ(out, sent) << "held, then let through past 64 KiB";
  out.clear();
  ASSERT_TRUE(g.write(delta(" then run it"), out));
  EXPECT_EQ(out, delta(" then run it"));  // the start did not go on: the stream flows
  // The same start, and then the rest of the secret in its field.
  event_guard h(*e, framing::events);
  std::string got;
  ASSERT_TRUE(h.write(delta(prefix), got));
  for (int i = 0; i < 700; ++i)
    ASSERT_TRUE(h.write(pad, got)) << i;
  ASSERT_NE(got, "");
  got.clear();
  EXPECT_FALSE(h.write(delta(kSecret.substr(8)), got));
  EXPECT_EQ(got.find(kSecret.substr(8, 6)), std::string::npos);
  // A start that grew past the prefix is held again, and past the bound cuts.
  event_guard k(*e, framing::events);
  ASSERT_TRUE(k.write(delta(prefix), got));
  for (int i = 0; i < 700; ++i)
    ASSERT_TRUE(k.write(pad, got)) << i;
  got.clear();
  ASSERT_TRUE(k.write(delta(kSecret.substr(8, 4)), got));
  EXPECT_EQ(got, "");
  bool ok = true;
  for (int i = 0; i < 700 && ok; ++i)
    ok = k.write(pad, got);
  EXPECT_FALSE(ok);
  EXPECT_EQ(got, "");
}

TEST(redaction_event_guard, AStartTooShortToHoldStillCountsAndLongEventsAreCut) {
  const auto e = secret_engine();
  {
    // Three bytes go on (less than kMinStart), but the field's reading goes on from them: the
    // rest, however long the event that brings it, cuts the body.
    event_guard g(*e, framing::events);
    std::string out;
    ASSERT_TRUE(g.write(delta(kSecret.substr(0, 3)), out));
    EXPECT_EQ(out, delta(kSecret.substr(0, 3)));
    EXPECT_FALSE(g.write(delta(std::string(kSecret.substr(3)) + std::string(100000, ' ')), out));
  }
  {
    // An event that never ends is not passed on unread.
    event_guard g(*e, framing::events);
    std::string out;
    bool ok = g.write("data: {\"c\":\"", out);
    for (int i = 0; i < 9 && ok; ++i)
      ok = g.write(std::string(1 << 20, 'x'), out);
    EXPECT_FALSE(ok);
    EXPECT_EQ(out, "");
  }
}

TEST(redaction_event_guard, ChoicesBlocksAndEventTypesAreJoinedApart) {
  // The red team's interleavings (session 16): a client joins per choice (OpenAI n > 1, each
  // event one element with its "index"), per content block (Anthropic's top-level "index"), or
  // per event type; another choice's text between the two halves must not hide them.
  const auto e = secret_engine();
  const std::string a(kSecret.substr(0, 12)), b(kSecret.substr(12));
  auto choice = [](int i, std::string_view text) {
    return "data: {\"choices\":[{\"index\":" + std::to_string(i) + ",\"delta\":{\"content\":\"" +
           std::string(text) + "\"}}]}\n\n";
  };
  auto block = [](int i, std::string_view text) {
    return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":" +
           std::to_string(i) + ",\"delta\":{\"type\":\"text_delta\",\"text\":\"" +
           std::string(text) + "\"}}\n\n";
  };
  auto typed = [](std::string_view type, std::string_view text) {
    return "event: " + std::string(type) + "\ndata: " + std::string(text) + "\n\n";
  };
  auto field = [](std::string_view name, std::string_view text) {
    return "data: {\"choices\":[{\"delta\":{\"" + std::string(name) + "\":\"" + std::string(text) +
           "\"}}]}\n\n";
  };
  const std::string streams[] = {
      choice(0, a) + choice(1, "Hello") + choice(0, b),
      // A client that shows the reasoning, then the answer.
      field("reasoning_content", "thinking " + a) + field("content", b),
      block(0, a) + block(1, "Hi") + block(0, b),
      typed("a", a) + typed("b", "zz") + typed("a", b),
  };
  for (const auto& body : streams) {
    expect_cut(*e, body, a);
  }
}

TEST(redaction_event_guard, WhatAClientMayParseOtherwiseIsNotPassedUnread) {
  const auto e = secret_engine();
  const std::string a(kSecret.substr(0, 12)), b(kSecret.substr(12));
  {
    // JSON this parser refuses even leniently, where a client may read it: the body is cut.
    event_guard g(*e, framing::events);
    std::string out;
    EXPECT_FALSE(g.write("data: {\"c\":\"x\",\"p\":undefined}\n\n", out));
    EXPECT_EQ(out, "");
  }
  {
    // A lone surrogate and NaN (JSON.parse and Python's json read them; json.dumps writes NaN)
    // are read relaxed: a stream without a secret flows, one with a split secret is cut.
    const std::string relaxed = "data: {\"c\":\"x\",\"p\":\"\\ud800\",\"n\":NaN}\n\n";
    event_guard g(*e, framing::events);
    std::string out;
    ASSERT_TRUE(g.write(relaxed, out));
    EXPECT_EQ(out, relaxed);
    event_guard split(*e, framing::events);
    out.clear();
    EXPECT_FALSE(split.write("data: {\"c\":\"" + a + "\",\"n\":NaN}\n\n" + "data: {\"c\":\"" + b +
                                 "\",\"p\":\"\\udc00\"}\n\n",
                             out));
    EXPECT_EQ(out.find(a), std::string::npos);
  }
  {
    // Top-level JSON strings, and a byte-order mark before the first event.
    event_guard g(*e, framing::events);
    std::string out;
    EXPECT_FALSE(
        g.write("\xEF\xBB\xBF"
                "data: \"" +
                    a + "\"\n\ndata: \"" + b + "\"\n\n",
                out));
    EXPECT_EQ(out.find(a), std::string::npos);
  }
  {
    // JSON text sequences (RFC 7464): records start with RS.
    event_guard g(*e, framing::lines);
    std::string out;
    EXPECT_FALSE(
        g.write("\x1e{\"t\":\"" + a + "\"}\x1e{\"t\":\"" + b + "\"}\x1e{\"t\":\"end\"}", out));
    EXPECT_EQ(out.find(a), std::string::npos);
  }
  {
    // A redaction placeholder is not JSON: the event passes.
    event_guard g(*e, framing::events);
    std::string out;
    ASSERT_TRUE(g.write("data: [REDACTED:secret:api]\n\n", out));
    EXPECT_EQ(out, "data: [REDACTED:secret:api]\n\n");
  }
}

// The secret percent-encoded (RFC 3986 section 2.1) or as HTML numeric references.
std::string percent(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : s)
    out.append({'%', kHex[c >> 4], kHex[c & 15]});
  return out;
}
std::string html_refs(std::string_view s) {
  std::string out;
  for (const unsigned char c : s)
    out.append("&#").append(std::to_string(c));  // (no ';': WHATWG reads it without)
  return out;
}

TEST(redaction_event_guard, AnEscapedSecretSplitAcrossEventsIsCut) {
  const auto e = secret_engine();
  for (const auto& encoded : {percent(kSecret), html_refs(kSecret)}) {
    // Cut anywhere, inside an escape too ("%7" then "3..."), and with plain text after it.
    for (std::size_t cut = 1; cut < encoded.size(); cut += 7) {
      event_guard g(*e, framing::events);
      std::string out;
      const std::string first = delta(encoded.substr(0, cut));
      const bool held = g.write(first, out);
      EXPECT_FALSE(held && g.write(delta(encoded.substr(cut)) + delta(" done"), out))
          << encoded.substr(0, cut);
      EXPECT_EQ(out.find(encoded.substr(0, std::max<std::size_t>(cut, 24))), std::string::npos);
    }
  }
  // The last reference ends its string, and nothing comes after it at that path (a client
  // that decodes each string reads it whole).
  {
    const auto refs = html_refs(kSecret);
    event_guard g(*e, framing::events);
    std::string out;
    ASSERT_TRUE(g.write(delta(refs.substr(0, 30)), out));
    EXPECT_FALSE(g.write(delta(refs.substr(30)) + "data: [DONE]\n\n", out));
    EXPECT_EQ(out, "");
  }
  // A tool call's arguments, JSON with \u escapes, streamed in pieces (the client parses the
  // joined arguments).
  {
    std::string args = "{\\\"key\\\":\\\"";
    for (const char c : kSecret.substr(0, 10)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\\\u%04x", static_cast<unsigned char>(c));
      args += buf;
    }
    args += std::string(kSecret.substr(10)) + "\\\"}";
    event_guard g(*e, framing::events);
    std::string out;
    const std::size_t cut = 11 + 7 * 4 + 3;  // (after "\\u": the escape split too)
    EXPECT_FALSE(g.write(delta(args.substr(0, cut)) + delta(args.substr(cut)), out)) << args;
    EXPECT_EQ(out, "");
  }
  // A reference a delta ends in, for a client that decodes each delta on its own: "...-&#48"
  // is "...-0", and the next delta's digits follow it.
  {
    event_guard g(*e, framing::events);
    std::string out;
    EXPECT_FALSE(g.write(delta(std::string(kSecret.substr(0, 20)) + "&#48") +
                             delta(kSecret.substr(21)) + delta(" done"),
                         out));
    EXPECT_EQ(out.find("AIRLOCK"), std::string::npos);
  }
  // An event without a type is a "message" event, joined with "event: message" ones.
  {
    const std::string a(kSecret.substr(0, 15)), b(kSecret.substr(15));
    event_guard g(*e, framing::events);
    std::string out;
    EXPECT_FALSE(
        g.write(delta(a) + "event: other\n" + delta("x") + "event: message\n" + delta(b), out));
    EXPECT_EQ(out.find(a), std::string::npos);
  }
  // Half escaped, half as written.
  const std::string a(kSecret.substr(0, 16)), b(kSecret.substr(16));
  event_guard g(*e, framing::events);
  std::string out;
  EXPECT_FALSE(g.write(delta(percent(a)) + delta(b), out));
  EXPECT_EQ(out, "");
}

TEST(redaction_event_guard, EscapesThatCompleteNoSecretGoOn) {
  const auto e = secret_engine();
  event_guard g(*e, framing::events);
  std::string out;
  const std::string body = delta("100% sure &amp; 50%") + delta("7 of &#") + delta("x41 ok") +
                           delta(percent(kSecret.substr(0, 12))) + delta(" no more");
  ASSERT_TRUE(g.write(body, out));
  ASSERT_TRUE(g.finish(out));
  EXPECT_EQ(out, body);
}

TEST(redaction_event_guard, ASecretSplitAcrossKeysIsCut) {
  const auto e = secret_engine();
  const std::string a(kSecret.substr(0, 14)), b(kSecret.substr(14));
  for (const auto& body : {"data: {\"" + a + "\":1}\n\ndata: {\"" + b + "\":1}\n\n",
                           "data: {\"x\":{\"" + a + "\":1}}\n\ndata: {\"" + b + "\":2}\n\n"}) {
    expect_cut(*e, body, a);
  }
}

TEST(redaction_event_guard, TextThatOnlyStartsLikeJsonFlows) {
  // Plain-text events that begin with '[' or '{' are text, not JSON a client might parse.
  const auto e = secret_engine();
  const std::string body =
      "data: [INFO] starting\n\ndata: [1/3] step\n\ndata: [tool] ls\n\n"
      "data: {user} joined\n\ndata: [DONE]\n\n";
  event_guard g(*e, framing::events);
  std::string out;
  ASSERT_TRUE(g.write(body, out)) << g.why();
  ASSERT_TRUE(g.finish(out));
  EXPECT_EQ(out, body);
}

TEST(redaction_event_guard, AModelsReasoningThenItsAnswerInTheEnvelopeIsJoined) {
  // DeepSeek-style reasoning_content, then content, inside the OpenAI chunk envelope (its id,
  // object and model strings come before the text in every event).
  const auto e = secret_engine();
  const std::string a(kSecret.substr(0, 15)), b(kSecret.substr(15));
  auto chunk = [](std::string_view field, std::string_view text) {
    return "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\","
           "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"" +
           std::string(field) + "\":\"" + std::string(text) + "\"}}]}\n\n";
  };
  event_guard g(*e, framing::events);
  std::string out;
  EXPECT_FALSE(g.write(chunk("reasoning_content", a) + chunk("content", b), out));
  EXPECT_EQ(out.find(a), std::string::npos);
}

TEST(redaction_event_guard, ChoicesNamedByAFloatOrUnderOtherEventTypesAreJoinedApart) {
  const auto e = secret_engine();
  const std::string a(kSecret.substr(0, 15)), b(kSecret.substr(15));
  auto choice = [](std::string_view index, std::string_view text, std::string_view type = "") {
    return (type.empty() ? std::string() : "event: " + std::string(type) + "\n") +
           "data: {\"choices\":[{\"index\":" + std::string(index) + ",\"delta\":{\"content\":\"" +
           std::string(text) + "\"}}]}\n\n";
  };
  for (const auto& body : {choice("0.0", a) + choice("1.0", "Hello") + choice("0.0", b),
                           choice("\"0\"", a) + choice("\"1\"", "Hello") + choice("\"0\"", b),
                           choice("0", a, "response.a") + choice("1", "Hello", "response.b") +
                               choice("0", b, "response.b")}) {
    expect_cut(*e, body, a);
  }
}

// JavaScript reads choices 0 and "0" as one, a Python dict keeps them apart: an origin that
// alternates them hides the secret from a join of either kind alone.
TEST(redaction_event_guard, AChoiceNumberedAsAStringIsAlsoJoinedApartFromTheNumber) {
  const auto e = secret_engine();
  const std::string a(kSecret.substr(0, 15)), b(kSecret.substr(15));
  auto choice = [](std::string_view index, std::string_view text) {
    return "data: {\"choices\":[{\"index\":" + std::string(index) + ",\"delta\":{\"content\":\"" +
           std::string(text) + "\"}}]}\n\n";
  };
  for (const auto& body : {choice("0", a) + choice("\"0\"", "Hello") + choice("0", b),
                           choice("\"0\"", a) + choice("0", "Hello") + choice("\"0\"", b),
                           choice("0", a) + choice("\"0\"", "Hello") + choice("0.0", b)}) {
    expect_cut(*e, body, a);
  }
  // A start that goes on in neither reading is released unchanged.
  event_guard g(*e, framing::events);
  std::string out;
  const std::string body = choice("\"0\"", a) + choice("0", "Hello") + choice("\"0\"", " world");
  ASSERT_TRUE(g.write(body, out));
  ASSERT_TRUE(g.finish(out));
  EXPECT_EQ(out, body);
}

TEST(redaction_event_guard, DeepJsonIsReadAsDeepAsPythonReadsIt) {
  const auto e = secret_engine();
  auto nested = [](std::size_t depth, std::string_view text) {
    return "data: " + std::string(depth, '[') + "\"" + std::string(text) + "\"" +
           std::string(depth, ']') + "\n\n";
  };
  {
    // 500 levels: read (a split secret is still caught), and text that is no secret flows
    // (text that ends in no start of a spelling: a path this long is kept only to cut).
    const std::string body = nested(500, "Hello!") + nested(500, " world!");
    event_guard g(*e, framing::events);
    std::string out;
    ASSERT_TRUE(g.write(body, out)) << g.why();
    ASSERT_TRUE(g.finish(out));
    EXPECT_EQ(out, body);
    expect_cut(*e, nested(500, kSecret.substr(0, 15)) + nested(500, kSecret.substr(15)),
               std::string(kSecret.substr(0, 15)));
  }
  // Deeper than a client's parser goes: not passed on unread.
  event_guard g(*e, framing::events);
  std::string out;
  EXPECT_FALSE(g.write(nested(1500, "Hello"), out));
}

TEST(redaction_event_guard, JsonWithACommentIsReadAsTextToo) {
  // A client that does not parse JSON joins the data as text, the comment included.
  const auto e = secret_engine();
  const std::string a(kSecret.substr(0, 15)), b(kSecret.substr(15));
  event_guard g(*e, framing::events);
  std::string out;
  EXPECT_FALSE(g.write("data: {\"t\":\"x\"}//" + a + "\n\ndata: " + b + "\n\n", out));
  EXPECT_EQ(out.find(a), std::string::npos);
}

TEST(redaction_event_guard, AKeyOverItsBoundIsNotKeptButCut) {
  // A join's key is at most 256 bytes, however long the event type or the keys: one that would be
  // longer and has to be kept cuts the body; one that does not is never built.
  const auto e = secret_engine();
  const std::string type(4096, 't');
  const std::string a(kSecret.substr(0, 15)), b(kSecret.substr(15));
  {
    event_guard g(*e, framing::events);
    std::string out;
    // (Text that ends in no start of a spelling: "hello" ends in one of the base32 one's.)
    const std::string plain = "event: " + type + "\ndata: {\"c\":\"hello!\"}\n\n";
    ASSERT_TRUE(g.write(plain + plain, out));
    EXPECT_EQ(out, plain + plain);
  }
  event_guard g(*e, framing::events);
  std::string out;
  EXPECT_FALSE(g.write("event: " + type + "\ndata: {\"c\":\"" + a + "\"}\n\n", out));
  EXPECT_EQ(out, "");
}

TEST(redaction_event_guard, AnEventStreamLabelledOtherwiseIsGuardedToo) {
  // The model APIs' SDKs parse an event stream whatever its Content-Type.
  const auto e = secret_engine();
  for (const char* type : {"text/plain", "application/json", ""}) {
    boost::beast::http::fields head;
    if (*type) head.set(boost::beast::http::field::content_type, type);
    const auto plan = plan_response(head);
    const std::string body = delta("key: ") + delta(kSecret.substr(0, 17)) +
                             delta(kSecret.substr(17)) + "data: [DONE]\n\n";
    for (std::size_t step : {1u, 64u, 4096u}) {
      response_body rb(e, plan, 1 << 20, "", kResponseBytes);
      std::string out;
      bool ok = true;
      for (std::size_t i = 0; i < body.size() && ok; i += step)
        ok = rb.write(std::string_view(body).substr(i, step), out);
      ok = ok && rb.finish(out);
      EXPECT_FALSE(ok) << type << " " << step;
      EXPECT_EQ(out.find(kSecret.substr(0, 8)), std::string::npos) << type << " " << step;
    }
  }
}

TEST(redaction_event_guard, NdjsonRecordsAreReadAsEvents) {
  // Ollama's stream: one JSON record a line, the answer a few characters per record.
  const auto e = secret_engine();
  auto record = [](std::string_view text) {
    return "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"" +
           std::string(text) + "\"},\"done\":false}\n";
  };
  event_guard g(*e, framing::lines);
  std::string out;
  ASSERT_TRUE(g.write(record("key: ") + record(kSecret.substr(0, 9)), out));
  EXPECT_EQ(out, record("key: "));
  EXPECT_FALSE(g.write(record(kSecret.substr(9)), out));
  EXPECT_EQ(out.find(kSecret.substr(0, 9)), std::string::npos);
  // A start that does not go on is released, byte for byte.
  event_guard h(*e, framing::lines);
  out.clear();
  const std::string body = record("sk-live-AIRPORT") + record(" codes") + "not json\n";
  ASSERT_TRUE(h.write(body, out));
  ASSERT_TRUE(h.finish(out));
  EXPECT_EQ(out, body);
}

TEST(redaction_event_guard, AResponseBodyCutsAnEventStreamWhateverItsChunks) {
  const auto e = secret_engine();
  boost::beast::http::fields head;
  head.set(boost::beast::http::field::content_type, "text/event-stream");
  const auto plan = plan_response(head);
  ASSERT_EQ(plan.treatment, body_treatment::redact);
  const std::string body = delta("key: ") + delta(kSecret.substr(0, 17)) +
                           delta(kSecret.substr(17)) + "data: [DONE]\n\n";
  for (std::size_t step : {1u, 7u, 64u, 4096u}) {
    response_body rb(e, plan, 1 << 20, "", kResponseBytes);
    std::string out;
    bool ok = true;
    for (std::size_t i = 0; i < body.size() && ok; i += step)
      ok = rb.write(std::string_view(body).substr(i, step), out);
    ok = ok && rb.finish(out);
    EXPECT_FALSE(ok) << step;
    EXPECT_TRUE(rb.unredactable()) << step;
    EXPECT_EQ(out.find(kSecret.substr(0, 8)), std::string::npos) << step;
  }
  // The secret whole in one event is redacted there, and the stream goes on.
  response_body rb(e, plan, 1 << 20, "", kResponseBytes);
  std::string out;
  ASSERT_TRUE(rb.write(delta(kSecret) + delta("after"), out));
  ASSERT_TRUE(rb.finish(out));
  EXPECT_EQ(out, delta("[REDACTED:secret:api]") + delta("after"));
}

}  // namespace
}  // namespace airlock::filters::redaction
