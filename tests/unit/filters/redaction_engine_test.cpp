#include "filters/redaction/engine.hpp"

#include "core/ascii.hpp"
#include "filters/redaction/builtin.hpp"
#include "filters/redaction/engine_impl.hpp"
#include "filters/redaction/secret_spellings.hpp"
#include "filters/redaction/stream.hpp"
#include "policy/token.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include <string>
#include <thread>
#include <vector>

namespace airlock::filters::redaction {
namespace {

const std::string kValue = "TopSecret/Value\"with<odd>&chars 42";

bool mentions_value(const std::vector<std::string>& errors) {
  for (const auto& e : errors)
    if (e.find("TopSecret") != std::string::npos) return true;
  return false;
}

TEST(RedactionEngine, BuildErrorsNameTheCulpritNeverTheValue) {
  auto r = engine::build({custom_redactor("bad", "([a-z]", ""), custom_redactor("empty", "x*", ""),
                          custom_redactor("bad name!", "abc", ""), custom_redactor("", "abc", "")},
                         {{"s1", ""}, {"s2", std::string(20000, 'x') + kValue}, {"s 3", kValue}});
  EXPECT_EQ(r.compiled, nullptr);
  ASSERT_EQ(r.errors.size(), 7u);
  EXPECT_NE(r.errors[0].find("'s1' is empty"), std::string::npos);
  EXPECT_NE(r.errors[1].find("'s2' is longer than"), std::string::npos);
  EXPECT_NE(r.errors[2].find("'s 3'"), std::string::npos);
  EXPECT_NE(r.errors[3].find("'bad': invalid pattern: missing )"), std::string::npos);
  EXPECT_NE(r.errors[4].find("'empty': pattern matches the empty string"), std::string::npos);
  EXPECT_NE(r.errors[5].find("'bad name!'"), std::string::npos);
  EXPECT_FALSE(mentions_value(r.errors));
}

TEST(RedactionEngine, LabelsAndNamedHits) {
  auto r = engine::build(*builtin_redactor("email"), {{"api", kValue}, {"api", "other-value-1"}});
  ASSERT_TRUE(r.errors.empty());
  const engine& e = *r.compiled;
  ASSERT_EQ(e.label_count(), 2u);  // both secrets named "api" share one label
  EXPECT_EQ(e.label_name(0), "secret:api");
  EXPECT_EQ(e.label_name(1), "email");
  EXPECT_EQ(e.label_name(7), "");
  hit_counts hits;
  EXPECT_EQ(e.redact("a " + kValue + " b other-value-1 c x@example.com", &hits),
            "a [REDACTED:secret:api] b [REDACTED:secret:api] c [REDACTED:email]");
  auto named = e.named(hits);
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].first, "secret:api");
  EXPECT_EQ(named[0].second, 2u);
  EXPECT_EQ(named[1].first, "email");
  EXPECT_EQ(named[1].second, 1u);
}

TEST(RedactionEngine, CustomRedactorReplacementAndCaptureGroup) {
  auto r = engine::build({custom_redactor("ticket", R"(ticket=(TCK-[0-9]{6}))", "<ticket>"),
                          {.name = "internal-host",
                           .pattern = R"([a-z0-9-]+\.corp\.example)",
                           .replacement = "",
                           .max_length = 64}},
                         {});
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(r.compiled->redact("see ticket=TCK-123456 on db-1.corp.example."),
            "see ticket=<ticket> on [REDACTED:internal-host].");
}

