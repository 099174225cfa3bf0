#include "filters/redaction/builtin.hpp"

#include "filters/redaction/engine.hpp"
#include "filters/redaction/stream.hpp"
#include "filters/redaction/validators.hpp"

#include "fresh_key.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace airlock::filters::redaction {
namespace {

// One engine per built-in name, built once.
const engine& engine_for(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const engine>> cache;
  auto& e = cache[name];
  if (!e) {
    auto specs = builtin_redactor(name);
    EXPECT_TRUE(specs.has_value()) << name;
    auto built = engine::build(*specs, {});
    EXPECT_TRUE(built.errors.empty()) << (built.errors.empty() ? "" : built.errors[0]);
    e = built.compiled;
  }
  return *e;
}

std::string redact(const std::string& name, const std::string& text) {
  return engine_for(name).redact(text);
}

void expect_caught(const std::string& name, const std::string& secret,
                   const std::string& before = "value: ", const std::string& after = " end") {
  EXPECT_EQ(redact(name, before + secret + after), before + "[REDACTED:" + name + "]" + after)
      << name << " should catch: " << secret;
}

void expect_left_alone(const std::string& name, const std::string& text) {
  EXPECT_EQ(redact(name, text), text) << name << " should leave alone: " << text;
}

TEST(RedactionBuiltin, NamesAreAllResolvable) {
  EXPECT_EQ(builtin_names().size(), 22u);
  for (std::string_view n : builtin_names()) {
    auto specs = builtin_redactor(n);
    ASSERT_TRUE(specs.has_value()) << n;
    EXPECT_EQ((*specs)[0].name, n);
    EXPECT_EQ((*specs)[0].replacement, "[REDACTED:" + std::string(n) + "]");
  }
  EXPECT_FALSE(builtin_redactor("no-such-redactor").has_value());
  auto all = engine::build(all_builtin_redactors(), {});
  ASSERT_TRUE(all.errors.empty()) << all.errors[0];
  EXPECT_EQ(all.compiled->pattern_count(), 22u);
}

TEST(RedactionBuiltin, ResolveNamesCustomFirstDedupedUnknownNamed) {
  const std::vector<std::string> names{
      "email", "gcp-service-account", "pem-private-key", "ticket", "email", "nope"};
  const std::vector<redactor_spec> custom{custom_redactor("ticket", "TCK-[0-9]{6}", "[ticket]"),
                                          custom_redactor("email", "x@y")};
  auto r = resolve_redactors(names, custom);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("'nope'"), std::string::npos);
  std::vector<std::string> got;
  for (const auto& s : r.specs)
    got.push_back(s.name);
  EXPECT_EQ(
      got, (std::vector<std::string>{"email", "gcp-service-account", "pem-private-key", "ticket"}));
  EXPECT_EQ(r.specs[0].pattern, "x@y");  // the policy's own definition wins
}

TEST(RedactionBuiltin, AwsAccessKey) {
  const std::string n = "aws-access-key";
  expect_caught(n, "AKIAIOSFODNN7EXAMPLE");
  expect_caught(n, "ASIAY34FZKBOKMUTVV7A", "\"", "\"");
  expect_caught(n, "AKIAIOSFODNN7EXAMPLE", "line one\\n", "\\n");  // inside a JSON string
  expect_left_alone(n, "AKIAIOSFODNN7EXAMPL end");                 // 19 characters
  expect_left_alone(n, "XAKIAIOSFODNN7EXAMPLE end");               // glued on the left
  expect_left_alone(n, "AKIAIOSFODNN7EXAMPLEX end");               // 21 characters
  expect_left_alone(n, "akiaiosfodnn7example");                    // keys are upper case
  expect_left_alone(n, "AIDAJQABLZS4A3QDU576Q user id");           // IAM user ids are not secrets
}

