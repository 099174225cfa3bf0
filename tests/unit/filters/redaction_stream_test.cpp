#include "filters/redaction/stream.hpp"

#include "filters/redaction/builtin.hpp"
#include "filters/redaction/engine.hpp"
#include "filters/redaction/engine_impl.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace airlock::filters::redaction {
namespace {

const std::string kSecret = "sk-live-0123456789abcdefXYZ";

// A 200-byte secret: matches close to the overlap's length test how much the stream holds.
std::string long_secret() {
  std::string s;
  for (int i = 0; i < 200; ++i)
    s += "Zq7"[i % 3] + static_cast<char>(i % 10);
  return s;
}

// Windowed patterns (no length bound) with matches close to the overlap.
std::string long_jwt() {
  std::string payload;  // base64url of a long JSON claim set
  while (payload.size() < 150)
    payload += "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6";
  return "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + payload + ".SflKxwRJSMeKKF2QT4fwpMeJf36P";
}
std::string long_pem() {
  std::string body;
  while (body.size() < 170)
    body += "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n";
  return "-----BEGIN PRIVATE "
         "KEY-----\\n" +
         body +
         "-----END PRIVATE "
         "KEY-----";
}

// The full library plus literal secrets, with the smallest overlap so that short test
// inputs exercise the hold-back logic (a real engine uses 8 KiB).
std::shared_ptr<const engine> small_engine() {
  static std::shared_ptr<const engine> e = [] {
    engine_options o;
    o.overlap = 256;
    auto built =
        engine::build(all_builtin_redactors(), {{"api", kSecret}, {"long", long_secret()}}, o);
    EXPECT_TRUE(built.errors.empty()) << (built.errors.empty() ? "" : built.errors[0]);
    return built.compiled;
  }();
  return e;
}

std::string filler(std::size_t n, char seed) {
  std::string s;
  const char* words[] = {"alpha ", "beta, ", "{\"k\": 12}, ", "gamma\n", "2024-01-15 ", "x=3.14 "};
  std::size_t i = static_cast<unsigned char>(seed);
  while (s.size() < n)
    s += words[i++ % 6];
  s.resize(n);
  return s;
}

// Inputs with secrets at the edges, adjacent, overlapping, JSON-escaped, and long enough
// (> overlap) that the stream must emit before finish().
std::vector<std::string> inputs_as_written() {
  const std::string jwt =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
      "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
  const std::string pem =
      "-----BEGIN PRIVATE "
      "KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\nBKcwggSjAgEAAoIBAQC7\\n"
      "-----END PRIVATE KEY-----";
  return {
      "AKIAIOSFODNN7EXAMPLE " + filler(300, 1) + kSecret + filler(40, 2) + "ops@example.com",
      filler(250, 3) + kSecret + kSecret + " 4111 1111 1111 1111 " + jwt + filler(280, 4) +
          "+1 415 555 0132",
      "{\"key\":\"" + pem + "\",\"email\":\"a.b@example.org\",\"card\":\"4111111111111111\"}" +
          filler(300, 5) + "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
      // A secret inside an e-mail address, and an e-mail running into a secret.
      filler(200, 6) + "user" + kSecret + "@example.com " + "bob@example.com" + kSecret +
          filler(270, 7) + "(415) 555-0132 " + "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
      // Long matches: a 250-byte Slack token, a labelled AWS secret, the 200-byte secret.
      filler(280, 9) + "xoxb-" + std::string(245, '7') +
          " aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" +
          filler(20, 10) + long_secret() + filler(40, 11) + long_secret() +
          long_secret().substr(0, 150) + " " + long_jwt() + " " + long_pem() + filler(30, 12),
      // Nothing to redact, and near misses.
      filler(600, 8) + "AKIAIOSFODNN7EXAMPL 4111111111111112 logo@2x.png sk-live-0123456789",
  };
}

// Each ends in filler, so that every input is longer than the engine's overlap (the 200-byte
// secret's UTF-32 spelling sets it: 797 bytes) and the hold-back is exercised.
std::vector<std::string> inputs() {
  auto v = inputs_as_written();
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] += filler(500, static_cast<char>(20 + i));
  return v;
}