TEST(RedactionEngine, SecretsAreFoundInTheirEncodedSpellings) {
  auto r = engine::build({}, {{"api", kValue}});
  ASSERT_TRUE(r.errors.empty());
  for (const std::string& spelling : secret_spellings(kValue)) {
    EXPECT_EQ(r.compiled->redact("<" + spelling + ">"), "<[REDACTED:secret:api]>") << spelling;
  }
  const auto sp = secret_spellings(kValue);
  EXPECT_NE(std::find(sp.begin(), sp.end(), "TopSecret/Value\\\"with<odd>&chars 42"), sp.end());
  EXPECT_NE(std::find(sp.begin(), sp.end(), "TopSecret\\/Value\\\"with<odd>&chars 42"), sp.end());
  EXPECT_NE(
      std::find(sp.begin(), sp.end(), "TopSecret/Value\\\"with\\u003codd\\u003e\\u0026chars 42"),
      sp.end());
  EXPECT_NE(std::find(sp.begin(), sp.end(), "TopSecret%2FValue%22with%3Codd%3E%26chars%2042"),
            sp.end());
  // The forms Python's quote() and quote_plus() write, and JavaScript's encodeURI().
  EXPECT_NE(std::find(sp.begin(), sp.end(), "TopSecret/Value%22with%3Codd%3E%26chars%2042"),
            sp.end());
  EXPECT_NE(std::find(sp.begin(), sp.end(), "TopSecret%2FValue%22with%3Codd%3E%26chars+42"),
            sp.end());
  EXPECT_NE(std::find(sp.begin(), sp.end(), "TopSecret/Value%22with%3Codd%3E&chars%2042"),
            sp.end());
  EXPECT_EQ(secret_spellings("plain-token_1.2~").size(), 1u);

  engine_options raw_only;
  raw_only.secret_spellings = false;
  auto raw = engine::build({}, {{"api", kValue}}, raw_only);
  ASSERT_TRUE(raw.errors.empty());
  EXPECT_EQ(raw.compiled->pattern_count(), 1u);
}

TEST(RedactionEngine, SecretsInBase64AtAnyOffset) {
  const std::string value = "tok-Ab3+dEf/GhI=jKl0123456789zz";
  auto r = engine::build({}, {{"api", value}});
  ASSERT_TRUE(r.errors.empty());
  // Inside a longer base64 text, after 0, 1 or 2 bytes of something else, in both alphabets:
  // what is left around the marker decodes to at most a byte of the value at each side.
  for (std::size_t lead = 0; lead < 3; ++lead) {
    for (bool url : {false, true}) {
      const std::string before(lead + 6, 'x');
      std::string enc = policy::base64_encode(before + value + "trailing bytes");
      if (url) {
        std::replace(enc.begin(), enc.end(), '+', '-');
        std::replace(enc.begin(), enc.end(), '/', '_');
      }
      const std::string out = r.compiled->redact(enc);
      const std::size_t at = out.find("[REDACTED:secret:api]");
      ASSERT_NE(at, std::string::npos) << lead << url << " " << out;
      EXPECT_LE(at, (before.size() + 2) * 4 / 3 + 1) << out;
      EXPECT_LE(out.size() - at - 21, std::string("trailing bytes").size() * 4 / 3 + 4) << out;
    }
  }
  EXPECT_EQ(r.compiled->redact("v=" + policy::base64_encode(value)), "v=[REDACTED:secret:api]");
  // Too short to spell in base64 without matching by chance: not spelled so.
  EXPECT_TRUE(secret_base64_spellings("short-val").empty());
}