TEST(RedactionBuiltin, AwsSecretKeyOnlyNextToALabel) {
  const std::string n = "aws-secret-key";
  const std::string key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  expect_caught(n, key, "aws_secret_access_key = ", "\n");
  expect_caught(n, key, "AWS_SECRET_ACCESS_KEY=", "");
  expect_caught(n, key, "{\"SecretAccessKey\": \"", "\"}");
  expect_caught(n, key, "secretAccessKey: '", "'");
  expect_caught(n, "wJalrXUtnFEMI\\/K7MDENG\\/bPxRfiCYEXAMPLEKEY", "{\\\"SecretAccessKey\\\":\\\"",
                "\\\"}");
  expect_left_alone(n, "sha: " + key + " (no label)");
  expect_left_alone(n, "aws_secret_access_key = " + key + "A");  // 41: part of a longer run
  expect_left_alone(n, "aws_secret_access_key = abcdefghijklmnopqrstuvwxyzabcdefghijklmn");
}

TEST(RedactionBuiltin, GcpApiKey) {
  const std::string n = "gcp-api-key";
  const std::string key = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY";
  ASSERT_EQ(key.size(), 39u);
  expect_caught(n, key, "?key=", "&alt=json");
  expect_left_alone(n, "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBW end");  // 34 after AIza
  expect_left_alone(n, "xAIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY");
}

TEST(RedactionBuiltin, GcpServiceAccountBringsPemAlong) {
  const std::string n = "gcp-service-account";
  const std::string doc =
      "{\"type\": \"service_account\", \"project_id\": \"demo\", "
      "\"private_key_id\": \"0123456789abcdef0123456789abcdef01234567\", "
      "\"private_key\": \"-----BEGIN PRIVATE "
      "KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n"
      "BKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----\\n\", "
      "\"client_email\": \"svc@demo.iam.gserviceaccount.com\", \"client_id\": "
      "\"112233445566778899001\"}";
  hit_counts hits;
  const std::string out = engine_for(n).redact(doc, &hits);
  EXPECT_EQ(out,
            "{\"type\": \"service_account\", \"project_id\": \"demo\", "
            "\"private_key_id\": \"[REDACTED:gcp-service-account]\", "
            "\"private_key\": \"[REDACTED:pem-private-key]\\n\", "
            "\"client_email\": \"svc@demo.iam.gserviceaccount.com\", \"client_id\": "
            "\"112233445566778899001\"}");
  EXPECT_EQ(engine_for(n).named(hits).size(), 2u);
  expect_left_alone(n, "\"private_key_id\": \"0123456789abcdef0123456789abcdef0123456\"");
}

TEST(RedactionBuiltin, GithubToken) {
  const std::string n = "github-token";
  const std::string body36 = "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
  for (std::string p : {"ghp_", "gho_", "ghu_", "ghs_", "ghr_"})
    expect_caught(n, p + body36, "token ", ".");
  expect_caught(n,
                "github_pat_11ABCDEFG0123456789abc_"
                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456",
                "Authorization: Bearer ", "");
  expect_caught(n, "ghp_" + body36, "x\\n", "");  // after a JSON escape
  expect_left_alone(n, "ghp_" + body36.substr(1) + " is too short");
  expect_left_alone(n, "ghx_" + body36);
  expect_left_alone(n, "sghp_" + body36);
}

TEST(RedactionBuiltin, GitlabToken) {
  const std::string n = "gitlab-token";
  expect_caught(n, "glpat-xYz12_AbC-dEf3456789", "PRIVATE-TOKEN: ", "");
  expect_caught(n, "glrt-abcdefghijklmnopqrstuv", "runner ", ".");  // the final '.' stays
  expect_caught(n, "gldt-ABCDEFGHIJKLMNOPQRST");
  expect_left_alone(n, "glpat-xYz12_AbC-dEf34567 too short");
  expect_left_alone(n, "glxyz-ABCDEFGHIJKLMNOPQRSTUV");
}