std::string stream_in_pieces(const std::shared_ptr<const engine>& e, std::string_view text,
                             const std::vector<std::size_t>& cuts, stream_options opts = {}) {
  stream s(e, opts);
  std::string out;
  std::size_t prev = 0;
  for (std::size_t cut : cuts) {
    s.write(text.substr(prev, cut - prev), out);
    EXPECT_LE(s.retained(), s.retention_bound());
    prev = cut;
  }
  s.write(text.substr(prev), out);
  s.finish(out);
  return out;
}

TEST(RedactionStream, InputsContainWhatTheyShould) {
  auto e = small_engine();
  for (const std::string& in : inputs()) {
    ASSERT_GT(in.size(), e->overlap() + 32);
    const std::string out = e->redact(in);
    EXPECT_EQ(out.find("sk-live-0123456789abcdef"), std::string::npos) << out;
  }
  const auto v = inputs();
  hit_counts hits;
  EXPECT_EQ(e->redact(v[3], &hits).find("[REDACTED:"), v[3].find("user"));
  // The e-mail swallows the secret inside it; the secret is still counted.
  EXPECT_EQ(hits[0], 2u);
  EXPECT_EQ(e->label_name(0), "secret:api");
}

TEST(RedactionStream, EveryFixedChunkSizeGivesTheOneShotOutput) {
  auto e = small_engine();
  for (const std::string& in : inputs()) {
    const std::string expected = e->redact(in);
    for (std::size_t k = 1; k <= in.size(); ++k) {
      std::vector<std::size_t> cuts;
      for (std::size_t p = k; p < in.size(); p += k)
        cuts.push_back(p);
      for (std::size_t min_scan : {std::size_t{1}, std::size_t{0}}) {
        ASSERT_EQ(stream_in_pieces(e, in, cuts, {framing::none, min_scan}), expected)
            << "chunk size " << k << " min_scan " << min_scan;
      }
    }
  }
}

TEST(RedactionStream, EveryTwoPieceSplitGivesTheOneShotOutput) {
  auto e = small_engine();
  for (const std::string& in : inputs()) {
    const std::string expected = e->redact(in);
    for (std::size_t p = 0; p <= in.size(); ++p)
      ASSERT_EQ(stream_in_pieces(e, in, {p}, {framing::none, 1}), expected) << "split at " << p;
  }
}

TEST(RedactionStream, RandomMultiPieceSplitsGiveTheOneShotOutput) {
  auto e = small_engine();
  std::mt19937 rng(7);
  for (const std::string& in : inputs()) {
    const std::string expected = e->redact(in);
    for (int round = 0; round < 200; ++round) {
      std::vector<std::size_t> cuts;
      const int n = 1 + static_cast<int>(rng() % 12);
      for (int i = 0; i < n; ++i)
        cuts.push_back(rng() % (in.size() + 1));
      std::sort(cuts.begin(), cuts.end());
      ASSERT_EQ(stream_in_pieces(e, in, cuts, {framing::none, 1 + rng() % 64}), expected);
    }
  }
}

TEST(RedactionStream, SecretSplitAcrossAChunkBoundaryIsRedacted) {
  auto built = engine::build({}, {{"api", kSecret}});  // default 8 KiB overlap
  ASSERT_TRUE(built.errors.empty());
  for (std::size_t split = 1; split < kSecret.size(); ++split) {
    stream s(built.compiled);
    std::string out;
    s.write(std::string(20000, 'a') + kSecret.substr(0, split), out);
    s.write(kSecret.substr(split) + std::string(20000, 'b'), out);
    s.finish(out);
    EXPECT_EQ(out, std::string(20000, 'a') + "[REDACTED:secret:api]" + std::string(20000, 'b'));
    EXPECT_EQ(s.hits()[0], 1u);
  }
}

