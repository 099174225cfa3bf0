// Host names that carry data: shared by the proxy's DLP filter and the launcher's resolver.
#include "net/data_like_host.hpp"

#include <gtest/gtest.h>

namespace airlock::net {
namespace {

TEST(DataLikeHost, DataLikeLabels) {
  EXPECT_EQ(data_like_host("7365637265745f6170695f6b65795f3132333435.exfil.example.com"),
            "hex label");
  EXPECT_EQ(data_like_host("4a6f686e446f65.53656372657431.exfil.example.com"), "hex label");
  EXPECT_EQ(data_like_host("jbswy3dpehpk3pxp.exfil.example.com"), "base32 label");
  EXPECT_EQ(data_like_host("c2vjcmv0x3rva2vuxzeymzq1njc4ota.exfil.example.com"),
            "high-entropy label");
  EXPECT_EQ(data_like_host("ghp-xxxx.yyyyzzzz.aaaabbbb.ccccdddd.exfil.example.com"),
            "chained labels");
  // Benign names: CDNs, cloud names, punycode, short hashes.
  for (const char* host :
       {"cdnjs.cloudflare.com", "api.github.com", "docs.github.com", "www.google.com",
        "d111111abcdef8.cloudfront.net", "ec2-54-12-34-56.compute-1.amazonaws.com",
        "xn--80ak6aa92e.example.com", "dev.us-east-1.api.example.com", "example.com",
        "storage.googleapis.com", "deadbeef.example.com"})
    EXPECT_FALSE(data_like_host(host).has_value()) << host;
}

}  // namespace
}  // namespace airlock::net
