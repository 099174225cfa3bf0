#include "filters/dlp/record_scrub.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

// What DLP takes out of a record before it repeats what the agent chose: the path by segment,
// the host to its last two labels, a method token, and free text (a refusal's detail, a
// protocol answer) cut where a redactor matches, withheld where it cannot be cut.
namespace airlock::filters::dlp {
namespace {

// Fakes shaped like the real thing (a GitHub-shaped token, AWS's documented example key id).
constexpr std::string_view kGithub = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123";
constexpr std::string_view kAws = "AKIAIOSFODNN7EXAMPLE";

const scanner& default_scanner() {
  static const std::shared_ptr<const scanner> s = [] {
    auto built = scanner::build({});
    EXPECT_TRUE(built.errors.empty());
    return built.built;
  }();
  return *s;
}

std::string with(std::string_view a, std::string_view b, std::string_view c = {}) {
  return std::string(a) + std::string(b) + std::string(c);
}

TEST(DlpRecordScrub, PathSegmentsHoldingAFindingAreReplaced) {
  const auto& s = default_scanner();
  EXPECT_EQ(scrub_path(s, "/echo/plain"), std::nullopt);
  EXPECT_EQ(scrub_path(s, with("/other/", kGithub, "/x")), "/other/[REDACTED:dlp]/x");
}

TEST(DlpRecordScrub, AHostKeepsItsLastTwoLabels) {
  const auto& s = default_scanner();
  EXPECT_EQ(scrub_host(s, "api.example.test"), std::nullopt);
  EXPECT_EQ(scrub_host(s, with(kGithub, ".tls.test")), "[REDACTED:dlp].tls.test");
  // An AWS key id arrives lower-cased in a host name and is read upper-cased.
  std::string lower(kAws);
  for (auto& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_EQ(scrub_host(s, lower + ".x.test"), "[REDACTED:dlp].x.test");
}

TEST(DlpRecordScrub, AMethodTokenHoldingAFindingIsReplaced) {
  const auto& s = default_scanner();
  EXPECT_EQ(scrub_method(s, "GET"), std::nullopt);
  EXPECT_EQ(scrub_method(s, kGithub), "[REDACTED:dlp]");
}

TEST(DlpRecordScrub, TextIsCutWhereARedactorMatches) {
  const auto& s = default_scanner();
  EXPECT_EQ(scrub_text(s, "rule api: path not allowed").what, scrubbed_text::outcome::clean);
  const auto cut = scrub_text(s, with("query parameter '", kGithub, "' is not allowed"));
  EXPECT_EQ(cut.what, scrubbed_text::outcome::cut);
  EXPECT_EQ(cut.text, "query parameter '[REDACTED:github-token]' is not allowed");
}

TEST(DlpRecordScrub, TextIsWithheldWhenTheFindingCannotBeCutOut) {
  const auto& s = default_scanner();
  // Lower-cased, an AWS key id matches no redactor; read upper-cased it is one.
  std::string lower(kAws);
  for (auto& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_EQ(scrub_text(s, "CONNECT a.test but SNI " + lower + ".a.test").what,
            scrubbed_text::outcome::withheld);
  // Base64 of a key: found decoded, not where a redactor matches.
  EXPECT_EQ(scrub_text(s, "tool 'QUtJQUlPU0ZPRE5ON0VYQU1QTEU=' is not allowed").what,
            scrubbed_text::outcome::withheld);
}

TEST(DlpRecordScrub, TheRecordIsReadOnceAndItsAnswerCutOrDropped) {
  const auto& s = default_scanner();
  exchange_record rec;
  rec.host = "api.test";
  rec.path = with("/other/", kGithub);
  rec.method = "GET";
  rec.detail = with("tool '", kGithub, "' is not allowed");
  rec.answer = std::make_shared<protocol_answer>(
      protocol_answer{200, "application/json", with(R"({"message":"tool ')", kGithub, "'\"}")});
  record_scrub_state state;
  scrub_record(s, rec, state);
  EXPECT_EQ(rec.host, "api.test");
  EXPECT_EQ(rec.path, "/other/[REDACTED:dlp]");
  EXPECT_EQ(rec.detail, "tool '[REDACTED:github-token]' is not allowed");
  ASSERT_NE(rec.answer, nullptr);
  EXPECT_EQ(rec.answer->body, R"({"message":"tool '[REDACTED:github-token]'"})");
  EXPECT_TRUE(state.head_read);

  // A detail written afterwards is read; the head is not read again.
  rec.path = with("/again/", kGithub);
  rec.detail = "still 'QUtJQUlPU0ZPRE5ON0VYQU1QTEU='";
  rec.answer = std::make_shared<protocol_answer>(
      protocol_answer{200, "application/json", "QUtJQUlPU0ZPRE5ON0VYQU1QTEU="});
  scrub_record(s, rec, state);
  EXPECT_EQ(rec.path, with("/again/", kGithub));  // the head hook's reading stands
  EXPECT_EQ(rec.detail.find("QUtJ"), std::string::npos);
  EXPECT_EQ(rec.answer, nullptr);  // withheld: the proxy's own text answer instead
}

}  // namespace
}  // namespace airlock::filters::dlp