TEST(RedactionStream, OutputFlowsBeforeTheEnd) {
  auto built = engine::build(all_builtin_redactors(), {{"api", kSecret}});
  ASSERT_TRUE(built.errors.empty());
  stream s(built.compiled);
  std::string out;
  const std::string chunk = filler(64 * 1024, 9);
  s.write(chunk, out);
  // Everything but the held tail is out after the first chunk.
  EXPECT_GE(out.size(), chunk.size() - s.retention_bound());
  EXPECT_EQ(out, chunk.substr(0, out.size()));
  s.finish(out);
  EXPECT_EQ(out, chunk);
}

TEST(RedactionStream, BinaryBytesPassUnchanged) {
  auto built = engine::build(all_builtin_redactors(), {{"api", kSecret}});
  ASSERT_TRUE(built.errors.empty());
  std::string bin;
  std::mt19937 rng(3);
  for (int i = 0; i < 300000; ++i)
    bin += static_cast<char>(rng() % 256);
  // Whatever random bytes happen to spell, no secret and no e-mail: same bytes out.
  const std::string out = built.compiled->redact(bin);
  if (out.find("[REDACTED:") == std::string::npos) {
    EXPECT_EQ(out, bin);
  }
  // An engine with nothing to find passes any bytes, NULs included, in any chunking.
  auto none = engine::build({}, {});
  ASSERT_TRUE(none.errors.empty());
  EXPECT_EQ(stream_in_pieces(none.compiled, bin, {1, 2, 3, 70000, 200000}), bin);
}

TEST(RedactionStream, RetainedBytesStayBoundedOver100MiB) {
  auto built = engine::build(all_builtin_redactors(), {{"api", kSecret}});
  ASSERT_TRUE(built.errors.empty());
  // 64 KiB chunks, each ending with the first half of the secret and starting with the second.
  const std::size_t half = kSecret.size() / 2;
  std::string chunk = kSecret.substr(half) + filler(64 * 1024, 10);
  chunk.resize(64 * 1024 - half);
  chunk += kSecret.substr(0, half);
  ASSERT_EQ(chunk.size(), 64u * 1024);

  stream s(built.compiled);
  std::string out;
  std::size_t max_retained = 0, out_total = 0;
  const std::size_t n = 1600;  // 100 MiB
  for (std::size_t i = 0; i < n; ++i) {
    s.write(chunk, out);
    max_retained = std::max(max_retained, s.retained());
    ASSERT_LE(s.retained(), s.retention_bound());
    out_total += out.size();
    out.clear();
  }
  s.finish(out);
  out_total += out.size();
  EXPECT_LE(s.retention_bound(), 32u * 1024);  // 1.5 x 8 KiB held + 8 KiB waiting for a scan
  EXPECT_EQ(s.hits()[0], n - 1);  // every boundary but the first, which has only a tail
  EXPECT_EQ(s.bytes_in(), n * chunk.size());
  EXPECT_EQ(out_total, s.bytes_out());
  EXPECT_EQ(s.set_fallbacks(), 0u);
}

// Event mode: each event goes out as soon as its blank line arrives.
TEST(RedactionStream, EventModeEmitsEachEventWithoutWaiting) {
  auto built = engine::build(all_builtin_redactors(), {{"api", kSecret}});
  ASSERT_TRUE(built.errors.empty());
  stream s(built.compiled, {framing::events, 0});
  std::string out;
  s.write("data: {\"token\":\"" + kSecret + "\"}\n\n", out);
  EXPECT_EQ(out, "data: {\"token\":\"[REDACTED:secret:api]\"}\n\n");
  out.clear();
  s.write("event: msg\r\ndata: mail ops@example.com", out);
  EXPECT_EQ(out, "");  // a partial event waits (it is short)
  s.write("\r\n\r\n: comment\n", out);
  EXPECT_EQ(out, "event: msg\r\ndata: mail [REDACTED:email]\r\n\r\n");
  out.clear();
  s.write("\n", out);
  EXPECT_EQ(out, ": comment\n\n");
  out.clear();
  s.finish(out);
  EXPECT_EQ(out, "");
}

