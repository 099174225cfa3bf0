#include "core/ascii.hpp"
#include "filters/redaction/builtin.hpp"
#include "filters/redaction/engine.hpp"
#include "filters/redaction/escape_guard.hpp"
#include "filters/redaction/html_reference.hpp"
#include "filters/redaction/response_body.hpp"
#include "policy/token.hpp"

#include <boost/beast/http/fields.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

// A secret behind JSON escapes, HTML character references, percent-encoding or the line breaks
// that wrap encoded text (escape_guard.hpp): the body is cut before any of it goes on, whatever
// the pieces; text that only starts like a secret, or has no escapes, passes unchanged.
namespace airlock::filters::redaction {
namespace {

// limits.response_bytes, larger than any body here.
constexpr std::uint64_t kResponseBytes = std::uint64_t{1} << 30;

constexpr std::string_view kSecret = "sk-live-ESCAPEGUARD-0123456789abcdefXYZ";

std::shared_ptr<const engine> secret_engine() {
  auto built = engine::build(*builtin_redactor("email"), {{"api", std::string(kSecret)}});
  EXPECT_TRUE(built.errors.empty());
  return built.compiled;
}

// The guard over `text` in pieces of `step` bytes: whether it passed, and what went on.
bool run(const engine& e, std::string_view text, std::size_t step, std::string& out) {
  escape_guard g(e);
  for (std::size_t i = 0; i < text.size(); i += step)
    if (!g.write(text.substr(i, step), out)) return false;
  g.finish(out);
  return true;
}

std::string json_u(std::string_view s, std::size_t every) {
  std::string out;
  char buf[8];
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i % every == 0) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(s[i]));
      out += buf;
    } else {
      out += s[i];
    }
  }
  return out;
}

TEST(redaction_escape_guard, ASecretBehindEscapesIsCutWhateverThePieces) {
  const auto e = secret_engine();
  const std::string s(kSecret);
  const std::string spelled[] = {
      json_u(s, 1),                                        // every byte \u-escaped
      json_u(s, 7),                                        // some
      "\\u0073" + s.substr(1),                             // the first only
      "&#115;&#x6B;" + s.substr(2),                        // HTML references
      "&#115" + s.substr(1),                               // no ';'
      "%73%6B%2D" + s.substr(3),                           // percent-encoded
      s.substr(0, 10) + "\\u0043" + s.substr(11),          // an escape mid-way
      "&#" + std::string(40, '0') + "115;" + s.substr(1),  // leading zeros (WHATWG reads any)
      s.substr(0, 7) + "&#45;" + s.substr(8),              // '-' as a reference
      // Escaped twice over: each layer read as a client that decodes both reads it.
      "\\u0026#115;" + s.substr(1),  // HTML inside JSON, '&' escaped as Go's JSON does
      "\\u002573" + s.substr(1),     // a URL inside JSON
      "%26%23115%3B" + s.substr(1),  // HTML inside a URL
      "&#37;73" + s.substr(1),       // a URL inside HTML
      "%2573%256B" + s.substr(2),    // a URL inside a URL
      "\\\\u0073" + s.substr(1),     // JSON inside a JSON string
      "\\x73" + s.substr(1),         // JavaScript
      "\\u{73}\\u{00006B}" + s.substr(2),
  };
  for (const auto& body : spelled) {
    const std::string text = "{\"echo\":\"" + body + "\",\"after\":1}";
    for (std::size_t step : {1u, 3u, 16u, 4096u}) {
      std::string out;
      EXPECT_FALSE(run(*e, text, step, out)) << body << " " << step;
      EXPECT_EQ(out.find(body.substr(0, 6)), std::string::npos) << body << " " << step;
      EXPECT_LT(out.size(), text.find(body) + 1) << body << " " << step;
    }
  }
}

TEST(redaction_escape_guard, ASecretAfterALoneHighSurrogateIsCut) {
  // A client's string holds the lone half, then the secret: the half may go on, none of the
  // secret does.
  const auto e = secret_engine();
  const std::string s(kSecret);
  for (const std::string& after : {"\\u0073" + s.substr(1), "%73" + s.substr(1), s}) {
    const std::string text = "{\"echo\":\"\\ud800" + after + "\"}";
    for (std::size_t step : {1u, 5u, 4096u}) {
      std::string out;
      EXPECT_FALSE(run(*e, text, step, out)) << text << " " << step;
      EXPECT_LE(out.size(), text.find(after)) << text << " " << step;
    }
  }
}

