#include "core/units.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace airlock::core {
namespace {

using std::chrono::milliseconds;
constexpr std::uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

TEST(ParseSize, PlainAndBinaryUnits) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("0KiB"), 0u);
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("512B"), 512u);
  EXPECT_EQ(parse_size("64KiB"), 64 * KiB);
  EXPECT_EQ(parse_size("10MiB"), 10 * MiB);
  EXPECT_EQ(parse_size("1GiB"), GiB);
}

TEST(ParseSize, DecimalUnitsAreThousands) {
  EXPECT_EQ(parse_size("1KB"), 1000u);
  EXPECT_EQ(parse_size("3MB"), 3'000'000u);
  EXPECT_EQ(parse_size("2GB"), 2'000'000'000u);
}

TEST(ParseSize, SingleLetterMeansBinary) {
  EXPECT_EQ(parse_size("1K"), KiB);
  EXPECT_EQ(parse_size("5M"), 5 * MiB);
  EXPECT_EQ(parse_size("2G"), 2 * GiB);
}

TEST(ParseSize, SuffixIsCaseInsensitive) {
  EXPECT_EQ(parse_size("64kib"), 64 * KiB);
  EXPECT_EQ(parse_size("64KIB"), 64 * KiB);
  EXPECT_EQ(parse_size("64kIb"), 64 * KiB);
  EXPECT_EQ(parse_size("1kb"), 1000u);
  EXPECT_EQ(parse_size("1k"), KiB);
  EXPECT_EQ(parse_size("1m"), MiB);
  EXPECT_EQ(parse_size("1g"), GiB);
  EXPECT_EQ(parse_size("7b"), 7u);
}

TEST(ParseSize, SpacesAroundAndBeforeTheSuffix) {
  EXPECT_EQ(parse_size(" 64KiB"), 64 * KiB);
  EXPECT_EQ(parse_size("64KiB "), 64 * KiB);
  EXPECT_EQ(parse_size("64 KiB"), 64 * KiB);
  EXPECT_EQ(parse_size("  64   KiB  "), 64 * KiB);
  EXPECT_EQ(parse_size(" 10 "), 10u);
}

TEST(ParseSize, Overflow) {
  constexpr auto max = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(parse_size("18446744073709551615"), max);
  EXPECT_EQ(parse_size("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_size("99999999999999999999999999"), std::nullopt);
  // 2^34 GiB = 2^64: one past the top.
  EXPECT_EQ(parse_size("17179869183GiB"), 17179869183ULL * GiB);
  EXPECT_EQ(parse_size("17179869184GiB"), std::nullopt);
  EXPECT_EQ(parse_size("17179869184G"), std::nullopt);
  EXPECT_EQ(parse_size("18446744073709551615KB"), std::nullopt);
  EXPECT_EQ(parse_size("18446744073709551615B"), max);
}

TEST(ParseSize, RejectsNegativeSignedAndGarbage) {
  for (const char* s : {"",     " ",    "-1",      "-0",  "+1",    "KiB",    "abc",  "1.5M",
                        "1,5M", "0x10", "1e3",     "1 2", "1KiBB", "1KiB B", "1 Ki", "1TiB",
                        "1T",   "1i",   "10MiB/s", "\t1", "1\t",   "1\n",    "one",  "1 kib x"}) {
    EXPECT_EQ(parse_size(s), std::nullopt) << '"' << s << '"';
  }
}

TEST(ParseSize, EmbeddedNulIsNotIgnored) {
  using namespace std::string_literals;
  EXPECT_EQ(parse_size("1\0K"s), std::nullopt);
  EXPECT_EQ(parse_size(std::string_view("1K\0", 3)), std::nullopt);
}

TEST(ParseDuration, Units) {
  EXPECT_EQ(parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_duration("5s"), milliseconds(5000));
  EXPECT_EQ(parse_duration("2m"), milliseconds(120'000));
  EXPECT_EQ(parse_duration("1h"), milliseconds(3'600'000));
  EXPECT_EQ(parse_duration("1d"), milliseconds(86'400'000));
  EXPECT_EQ(parse_duration("30d"), milliseconds(30LL * 86'400'000));
  EXPECT_EQ(parse_duration("0ms"), milliseconds(0));
  EXPECT_EQ(parse_duration("0"), milliseconds(0));
}

TEST(ParseDuration, BareNumberIsSeconds) {
  EXPECT_EQ(parse_duration("30"), milliseconds(30'000));
  EXPECT_EQ(parse_duration(" 30 "), milliseconds(30'000));
  EXPECT_EQ(parse_duration("5 s"), milliseconds(5000));
}

TEST(ParseDuration, Overflow) {
  // The result must fit milliseconds (int64) with room to add it to a time_point; anything
  // that big is a typo.
  EXPECT_EQ(parse_duration("99999999999999999999"), std::nullopt);
  EXPECT_EQ(parse_duration("18446744073709551615ms"), std::nullopt);
  EXPECT_EQ(parse_duration("9223372036854775807ms"), std::nullopt);
  EXPECT_EQ(parse_duration("1000000000000h"), std::nullopt);
  EXPECT_EQ(parse_duration("5124095576030431h"), std::nullopt);  // wraps int64 if unchecked
  EXPECT_EQ(parse_duration("1000000000000d"), std::nullopt);
  EXPECT_EQ(parse_duration("18446744073709551615"), std::nullopt);
  // Large but sane values still work.
  EXPECT_EQ(parse_duration("8760h"), milliseconds(8760LL * 3'600'000));
  auto big = parse_duration("1000000h");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->count(), 1'000'000LL * 3'600'000);
  EXPECT_GT(big->count(), 0);
}

TEST(ParseDuration, RejectsGarbage) {
  for (const char* s :
       {"",    " ",   "ms",   "s",   "-5s",  "+5s",  "1.5s", "5sec", "5 seconds", "5us",
        "5ns", "5dd", "5msx", "5hs", "0x5s", "five", "5 5s", "5s5",  "\t5s",      "5smm"}) {
    EXPECT_EQ(parse_duration(s), std::nullopt) << '"' << s << '"';
  }
}

TEST(ParseDuration, ResultsAreNeverNegative) {
  for (const char* s :
       {"1ms", "9999999999s", "99999999m", "999999h", "4294967296", "1125899906842624ms"}) {
    auto d = parse_duration(s);
    if (d) {
      EXPECT_GE(d->count(), 0) << s;
    }
  }
}

}  // namespace
}  // namespace airlock::core