TEST(RedactionStream, EventModeLongEventIsEmittedBeforeItEnds) {
  auto built = engine::build(all_builtin_redactors(), {{"api", kSecret}});
  ASSERT_TRUE(built.errors.empty());
  stream s(built.compiled, {framing::events, 0});
  std::string out;
  std::size_t emitted = 0;
  for (int i = 0; i < 64; ++i) {
    s.write("data: " + filler(1000, static_cast<char>(i)) + "\n", out);  // one event, no blank line
    ASSERT_LE(s.retained(), s.retention_bound());
    emitted = out.size();
  }
  EXPECT_GT(emitted, 40000u);
  s.write("\n", out);
  EXPECT_EQ(s.retained(), 0u);
}

// Event mode = each event redacted as its own text, whatever the chunking.
TEST(RedactionStream, EventModeEqualsPerEventOneShotAtEverySplit) {
  auto e = small_engine();
  const auto v = inputs();
  const std::string events = "data: " + v[0] + "\n\nid: 2\ndata: " + v[1] + "\r\n\r\n" +
                             "data: 4111 1111\n\ndata: 1111 1111 " + kSecret + "\n\n" +
                             "data: tail " + kSecret.substr(0, 10);
  std::string expected;
  std::size_t p = 0;
  while (p < events.size()) {
    std::size_t a = events.find("\n\n", p), b = events.find("\n\r\n", p);
    std::size_t end = std::min(a == std::string::npos ? events.size() : a + 2,
                               b == std::string::npos ? events.size() : b + 3);
    expected += e->redact(events.substr(p, end - p));
    p = end;
  }
  // A card number split across two events is two texts: neither half is a card.
  EXPECT_NE(expected.find("data: 4111 1111\n\n"), std::string::npos);
  for (std::size_t split = 0; split <= events.size(); ++split)
    ASSERT_EQ(stream_in_pieces(e, events, {split}, {framing::events, 1}), expected) << split;
  for (std::size_t k : {1, 2, 3, 7, 64, 255})
    for (std::size_t min_scan : {std::size_t{1}, std::size_t{0}}) {
      std::vector<std::size_t> cuts;
      for (std::size_t q = k; q < events.size(); q += k)
        cuts.push_back(q);
      ASSERT_EQ(stream_in_pieces(e, events, cuts, {framing::events, min_scan}), expected) << k;
    }
}

TEST(RedactionStream, LinesModeEmitsEachRecord) {
  auto built = engine::build(all_builtin_redactors(), {});
  ASSERT_TRUE(built.errors.empty());
  stream s(built.compiled, {framing::lines, 0});
  std::string out;
  s.write("{\"a\":\"ops@example.com\"}\n{\"b\":", out);
  EXPECT_EQ(out, "{\"a\":\"[REDACTED:email]\"}\n");
  s.write("1}\n", out);
  EXPECT_EQ(out, "{\"a\":\"[REDACTED:email]\"}\n{\"b\":1}\n");
}

// A naive model of the semantics for literal secrets: each secret's leftmost non-overlapping
// occurrences, overlapping spans merged, each merged run named by its first span.
std::string naive(const std::string& text, const std::vector<std::string>& secrets) {
  std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> spans;  // begin, -len, index
  for (std::size_t i = 0; i < secrets.size(); ++i)
    for (std::size_t p = text.find(secrets[i]); p != std::string::npos;
         p = text.find(secrets[i], p + secrets[i].size()))
      spans.emplace_back(p, ~secrets[i].size(), i);
  std::sort(spans.begin(), spans.end());
  std::string out;
  std::size_t pos = 0;
  for (auto [b, neg_len, i] : spans) {
    const std::size_t e = b + ~neg_len;
    if (b < pos) {
      pos = std::max(pos, e);
      continue;
    }
    out += text.substr(pos, b - pos);
    out += "[REDACTED:secret:s" + std::to_string(i) + "]";
    pos = e;
  }
  return out + text.substr(pos);
}