TEST(redaction_escape_guard, AWideSecretBehindJsonNulEscapesIsCut) {
  // UTF-16 written into a JSON string: every other byte \u0000 (or JavaScript's \x00, \u{0}),
  // which a JSON client reads as a NUL, not as U+FFFD as an HTML reference to 0 is read.
  const auto e = secret_engine();
  for (std::string_view nul : {"\\u0000", "\\x00", "\\u{0}"}) {
    std::string text = "{\"v\":\"";
    for (char ch : kSecret) {
      text += ch;
      text += nul;
    }
    text += "\"}";
    for (std::size_t step : {1u, 5u, 4096u}) {
      std::string out;
      EXPECT_FALSE(run(*e, text, step, out)) << nul << " " << step;
      EXPECT_EQ(out.find(kSecret.substr(0, 1)), std::string::npos) << nul << " " << step;
    }
  }
  // An HTML reference to 0 is U+FFFD: no NUL, no secret.
  std::string html;
  for (char ch : kSecret.substr(0, 20)) {
    html += ch;
    html += "&#0;";
  }
  std::string out;
  EXPECT_TRUE(run(*e, html, 4096, out));
  EXPECT_EQ(out, html);
}

TEST(redaction_escape_guard, NamedReferencesToItsPunctuationAreReadToo) {
  // "&sol;" is "/", "&plus;" "+", "&equals;" "=", "&lowbar;" "_" (WHATWG HTML 13.5); the
  // legacy "&amp" needs no ';' and is read at the front of longer letters ("&ampx").
  const std::string secret = "rs-ESCAPE/guard+0123=abc_def&x";
  auto built = engine::build(*builtin_redactor("email"), {{"api", secret}});
  ASSERT_TRUE(built.errors.empty());
  const std::string spelled = "rs-ESCAPE&sol;guard&plus;0123&equals;abc&lowbar;def&ampx";
  for (std::size_t step : {1u, 4u, 4096u}) {
    std::string out;
    EXPECT_FALSE(run(*built.compiled, "<p>" + spelled + "</p>", step, out)) << step;
    EXPECT_EQ(out.find("rs-ESCAPE"), std::string::npos) << step;
  }
  // "&fjlig;" is two letters.
  auto fj = engine::build(*builtin_redactor("email"), {{"api", "sk-live-fjORD-0123456789"}});
  std::string cut;
  EXPECT_FALSE(run(*fj.compiled, "key: sk-live-&fjlig;ORD-0123456789.", 5, cut));
  EXPECT_EQ(cut.find("sk-live"), std::string::npos);
  // A name that is not one, or a letter after one that needs its ';', is read as written.
  std::string out;
  const std::string near = "rs-ESCAPE&solx;guard+0123=abc_def&x rs-ESCAPE&sol guard";
  EXPECT_TRUE(run(*built.compiled, near, 3, out));
  EXPECT_EQ(out, near);
}

TEST(redaction_escape_guard, AReferenceOfEndlessDigitsIsCut) {
  const auto e = secret_engine();
  std::string out;
  const std::string zeros = "ok &#" + std::string(kMaxReferenceDigits + 1, '0') + "115;";
  EXPECT_FALSE(run(*e, zeros, 512, out));
  EXPECT_LT(out.size(), 4096u);  // (what came before the reference at most)
}

// `text` with `line_break` after every `width` characters, as an encoder wraps its output.
std::string wrapped(std::string_view text, std::size_t width, std::string_view line_break) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += width) {
    if (i > 0) out += line_break;
    out += text.substr(i, width);
  }
  return out;
}

std::string hex(std::string_view in) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : in) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

TEST(redaction_escape_guard, AnEncodedSecretThatALineWrapCutsIsCut) {
  // MIME wraps base64 at 76 characters with CRLF (RFC 2045 section 6.8), PEM at 64 with LF,
  // `xxd -p` hex at 60; a decoder skips the breaks, so the spelling is read across them. Every
  // offset of the value in the encoded data, so every split of its spelling.
  const auto e = secret_engine();
  const std::string s(kSecret);
  std::vector<std::pair<std::string, std::string>> bodies;
  for (std::size_t lead = 0; lead < 40; ++lead) {
    const std::string data = std::string(lead, 'x') + s + " trailing data";
    const std::string b64 = policy::base64_encode(data);
    bodies.emplace_back(wrapped(b64, 76, "\r\n"), "MIME, lead " + std::to_string(lead));
    bodies.emplace_back(wrapped(b64, 64, "\n"), "PEM, lead " + std::to_string(lead));
    bodies.emplace_back(wrapped(hex(data), 60, "\n"), "xxd -p, lead " + std::to_string(lead));
    // In a JSON string the breaks are escapes of their own: "MIIB...\nAbC..."
    bodies.emplace_back("{\"pem\":\"" + wrapped(b64, 64, "\\n") + "\"}",
                        "JSON, lead " + std::to_string(lead));
    // Indented after each break: a PEM in a YAML block scalar, base64 in a tab-indented file.
    bodies.emplace_back("tls:\n  key: |\n    " + wrapped(b64, 64, "\n    ") + "\n",
                        "YAML, lead " + std::to_string(lead));
    bodies.emplace_back("\t\t" + wrapped(hex(data), 60, "\r\n\t\t"),
                        "tabs, lead " + std::to_string(lead));
  }
  for (const auto& [body, what] : bodies) {
    for (std::size_t step : {1u, 7u, 4096u}) {
      std::string out;
      EXPECT_FALSE(run(*e, body, step, out)) << what << " " << step;
      EXPECT_EQ(out.find(s.substr(0, 4)), std::string::npos) << what;
    }
  }
}

