#include "tls/leaf_name.hpp"

#include <gtest/gtest.h>

#include <string>

namespace airlock::tls {
namespace {

TEST(TlsLeafName, CanonicalDnsName) {
  auto n = parse_leaf_name("Api.Example.COM.");
  ASSERT_TRUE(n);
  EXPECT_FALSE(n->is_ip);
  EXPECT_EQ(n->text, "api.example.com");
  EXPECT_EQ(parse_leaf_name("under_score-host.example")->text, "under_score-host.example");
  EXPECT_EQ(parse_leaf_name("localhost")->text, "localhost");
}

TEST(TlsLeafName, IpLiterals) {
  auto v4 = parse_leaf_name("127.0.0.1");
  ASSERT_TRUE(v4);
  EXPECT_TRUE(v4->is_ip);
  EXPECT_EQ(v4->text, "127.0.0.1");
  auto v6 = parse_leaf_name("[2001:DB8:0:0::1]");
  ASSERT_TRUE(v6);
  EXPECT_TRUE(v6->is_ip);
  EXPECT_EQ(v6->text, "2001:db8::1");  // RFC 5952
  EXPECT_EQ(parse_leaf_name("::1")->text, "::1");
}

TEST(TlsLeafName, RejectsWhatACertificateMustNotName) {
  const std::string long_label(64, 'a');
  std::string long_name;
  while (long_name.size() < 254)
    long_name += "abcdefg.";
  long_name += "com";
  for (std::string_view bad :
       {std::string_view(""), std::string_view("."), std::string_view("*.example.com"),
        std::string_view("a..b"), std::string_view(".example.com"),
        std::string_view("exa mple.com"), std::string_view("a.com,DNS:evil.com"),
        std::string_view("a.com/x"), std::string_view("127.1"), std::string_view("1.2.3.256"),
        std::string_view("example.123"), std::string_view("[::1"), std::string_view("fe80::1%eth0"),
        std::string_view("[]"), std::string_view("a\0b", 3),
        std::string_view("caf\xc3\xa9.example"), std::string_view(long_label),
        std::string_view(long_name)}) {
    EXPECT_FALSE(parse_leaf_name(bad)) << "accepted: " << bad;
  }
  // 63-character labels and 253-character names are the limits, not beyond them.
  EXPECT_TRUE(parse_leaf_name(std::string(63, 'a') + ".com"));
}

}  // namespace
}  // namespace airlock::tls