TEST(RedactionStream, LiteralSecretsMatchANaiveModelOnRandomTexts) {
  const std::vector<std::string> secrets{"abab", "bba", "aab", "babba"};
  std::vector<literal_secret> lits;
  for (std::size_t i = 0; i < secrets.size(); ++i)
    lits.push_back({"s" + std::to_string(i), secrets[i]});
  engine_options o;
  o.overlap = 256;
  o.secret_spellings = false;
  auto built = engine::build({}, lits, o);
  ASSERT_TRUE(built.errors.empty());
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const std::size_t n = rng() % 700;
    for (std::size_t i = 0; i < n; ++i)
      text += "abc"[rng() % (round % 2 ? 2 : 3)];
    const std::string expected = naive(text, secrets);
    ASSERT_EQ(built.compiled->redact(text), expected) << text;
    std::vector<std::size_t> cuts;
    for (std::size_t i = 0, m = rng() % 20; i < m; ++i)
      cuts.push_back(rng() % (n + 1));
    std::sort(cuts.begin(), cuts.end());
    ASSERT_EQ(stream_in_pieces(built.compiled, text, cuts, {framing::none, 1 + rng() % 8}),
              expected)
        << text;
  }
}

// Hostile bodies: long runs that look like the start of an unbounded match. Each window is
// searched once, so this is linear (quadratic behaviour would take minutes here).
TEST(RedactionStream, HostileRunsStayLinear) {
  auto built = engine::build(all_builtin_redactors(), {{"api", kSecret}});
  ASSERT_TRUE(built.errors.empty());
  std::string jwtish, local, digits, pem;
  while (jwtish.size() < (2u << 20))
    jwtish += "eyJhbGciOi";
  jwtish += ".eyJzdWIiOiIxIn0.sig";
  local = std::string(2u << 20, 'a') + "@example.com";
  while (digits.size() < (2u << 20))
    digits += "4111 1111 ";
  pem =
      "-----BEGIN PRIVATE "
      "KEY-----" +
      std::string(2u << 20, 'A');
  for (const std::string* body : {&jwtish, &local, &digits, &pem}) {
    stream s(built.compiled);
    std::string out;
    for (std::size_t p = 0; p < body->size(); p += 65536) {
      s.write(body->substr(p, 65536), out);
      ASSERT_LE(s.retained(), s.retention_bound());
    }
    s.finish(out);
    EXPECT_EQ(out.find("sk-live"), std::string::npos);
  }
}