TEST(redaction_escape_guard, OnlyABreakInsideEncodedTextIsReadAsNothing) {
  // A blank line ends a MIME part: the halves of a spelling on either side of one are not
  // joined, nor across a break after other text or more indentation than the guard reads.
  // Wrapped encoded data without the secret, and text with line breaks, pass unchanged.
  const auto e = secret_engine();
  const std::string b64 = policy::base64_encode(std::string(kSecret));
  const std::string half_a = b64.substr(0, 30), half_b = b64.substr(30);
  const std::string texts[] = {
      half_a + "\n\n" + half_b,
      half_a + "\r\n\r\n" + half_b,
      half_a + "\n  \n  " + half_b,  // a blank line of blanks
      half_a + " \n" + half_b,       // a break after other text
      half_a + "\n" + std::string(core::kMaxWrapIndent + 1, ' ') + half_b,  // past the bound
      wrapped(policy::base64_encode(std::string(300, 'q') + "other data"), 76, "\r\n"),
      "line one\nline two\r\n{\"a\": 1}\n",
  };
  for (const auto& text : texts) {
    for (std::size_t step : {1u, 3u, 4096u}) {
      std::string out;
      EXPECT_TRUE(run(*e, text, step, out)) << text;
      EXPECT_EQ(out, text) << text << " " << step;
    }
  }
}

TEST(redaction_escape_guard, TextThatOnlyStartsLikeASecretPassesUnchanged) {
  const auto e = secret_engine();
  const std::string texts[] = {
      R"({"a":"line\nbreak \"quoted\" \u00e9t\u00e9 &amp; &#x263A; 100% off %zz"})",
      "\\u0073k-live-ESCAPE and no more",  // a start, then not the secret
      "&#115;k-live- &#",                  // a start, then an unfinished reference
      "%73k-live-ESCAPEGUARD-0123",        // most of it, then the end of the body
      "\\ud83d\\ude00 \\ud800 lone \\",    // surrogates, a lone one, a trailing backslash
  };
  for (const auto& text : texts) {
    for (std::size_t step : {1u, 2u, 5u, 4096u}) {
      std::string out;
      EXPECT_TRUE(run(*e, text, step, out)) << text;
      EXPECT_EQ(out, text) << text << " " << step;
    }
  }
}

TEST(redaction_escape_guard, WithoutSecretsTheBytesPassAsTheyCome) {
  auto built = engine::build(*builtin_redactor("email"), {});
  ASSERT_TRUE(built.errors.empty());
  escape_guard g(*built.compiled);
  std::string out;
  ASSERT_TRUE(g.write("\\u0073k-live-", out));
  EXPECT_EQ(out, "\\u0073k-live-");
}

TEST(redaction_escape_guard, AResponseBodyCutsAJsonAnswerThatEscapesTheSecret) {
  boost::beast::http::fields head;
  head.set(boost::beast::http::field::content_type, "application/json");
  const auto plan = plan_response(head);
  const std::string body = "{\"echo\":\"" + json_u(kSecret, 3) + "\"}";
  for (std::size_t step : {1u, 9u, 100000u}) {
    response_body rb(secret_engine(), plan, 1 << 20, "", kResponseBytes);
    std::string out;
    bool ok = true;
    for (std::size_t i = 0; i < body.size() && ok; i += step)
      ok = rb.write(std::string_view(body).substr(i, step), out);
    ok = ok && rb.finish(out);
    EXPECT_FALSE(ok) << step;
    EXPECT_TRUE(rb.unredactable()) << step;
    EXPECT_EQ(out.find("\\u0073"), std::string::npos) << step;
  }
}

}  // namespace
}  // namespace airlock::filters::redaction