TEST(RedactionEngine, SecretsInHexAndBase32) {
  // An echo that hands a header back as a hex dump or in base32, alone or inside longer
  // encoded data at any offset, either case (red team 21: these went out as they came).
  const std::string value = "tok-Ab3+dEf/GhI=jKl0123456789zz";
  auto r = engine::build({}, {{"api", value}});
  ASSERT_TRUE(r.errors.empty());
  std::string hex;
  for (char ch : "x-api-key: " + value + "\n") {
    static constexpr char kHex[] = "0123456789abcdef";
    hex += kHex[static_cast<unsigned char>(ch) >> 4];
    hex += kHex[static_cast<unsigned char>(ch) & 0xf];
  }
  for (const std::string& dump : {hex, core::upper(hex)}) {
    const std::string out = r.compiled->redact(dump);
    EXPECT_NE(out.find("[REDACTED:secret:api]"), std::string::npos) << out;
  }
  // One separator between the bytes, as Python's bytes.hex(' ') or hex(':') and Go's "% x"
  // write them on one line; what is left of the dump around the value is only its neighbours.
  for (const char separator : {' ', ':', '-'}) {
    std::string spaced;
    for (std::size_t i = 0; i < hex.size(); i += 2)
      spaced.append(i > 0 ? 1 : 0, separator).append(hex, i, 2);
    for (const std::string& dump : {spaced, core::upper(spaced)}) {
      const std::string out = r.compiled->redact(dump);
      EXPECT_NE(out.find("[REDACTED:secret:api]"), std::string::npos) << out;
      EXPECT_LE(out.size(), std::string("[REDACTED:secret:api]").size() + 3 * 13) << out;
    }
  }
  static constexpr char kBase32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  for (std::size_t lead = 0; lead < 5; ++lead) {
    // Base32 of `lead` bytes, the value and a tail, by the book (RFC 4648 section 6).
    const std::string in = std::string(lead, '#') + value + "tail";
    std::string enc;
    std::uint64_t bits = 0;
    int held = 0;
    for (char ch : in) {
      bits = bits << 8 | static_cast<unsigned char>(ch);
      for (held += 8; held >= 5; held -= 5)
        enc += kBase32[(bits >> (held - 5)) & 31];
    }
    for (const std::string& text : {enc, core::lower(enc)}) {
      const std::string out = r.compiled->redact("seed=" + text);
      EXPECT_NE(out.find("[REDACTED:secret:api]"), std::string::npos) << lead << " " << out;
    }
  }
  // Alone, padded, as Python's base64.b32encode writes it.
  const auto known = secret_hex_base32_spellings("example-secret-1");
  EXPECT_NE(std::find(known.begin(), known.end(), "MV4GC3LQNRSS243FMNZGK5BNGE======"), known.end());
  EXPECT_TRUE(secret_hex_base32_spellings("short-val").empty());
}

TEST(RedactionEngine, SecretsInUtf16AndUtf32) {
  // A value written out wide, either byte order (a client that drops the NUL bytes, or decodes
  // the text, reads it back).
  const std::string value = "tok-Ab3+dEf/GhI=jKl0123456789zz";
  auto r = engine::build({}, {{"api", value}});
  ASSERT_TRUE(r.errors.empty());
  for (std::size_t width : {2u, 4u}) {
    for (bool big_endian : {false, true}) {
      std::string wide;
      for (char ch : "key=" + value + ";") {
        std::string unit(width, '\0');
        unit[big_endian ? width - 1 : 0] = ch;
        wide += unit;
      }
      const std::string out = r.compiled->redact("\x01\x02" + wide);
      EXPECT_NE(out.find("[REDACTED:secret:api]"), std::string::npos) << width << big_endian;
      EXPECT_EQ(out.find(std::string("t\0o\0k", 5)), std::string::npos);
    }
  }
  const auto known = secret_wide_spellings("ab1");
  ASSERT_EQ(known.size(), 2u);
  EXPECT_EQ(known[0], std::string("a\0b\0"
                                  "1",
                                  5));
  EXPECT_EQ(known[1], std::string("a\0\0\0b\0\0\0"
                                  "1",
                                  9));
  EXPECT_TRUE(secret_wide_spellings("caf\xc3\xa9-value").empty());
}

TEST(RedactionEngine, SecretsEncodedTwiceOrAsAPathSegment) {
  const std::string value = "tok-Ab3+dEf/GhI=jKl0123456789zz";
  auto r = engine::build({}, {{"api", value}});
  ASSERT_TRUE(r.errors.empty());
  // A redirect's "next=" carries a URL that carries the value: percent-encoded twice.
  EXPECT_EQ(r.compiled->redact("next=tok-Ab3%252BdEf%252FGhI%253DjKl0123456789zz"),
            "next=[REDACTED:secret:api]");
  EXPECT_EQ(r.compiled->redact("next=tok-Ab3%252bdEf%252fGhI%253djKl0123456789zz"),
            "next=[REDACTED:secret:api]");
  // Go's url.PathEscape, and a path segment that keeps every pchar but '/'.
  EXPECT_EQ(r.compiled->redact("/p/tok-Ab3+dEf%2FGhI=jKl0123456789zz"), "/p/[REDACTED:secret:api]");
}