// The prefilter only decides where RE2 runs; it must never change what is redacted. Texts
// built from fragments that sit on the edges of every hint: anchor bytes without their
// literal, literals cut short, digit runs of 12..14 digits, separators, escapes.
TEST(RedactionStream, PrefilterGivesTheSameResultAsTheSetEverywhere) {
  engine_options with, without;
  with.overlap = without.overlap = 256;
  without.prefilter = false;
  const std::vector<literal_secret> secrets{{"api", kSecret}, {"short", "q9"}};
  auto a = engine::build(all_builtin_redactors(), secrets, with);
  auto b = engine::build(all_builtin_redactors(), secrets, without);
  ASSERT_TRUE(a.errors.empty() && b.errors.empty());
  // With this small overlap email and slack-webhook are windowed and go through the set;
  // with the default one every built-in is prefiltered and no set pass runs at all.
  EXPECT_NE(a.compiled->internals().set, nullptr);
  EXPECT_FALSE(b.compiled->internals().redactors[0].prefiltered);
  // Every built-in carries a hint, the checksummed identifiers DLP added too (iban: capitals
  // and digits; bitcoin-address and wif-key: base58 runs).
  std::vector<redactor_spec> hinted;
  for (auto& spec : all_builtin_redactors())
    if (!spec.hint.empty()) hinted.push_back(std::move(spec));
  EXPECT_EQ(hinted.size(), all_builtin_redactors().size());
  auto full = engine::build(hinted, secrets);
  ASSERT_TRUE(full.errors.empty());
  for (std::size_t i = 0; i < full.compiled->pattern_count(); ++i)
    EXPECT_TRUE(full.compiled->internals().redactors[i].prefiltered) << i;
  EXPECT_EQ(full.compiled->internals().set, nullptr);

  const std::vector<std::string> frags{
      "AKIA", "AKIAIOSFODNN7EXAMPLE", "ASIA", "AIza", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
      "secret",
      "SECRET_ACCESS_KEY=", "aws_secret_access_key: ", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      "\"private_key_id\": \"", "0123456789abcdef0123456789abcdef01234567\"", "gh", "ghp_",
      "github_pat_", "gl", "glpat-", "xox", "xoxb-", "hooks.slack.com/services/", "https://", "eyJ",
      "eyJhbGciOiJIUzI1NiJ9", ".", "-----BEGIN ", "PRIVATE KEY-----", "-----END PRIVATE KEY-----",
      "RSA ", "@", "a@b.co", "user", ".example.com", "4111", "1111", " ", "-", "4111111111111111",
      "411111111111", "3782822463", "10005", "+", "+1", "+44 20 7946 0958", "(415) ", "555",
      "-0132", "0132", "415-555-0132", "1-800-", "12345678901234", "\n", "\u0022", "\\", "\"", ",",
      ":", "{", "}", "x", "Z", "_", "q9", "q", "9", kSecret, kSecret.substr(0, 9), "sk-live-",
      // IBANs, Bitcoin addresses and WIF keys, whole and cut.
      "GB82 WEST 1234 5698 7654 32", "GB82WEST12345698765432", "DE89", "GB", "82", "WEST",
      "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2", "1BvBMSEYstWetqTFn5Au4m4GF",
      "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "bc1",
      "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ",
      "KwDiBf89QgGbjEhKnhXJuH7LrciVrZi3qYjgd9M7rFU73sVHnoWn", "KwDiBf89QgGbjEhKnhXJuH7LrciVrZi3qYj",
      "O", "l", "0",
      // JSON escapes a token may follow.
      "\\n", "\\u0041", "\\u00"};
  std::mt19937 rng(99);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    const std::size_t n = rng() % 60;
    for (std::size_t i = 0; i < n; ++i)
      text += frags[rng() % frags.size()];
    hit_counts ha, hb;
    const std::string ra = a.compiled->redact(text, &ha);
    ASSERT_EQ(ra, b.compiled->redact(text, &hb)) << text;
    ASSERT_EQ(ha, hb) << text;
    if (round % 10 == 0) {
      std::vector<std::size_t> cuts;
      for (std::size_t i = 0, m = rng() % 8; i < m; ++i)
        cuts.push_back(rng() % (text.size() + 1));
      std::sort(cuts.begin(), cuts.end());
      ASSERT_EQ(stream_in_pieces(a.compiled, text, cuts, {framing::none, 1 + rng() % 300}), ra)
          << text;
    }
  }
  for (const std::string& in : inputs())
    EXPECT_EQ(a.compiled->redact(in), b.compiled->redact(in));
  // Every alignment of hits against the prefilter's 64-byte blocks.
  const std::string hits_text = "4111 1111 1111 1111 (415) 555-0132 +44 20 7946 0958 " + kSecret +
                                " 4111-1111-1111-1111 a@b.io eyJhbGciOiJub25lIn0.e30. ";
  for (std::size_t k = 0; k < 130; ++k) {
    const std::string text = std::string(k, 'x') + " " + hits_text + hits_text;
    hit_counts ha, hb;
    ASSERT_EQ(a.compiled->redact(text, &ha), b.compiled->redact(text, &hb)) << k;
    ASSERT_EQ(ha, hb) << k;
    EXPECT_EQ(std::accumulate(ha.begin(), ha.end(), std::uint64_t{0}), 14u) << k;
  }
  // The capitals-and-digits and base58-run hints find what they claim, at every alignment.
  const std::string ids =
      "pay GB82 WEST 1234 5698 7654 32 or 1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2, key "
      "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ; "
      "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq. ";
  for (std::size_t k = 0; k < 130; ++k) {
    const std::string text = std::string(k, 'x') + " " + ids + ids;
    hit_counts ha, hb;
    ASSERT_EQ(a.compiled->redact(text, &ha), b.compiled->redact(text, &hb)) << k;
    ASSERT_EQ(ha, hb) << k;
    EXPECT_EQ(std::accumulate(ha.begin(), ha.end(), std::uint64_t{0}), 8u) << k;
  }
  // Base58 runs across many 64-byte blocks, broken by the bytes base58 leaves out.
  const std::string b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  for (int round = 0; round < 300; ++round) {
    std::string text;
    for (std::size_t i = 0, n = 100 + rng() % 400; i < n; ++i)
      text += rng() % 40 == 0 ? "0OIl "[rng() % 5] : b58[rng() % b58.size()];
    hit_counts ha, hb;
    ASSERT_EQ(a.compiled->redact(text, &ha), b.compiled->redact(text, &hb)) << text;
    ASSERT_EQ(ha, hb) << text;
  }
  // Digit runs and separators across many 64-byte blocks (the prefilter's carries).
  const std::string alphabet = "0123456789012345678901234567890123456789  --..+()@x";
  for (int round = 0; round < 300; ++round) {
    std::string text;
    for (std::size_t i = 0, n = 200 + rng() % 1400; i < n; ++i)
      text += alphabet[rng() % (round % 3 == 0 ? 10 : alphabet.size())];
    hit_counts ha, hb;
    ASSERT_EQ(a.compiled->redact(text, &ha), b.compiled->redact(text, &hb)) << text;
    ASSERT_EQ(ha, hb) << text;
  }
}