TEST(RedactionBuiltin, SlackTokenAndWebhook) {
  expect_caught("slack-token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx");
  expect_caught("slack-token", "xoxp-1234567890-abcdef", "", "-");  // trailing '-' stays
  expect_left_alone("slack-token", "xoxz-123456789012-1234567890123");
  expect_left_alone("slack-token", "xoxb-12345");
  const std::string hook = "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXX";
  expect_caught("slack-webhook", hook, "\"url\": \"", "\"");
  expect_caught("slack-webhook", "https:\\/\\/hooks.slack.com\\/services\\/T000\\/B000\\/XXXX",
                "\"", "\"");
  expect_left_alone("slack-webhook", "see https://hooks.slack.com/ for docs");
  expect_left_alone("slack-webhook", "https://api.slack.com/services/T000/B000");
}

TEST(RedactionBuiltin, Jwt) {
  const std::string n = "jwt";
  const std::string jwt =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
      "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
  expect_caught(n, jwt, "Authorization: Bearer ", "\r\n");
  expect_caught(n, jwt, "{\"id_token\":\"", "\"}");
  expect_caught(n, "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", "t=", " ok");  // alg none
  // {"foo":"bar"}: JSON in base64url, but not a JOSE header (no "alg").
  expect_left_alone(n, "eyJmb28iOiJiYXIifQ.eyJzdWIiOiIxIn0.c2lnbmF0dXJl");
  expect_left_alone(n, "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 alone");
  expect_left_alone(n, "xeyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIn0.abc");
}

