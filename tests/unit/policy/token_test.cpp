#include "policy/token.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

TEST(Token, Sha256Hex) {
  // FIPS 180-2 test vectors.
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Token, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
}

TEST(Token, Base64Decode) {
  // RFC 4648 section 10 test vectors.
  EXPECT_EQ(base64_decode(""), "");
  EXPECT_EQ(base64_decode("Zg=="), "f");
  EXPECT_EQ(base64_decode("Zm8="), "fo");
  EXPECT_EQ(base64_decode("Zm9v"), "foo");
  EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64_decode("Zm9vYmE="), "fooba");
  EXPECT_EQ(base64_decode("Zm9vYmFy"), "foobar");
  EXPECT_EQ(base64_decode("+/+/"), std::string("\xfb\xff\xbf"));
  EXPECT_EQ(base64_decode(std::string_view("AAA=", 4)), std::string("\0\0", 2));
}

TEST(Token, Base64RejectsNonCanonical) {
  for (std::string_view bad : {"Zg", "Zg=", "Zm9", "Z===", "====", "Zg==Zg==", "Zm=v",
                               "Zh==", "Zm9=", "Zm 9v", "Zm9v\n", "Zm9-", "Zm9_", "=Zm9"}) {
    EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace airlock::policy