// A policy pattern has no hint: it goes through the set, next to prefiltered built-ins.
TEST(RedactionStream, CustomPatternsUseTheSetBesidePrefilteredOnes) {
  auto built = engine::build(
      {custom_redactor("ticket", "TCK-[0-9]{6}"), *builtin_redactor("email")->begin()},
      {{"api", kSecret}});
  ASSERT_TRUE(built.errors.empty());
  const auto& im = built.compiled->internals();
  // The secret's spellings come first (each a redactor of its own), then the two patterns.
  const std::size_t n = im.redactors.size();
  ASSERT_GT(n, 3u);
  for (std::size_t i = 0; i + 2 < n; ++i)
    EXPECT_TRUE(im.redactors[i].prefiltered) << i;  // the secret, as written and in base64
  EXPECT_FALSE(im.redactors[n - 2].prefiltered);    // the ticket pattern
  EXPECT_TRUE(im.redactors[n - 1].prefiltered);     // email
  ASSERT_NE(im.set, nullptr);
  const std::string text =
      filler(300, 1) + "TCK-123456 ops@example.com " + kSecret + filler(300, 2);
  const std::string expected =
      filler(300, 1) + "[REDACTED:ticket] [REDACTED:email] [REDACTED:secret:api]" + filler(300, 2);
  EXPECT_EQ(built.compiled->redact(text), expected);
  for (std::size_t split = 0; split <= text.size(); split += 7)
    ASSERT_EQ(stream_in_pieces(built.compiled, text, {split}, {framing::none, 1}), expected);
}

TEST(RedactionStream, WriteAfterFinishIsIgnored) {
  auto built = engine::build({}, {{"api", kSecret}});
  ASSERT_TRUE(built.errors.empty());
  stream s(built.compiled);
  std::string out;
  s.write("x " + kSecret, out);
  s.finish(out);
  s.write(kSecret, out);
  s.finish(out);
  EXPECT_EQ(out, "x [REDACTED:secret:api]");
}

}  // namespace
}  // namespace airlock::filters::redaction