TEST(RedactionEngine, SecretsWithBinaryBytesAndRegexSyntax) {
  const std::string odd = std::string("a.b*c(d)[e]\\f") + '\0' + "\xff\xfe|^$";
  auto r = engine::build({}, {{"odd", odd}});
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(r.compiled->redact("x" + odd + "y"), "x[REDACTED:secret:odd]y");
  EXPECT_EQ(r.compiled->redact("xa-b*c(d)[e]\\fy"), "xa-b*c(d)[e]\\fy");  // '.' is literal
}

// Many secrets over many different bytes: the prefilter compares at most 16 anchor bytes per
// pass, the rest of the secrets go through the set. All are redacted either way.
TEST(RedactionEngine, ManySecretsSomeServedByThePrefilterSomeByTheSet) {
  std::vector<literal_secret> secrets;
  std::string text;
  const std::string bytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd";  // no byte shared
  for (int i = 0; i < 40; ++i) {
    const std::string v(8, bytes[static_cast<std::size_t>(i)]);
    secrets.push_back({"s" + std::to_string(i), v});
    text += "<" + v + ">";
  }
  auto r = engine::build({}, secrets);
  ASSERT_TRUE(r.errors.empty());
  const auto& im = r.compiled->internals();
  std::size_t served = 0;
  for (const auto& c : im.redactors)
    served += c.prefiltered;
  EXPECT_GT(served, 0u);
  EXPECT_LT(served, im.redactors.size());
  ASSERT_NE(im.set, nullptr);
  hit_counts hits;
  const std::string out = r.compiled->redact(text, &hits);
  std::string expected;
  for (int i = 0; i < 40; ++i)
    expected += "<[REDACTED:secret:s" + std::to_string(i) + "]>";
  EXPECT_EQ(out, expected);
  EXPECT_EQ(hits, hit_counts(40, 1));
}

TEST(RedactionEngine, OverlapGrowsToTheLongestSecret) {
  // A long random-looking value, like a key file's contents. (A run of one repeated letter
  // against a text of that letter is RE2's worst case: every offset is a live match start.)
  std::string big;
  std::uint32_t x = 12345;
  while (big.size() < 12000) {
    x = x * 1103515245u + 12345u;
    big += "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(x >> 16) % 64];
  }
  auto r = engine::build({}, {{"big", big + "!"}});
  ASSERT_TRUE(r.errors.empty());
  EXPECT_GE(r.compiled->overlap(), big.size() + 1);
  stream s(r.compiled);
  std::string out;
  s.write(std::string(5000, '.') + big.substr(0, 7000), out);
  EXPECT_EQ(out, std::string(5000, '.').substr(0, out.size()));
  s.write(big.substr(7000) + "!" + std::string(30000, '.'), out);
  s.finish(out);
  EXPECT_EQ(out, std::string(5000, '.') + "[REDACTED:secret:big]" + std::string(30000, '.'));
}

TEST(RedactionEngine, OverlapsAreMergedSoNoSecretLeaksInPart) {
  // "cd-SECRET": the custom pattern ends inside the secret; the union covers both.
  auto r = engine::build({{.name = "c", .pattern = "cd-SEC", .replacement = "", .max_length = 6}},
                         {{"s", "SECRET"}});
  ASSERT_TRUE(r.errors.empty());
  hit_counts hits;
  EXPECT_EQ(r.compiled->redact("ab cd-SECRETxy", &hits), "ab [REDACTED:c]xy");
  EXPECT_EQ(hits, (hit_counts{1, 1}));
  // Same start: the longer span names it; same span: secrets come first.
  auto t =
      engine::build({{.name = "short", .pattern = "SEC", .replacement = "", .max_length = 3},
                     {.name = "same", .pattern = "SECRET", .replacement = "", .max_length = 6}},
                    {{"s", "SECRET"}});
  ASSERT_TRUE(t.errors.empty());
  EXPECT_EQ(t.compiled->redact("SECRET"), "[REDACTED:secret:s]");
  EXPECT_EQ(t.compiled->redact("SECRE"), "[REDACTED:short]RE");
}