TEST(RedactionBuiltin, PemPrivateKey) {
  const std::string n = "pem-private-key";
  const std::string rsa =
      "-----BEGIN RSA PRIVATE "
      "KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
      "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u\n"
      "-----END RSA PRIVATE KEY-----";
  expect_caught(n, rsa, "key:\n", "\ndone");
  expect_caught(n,
                "-----BEGIN OPENSSH PRIVATE "
                "KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAA\\/BG5vbmU=\\n"
                "-----END OPENSSH PRIVATE KEY-----",
                "{\"key\": \"", "\\n\"}");
  expect_caught(n,
                "-----BEGIN ENCRYPTED PRIVATE "
                "KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: "
                "AES-128-CBC,0123ABCD\n\nMIIFHzBJBgkqhkiG9w0BBQ0wPDAb\n"
                "-----END ENCRYPTED PRIVATE KEY-----");
  // Cut off before its END: the base64 body still goes.
  expect_caught(n,
                "-----BEGIN PRIVATE "
                "KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEA",
                "truncated: ", "\" and more text");
  expect_left_alone(n,
                    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n"
                    "-----END PUBLIC KEY-----");
  expect_left_alone(n,
                    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----");
}

TEST(RedactionBuiltin, Email) {
  const std::string n = "email";
  expect_caught(n, "bob.smith+tag@mail.example.co.uk", "contact ", " today");
  expect_caught(n, "ops@example.com", "{\"to\":\"", "\"}");
  expect_caught(n, "bob@example.com", "line\\n", "");         // JSON escape stays
  expect_caught(n, "bob@example.com", "\\u003c", "\\u003e");  // Go's HTML escaping
  expect_caught(n, "pass@host.example.com", "https://user:", "/path");
  expect_left_alone(n, "<img src=\"logo@2x.png\"> <img src=\"icon@3x.webp\">");
  expect_left_alone(n, "npm i lodash@4.17.21 @types/node");
  expect_left_alone(n, "user@localhost and admin@ and @example.com");
  expect_left_alone(n, "literal backslash: \\\\");
}

TEST(RedactionBuiltin, PaymentCardLuhnAndSchemes) {
  const std::string n = "payment-card";
  for (std::string card :
       {"4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111", "378282246310005",
        "3782 822463 10005", "5555555555554444", "2223003122003222", "6011111111111117",
        "3530111333300000", "30569309025904", "4222222222222", "6200000000000005"})
    expect_caught(n, card, "card: ", ", exp 12/29");
  expect_caught(n, "4111111111111111", "{\"pan\":\"", "\"}");
  expect_caught(n, "4111111111111111", "a\\n", "");        // after a JSON escape
  expect_caught(n, "4111 1111 1111 1111", "qty 12 ", "");  // a number before it
  expect_caught(n, "4111111111111111", "", "");
  expect_caught(n, "4111111111111111", "alice,", ",12/28\n");  // a CSV row

  expect_left_alone(n, "card: 4111 1111 1111 1112");  // Luhn fails
  expect_left_alone(n, "card: 4111111111111121");
  expect_left_alone(n, "1700000000000 1712345678901234");  // ms timestamps, ids starting with 1
  expect_left_alone(n, "{\"updated_ms\":1700000000000,\"ns\":1700000000000000000}");
  expect_left_alone(n, "41111111111111110000");  // Luhn-valid prefix inside a longer run
  expect_left_alone(n, "x41111111111111111 4111111111111111x");
  expect_left_alone(n, "0.4111111111111111 4111111111111111.25 -4111111111111111");
  expect_left_alone(n, "+4111111111111111 _4111111111111111");
  expect_left_alone(n, "4111 1111-1111 1111");  // mixed separators
  expect_left_alone(n, "41111 11111 111111");   // not card grouping
  expect_left_alone(n, "550e8400-e29b-41d4-a716-446655440000 12345678-1234-5678-1234-567812345678");
  expect_left_alone(n, "ISBN 978-3-16-148410-0, version 4.1.1.1, 2024-03-15 12:34:56");
  expect_left_alone(n, "9999999999999995");  // Luhn-valid, no scheme starts with 9
  // Every Luhn-valid 16-digit run that starts with 1, 7, 8 or 9 is left alone.
  expect_left_alone(n, "1234567812345670 7234567812345677 8234567812345675");
}

TEST(RedactionBuiltin, PaymentCardValidatorPieces) {
  EXPECT_TRUE(validators::luhn_ok("4111111111111111"));
  EXPECT_FALSE(validators::luhn_ok("4111111111111112"));
  EXPECT_TRUE(validators::luhn_ok("79927398713"));
  EXPECT_FALSE(validators::luhn_ok(""));
  EXPECT_TRUE(validators::card_scheme_ok("4111111111111"));
  EXPECT_FALSE(validators::card_scheme_ok("41111111111111"));  // Visa has no 14
  EXPECT_TRUE(validators::card_scheme_ok("378282246310005"));
  EXPECT_FALSE(validators::card_scheme_ok("3782822463100050"));  // Amex is 15
  EXPECT_FALSE(validators::card_scheme_ok("1111111111111111"));
}

TEST(RedactionBuiltin, Phone) {
  const std::string n = "phone";
  for (std::string p : {"+14155550132", "+44 20 7946 0958", "+1-415-555-0132", "+4915112345678",
                        "(415) 555-0132", "(415)555-0132", "415-555-0132", "415.555.0132",
                        "415 555 0132", "+1 (415) 555-0132", "1-800-555-0199", "+33 1 23 45 67 89"})
    expect_caught(n, p, "call ", " now");
  expect_caught(n, "+1 415 555 0132", "call ", " 2 times");  // lone trailing digit kept out
  expect_caught(n, "415-555-0132", "{\"phone\":\"", "\"}");

  expect_left_alone(n, "call 4155550132 now");  // bare runs are not phones
  expect_left_alone(n, "{\"id\":1234567890,\"ts\":1700000000}");
  expect_left_alone(n, "2024-01-15T10:00:00+01:00 2024-01-15 12:30:45 +0100");
  expect_left_alone(n, "192.168.100.200 10.200.300.4000 1.2.3 v2.415.555.0132");
  expect_left_alone(n, "550e8400-e29b-41d4-a716-446655440000");
  expect_left_alone(n, "415-555-0132-99 415.555-0132 123-456-7890 555-0132");
  expect_left_alone(n, "ISBN 978-3-16-148410-0 and 99-415-555-0132");
  expect_left_alone(n, "1.5e+10 and +1 2 3 4 5 6 7 8");
}

TEST(RedactionBuiltin, EveryBuiltinTogetherOnOneDocument) {
  auto built = engine::build(all_builtin_redactors(), {});
  ASSERT_TRUE(built.errors.empty());
  const std::string doc =
      "{\"aws\":\"AKIAIOSFODNN7EXAMPLE\",\"mail\":\"ops@example.com\",\"card\":\"4111 1111 1111 "
      "1111\",\"phone\":\"+1 415 555 0132\",\"id\":\"550e8400-e29b-41d4-a716-446655440000\","
      "\"ts\":1700000000000,\"v\":\"1.2.3\"}";
  hit_counts hits;
  EXPECT_EQ(built.compiled->redact(doc, &hits),
            "{\"aws\":\"[REDACTED:aws-access-key]\",\"mail\":\"[REDACTED:email]\",\"card\":\""
            "[REDACTED:payment-card]\",\"phone\":\"[REDACTED:phone]\",\"id\":\"550e8400-e29b-"
            "41d4-a716-446655440000\",\"ts\":1700000000000,\"v\":\"1.2.3\"}");
  EXPECT_EQ(built.compiled->named(hits).size(), 4u);
}

// may_match is the redactor's first look: never "no" where redact finds something, and "no"
// for the ordinary header values it exists to skip.
TEST(RedactionBuiltin, MayMatchNeverMissesWhatRedactFinds) {
  auto built = engine::build(all_builtin_redactors(), {{"s1", "s3cr3t-Literal-Value-42"}});
  ASSERT_TRUE(built.errors.empty());
  const engine& e = *built.compiled;
  const std::vector<std::string> texts = {
      "AKIAIOSFODNN7EXAMPLE",
      "x ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123 y",
      "glpat-ABCDEFGHIJKLMNOPQRSTUVWX",
      "xoxb-1234567890-abcdefghijkl",
      "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
      "ops@example.com",
      "4111 1111 1111 1111",
      "+1 415 555 0132",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlc2lnbmF0dXJl",
      "Bearer s3cr3t-Literal-Value-42",
      "{\"k\":\"s3cr3t-Literal-Value-42\"}",
      "postgres://app:hunter2@db.internal:5432/app",
      "sk_live_0123456789abcdefABCDEF",
      test::fresh_private_key_pem()};
  for (const auto& t : texts) {
    // The stream itself, not redact() (which now asks may_match first).
    stream s(e);
    std::string out;
    s.write(t, out);
    s.finish(out);
    EXPECT_NE(out, t) << "a sample the redactors should find: " << t;
    EXPECT_TRUE(e.may_match(t)) << t;
  }
  for (std::string_view benign :
       {"curl/8.4.0", "application/json", "gzip, deflate, br", "keep-alive", "*/*",
        "en-US,en;q=0.9", "max-age=0", "/api/v1/items?page=2&sort=name"}) {
    EXPECT_FALSE(e.may_match(benign)) << benign;
    EXPECT_EQ(e.redact(benign), benign);
  }
}

// joinable: whether one first look at texts joined by line feeds answers for each. The
// built-in library has no anchors (its `[^...]` classes are not anchors); a custom pattern
// with `^`, `$`, `\A` or `\z` makes the engine say no.
TEST(RedactionBuiltin, JoinableUnlessAPatternIsAnchored) {
  auto builtins = engine::build(all_builtin_redactors(), {{"s1", "s3cr3t-Literal-Value-42"}});
  ASSERT_TRUE(builtins.errors.empty());
  EXPECT_TRUE(builtins.compiled->joinable());
  for (std::string_view re : {"^tok-[0-9]{8}", "tok-[0-9]{8}$", "\\Atok-[0-9]{8}",
                              "tok-[0-9]{8}\\z", "(?:x|^)tok-[0-9]{8}"}) {
    auto built = engine::build({custom_redactor("custom", std::string(re), "")}, {});
    ASSERT_TRUE(built.errors.empty()) << re;
    EXPECT_FALSE(built.compiled->joinable()) << re;
  }
  for (std::string_view re : {"tok-[^ ]{8}", "tok-[]^]{8}", "tok-\\^[0-9]{8}", "tok-\\$[0-9]{8}"}) {
    auto built = engine::build({custom_redactor("custom", std::string(re), "")}, {});
    ASSERT_TRUE(built.errors.empty()) << re;
    EXPECT_TRUE(built.compiled->joinable()) << re;
  }
}

}  // namespace
}  // namespace airlock::filters::redaction