TEST(RedactionEngine, DefaultOverlapCoversA4096BitKeyInJson) {
  auto r = engine::build(*builtin_redactor("pem-private-key"), {});
  ASSERT_TRUE(r.errors.empty());
  std::string body;
  for (int i = 0; i < 50; ++i)  // 50 lines of 64: a 4096-bit RSA key is about that
    body += "MIIJQgIBADANBgkqhkiG9w0BAQEFAASCCSwwggkoAgEAAoICAQDJ0123456789ab\\n";
  const std::string key =
      "-----BEGIN RSA PRIVATE "
      "KEY-----\\n" +
      body +
      "-----END RSA PRIVATE "
      "KEY-----";
  const std::string doc = "{\"k\":\"" + key + "\\n\"}";
  EXPECT_EQ(r.compiled->redact(doc), "{\"k\":\"[REDACTED:pem-private-key]\\n\"}");
  // In 1 KiB chunks too.
  stream s(r.compiled);
  std::string out;
  for (std::size_t p = 0; p < doc.size(); p += 1024)
    s.write(doc.substr(p, 1024), out);
  s.finish(out);
  EXPECT_EQ(out, "{\"k\":\"[REDACTED:pem-private-key]\\n\"}");
}

TEST(RedactionEngine, HeaderValues) {
  auto r =
      engine::build(all_builtin_redactors(), {{"gh", "ghp_0123456789abcdefghijABCDEFGHIJ012345"}});
  ASSERT_TRUE(r.errors.empty());
  hit_counts hits;
  EXPECT_EQ(
      redact_header_value(*r.compiled, "Bearer ghp_0123456789abcdefghijABCDEFGHIJ012345", &hits),
      "Bearer [REDACTED:secret:gh]");
  EXPECT_EQ(redact_header_value(*r.compiled, "text/html; charset=utf-8"),
            "text/html; charset=utf-8");
  EXPECT_EQ(redact_header_value(*r.compiled, "<mailto:ops@example.com>"),
            "<mailto:[REDACTED:email]>");
  EXPECT_EQ(redact_header_value(*r.compiled, ""), "");
}

TEST(RedactionEngine, SharedAcrossThreads) {
  auto r = engine::build(all_builtin_redactors(), {{"api", kValue}});
  ASSERT_TRUE(r.errors.empty());
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += "row " + std::to_string(i) + " ops" + std::to_string(i) + "@example.com " + kValue +
            " 4111 1111 1111 1111\n";
  const std::string expected = r.compiled->redact(text);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        stream s(r.compiled);
        std::string out;
        for (std::size_t p = 0; p < text.size(); p += 97 + t)
          s.write(text.substr(p, 97 + t), out);
        s.finish(out);
        ok[t] += out == expected;
      }
    });
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(ok, (std::vector<int>{20, 20, 20, 20}));
}

}  // namespace
}  // namespace airlock::filters::redaction

namespace airlock::filters::redaction {
namespace {

TEST(RedactionEngine, HeaderValuesAtOnceEqualOneByOne) {
  auto r = engine::build(all_builtin_redactors(), {{"api", "sk-live-HEADERVALUES-0123456789"}});
  ASSERT_TRUE(r.errors.empty());
  const engine& e = *r.compiled;
  const std::vector<std::string_view> values = {
      "nginx",
      "Bearer sk-live-HEADERVALUES-0123456789",
      "",
      "mailto:someone@example.com",
      "4111 1111 1111 1111",
      "AKIAIOSFODNN7EXAMPLE",
      "x@y.example",
      "sk-live-HEADERVALUES-0123456789",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_"
      "XgL0n3I9PlFUP0THsR8U",
      "+1 415 555 0100",
      "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
      "sk-live-HEADERVALUES-01234567",  // almost the secret: left alone
  };
  hit_counts one, all;
  std::vector<std::string> expected;
  for (auto v : values)
    expected.push_back(e.redact(v, &one));
  EXPECT_EQ(redact_header_values(e, values, &all), expected);
  EXPECT_EQ(all, one);
  EXPECT_NE(expected[1], values[1]);
  EXPECT_EQ(expected.back(), values.back());
}

}  // namespace
}  // namespace airlock::filters::redaction
