#include "net/address_guard.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace airlock::net {
namespace {

namespace ip = boost::asio::ip;

ip::address addr(std::string_view s) {
  return ip::make_address(std::string(s));
}

cidr net(std::string_view s) {
  auto c = cidr::parse(s);
  EXPECT_TRUE(c) << s;
  return c.value_or(cidr{});
}

std::string category(std::string_view a) {
  const auto c = special_purpose(addr(a));
  return c ? std::string(*c) : std::string("public");
}

struct expectation {
  const char* address;
  const char* category;  // "public" when not special
};

void expect_categories(std::initializer_list<expectation> cases) {
  for (const auto& c : cases)
    EXPECT_EQ(category(c.address), c.category) << c.address;
}

// --- cidr ------------------------------------------------------------------------------------

TEST(Cidr, ParseMasksAndPrints) {
  EXPECT_EQ(net("10.0.0.0/8").to_string(), "10.0.0.0/8");
  EXPECT_EQ(net("10.1.2.3/8").to_string(), "10.0.0.0/8");
  EXPECT_EQ(net("10.1.2.3").to_string(), "10.1.2.3/32");
  EXPECT_EQ(net("0.0.0.0/0").to_string(), "0.0.0.0/0");
  EXPECT_EQ(net("255.255.255.255/1").to_string(), "128.0.0.0/1");
  EXPECT_EQ(net("fd00::/8").to_string(), "fd00::/8");
  EXPECT_EQ(net("fdff:1:2::3/9").to_string(), "fd80::/9");
  EXPECT_EQ(net("2001:db8::1").to_string(), "2001:db8::1/128");
  EXPECT_EQ(net("::/0").to_string(), "::/0");
  EXPECT_EQ(net("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/127").to_string(),
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127");
  EXPECT_EQ(net("10.0.0.0/8").prefix, 8u);
  EXPECT_TRUE(net("10.0.0.0/8").network.is_v4());
}

TEST(Cidr, ParseRejects) {
  for (const char* s : {"",
                        "/",
                        "/8",
                        "10.0.0.0/",
                        "10.0.0.0/33",
                        "10.0.0.0/-1",
                        "10.0.0.0/+8",
                        "10.0.0.0/08",
                        "10.0.0.0/8/8",
                        "10.0.0.0 /8",
                        "10.0.0.0/ 8",
                        "10.0.0.0/8 ",
                        "10/8",
                        "10.0.0/8",
                        "0x0a.0.0.0/8",
                        "010.0.0.0/8",
                        "10.0.0.256/32",
                        "::/129",
                        "fe80::1%eth0/64",
                        "[::1]/128",
                        "::1/1000",
                        "example.com/8",
                        "1.2.3.4/0x8",
                        "1.2.3.4/4294967304"}) {
    EXPECT_FALSE(cidr::parse(s)) << s;
  }
}

TEST(Cidr, ContainsEdges) {
  const auto c = net("172.16.0.0/12");
  EXPECT_FALSE(c.contains(addr("172.15.255.255")));
  EXPECT_TRUE(c.contains(addr("172.16.0.0")));
  EXPECT_TRUE(c.contains(addr("172.31.255.255")));
  EXPECT_FALSE(c.contains(addr("172.32.0.0")));
  EXPECT_FALSE(c.contains(addr("2001:db8::1")));

  const auto all4 = net("0.0.0.0/0");
  EXPECT_TRUE(all4.contains(addr("255.255.255.255")));
  EXPECT_TRUE(all4.contains(addr("::ffff:1.2.3.4")));
  EXPECT_FALSE(all4.contains(addr("2001:db8::1")));

  const auto c6 = net("2001:db8:ab00::/40");
  EXPECT_FALSE(c6.contains(addr("2001:db8:aaff:ffff:ffff:ffff:ffff:ffff")));
  EXPECT_TRUE(c6.contains(addr("2001:db8:ab00::")));
  EXPECT_TRUE(c6.contains(addr("2001:db8:abff:ffff:ffff:ffff:ffff:ffff")));
  EXPECT_FALSE(c6.contains(addr("2001:db8:ac00::")));
  EXPECT_FALSE(c6.contains(addr("10.0.0.1")));

  const auto host = net("192.0.2.7");
  EXPECT_TRUE(host.contains(addr("192.0.2.7")));
  EXPECT_FALSE(host.contains(addr("192.0.2.6")));
  EXPECT_FALSE(host.contains(addr("192.0.2.8")));
}

TEST(Cidr, MappedAndPlainIpv4MatchEachOther) {
  const auto v4 = net("10.0.0.0/8");
  EXPECT_TRUE(v4.contains(addr("10.1.2.3")));
  EXPECT_TRUE(v4.contains(addr("::ffff:10.1.2.3")));
  EXPECT_FALSE(v4.contains(addr("::ffff:11.1.2.3")));
  EXPECT_FALSE(v4.contains(addr("::10.1.2.3")));        // IPv4-compatible is not the same
  EXPECT_FALSE(v4.contains(addr("64:ff9b::a01:203")));  // nor is NAT64

  const auto mapped = net("::ffff:10.0.0.0/104");
  EXPECT_TRUE(mapped.contains(addr("10.1.2.3")));
  EXPECT_TRUE(mapped.contains(addr("::ffff:10.1.2.3")));
  EXPECT_FALSE(mapped.contains(addr("11.0.0.0")));

  const auto one = net("::ffff:127.0.0.1");
  EXPECT_TRUE(one.contains(addr("127.0.0.1")));
  EXPECT_FALSE(one.contains(addr("127.0.0.2")));
}

// --- special_purpose: IPv4 -------------------------------------------------------------------

TEST(SpecialPurpose, Ipv4RangesAtBothEdges) {
  expect_categories({
      {"0.0.0.0", "unspecified"},
      {"0.255.255.255", "unspecified"},
      {"1.0.0.0", "public"},
      {"9.255.255.255", "public"},
      {"10.0.0.0", "private"},
      {"10.255.255.255", "private"},
      {"11.0.0.0", "public"},
      {"100.63.255.255", "public"},
      {"100.64.0.0", "cgnat"},
      {"100.127.255.255", "cgnat"},
      {"100.128.0.0", "public"},
      {"126.255.255.255", "public"},
      {"127.0.0.0", "loopback"},
      {"127.0.0.1", "loopback"},
      {"127.255.255.255", "loopback"},
      {"128.0.0.0", "public"},
      {"169.253.255.255", "public"},
      {"169.254.0.0", "link_local"},
      {"169.254.169.253", "link_local"},
      {"169.254.169.254", "metadata"},
      {"169.254.169.255", "link_local"},
      {"169.254.255.255", "link_local"},
      {"169.255.0.0", "public"},
      {"172.15.255.255", "public"},
      {"172.16.0.0", "private"},
      {"172.31.255.255", "private"},
      {"172.32.0.0", "public"},
      {"191.255.255.255", "public"},
      {"192.0.0.0", "reserved"},
      {"192.0.0.255", "reserved"},
      {"192.0.1.0", "public"},
      {"192.0.1.255", "public"},
      {"192.0.2.0", "documentation"},
      {"192.0.2.255", "documentation"},
      {"192.0.3.0", "public"},
      {"192.88.98.255", "public"},
      {"192.88.99.0", "reserved"},
      {"192.88.99.255", "reserved"},
      {"192.88.100.0", "public"},
      {"192.167.255.255", "public"},
      {"192.168.0.0", "private"},
      {"192.168.255.255", "private"},
      {"192.169.0.0", "public"},
      {"198.17.255.255", "public"},
      {"198.18.0.0", "benchmarking"},
      {"198.19.255.255", "benchmarking"},
      {"198.20.0.0", "public"},
      {"198.51.99.255", "public"},
      {"198.51.100.0", "documentation"},
      {"198.51.100.255", "documentation"},
      {"198.51.101.0", "public"},
      {"203.0.112.255", "public"},
      {"203.0.113.0", "documentation"},
      {"203.0.113.255", "documentation"},
      {"203.0.114.0", "public"},
      {"223.255.255.255", "public"},
      {"224.0.0.0", "multicast"},
      {"239.255.255.255", "multicast"},
      {"240.0.0.0", "reserved"},
      {"255.255.255.254", "reserved"},
      {"255.255.255.255", "broadcast"},
      {"8.8.8.8", "public"},
      {"1.1.1.1", "public"},
      // Globally reachable entries of the registry stay ordinary destinations.
      {"192.31.196.1", "public"},
      {"192.52.193.1", "public"},
      {"192.175.48.1", "public"},
  });
}

TEST(SpecialPurpose, CloudMetadataEndpoints) {
  expect_categories({
      {"169.254.169.254", "metadata"},
      {"169.254.170.2", "metadata"},
      {"100.100.100.200", "metadata"},
      {"192.0.0.192", "metadata"},
      {"168.63.129.16", "metadata"},
      {"168.63.129.15", "public"},
      {"168.63.129.17", "public"},
      {"fd00:ec2::254", "metadata"},
      {"fd00:ec2::253", "private"},
      {"::ffff:169.254.169.254", "metadata"},
      {"64:ff9b::a9fe:a9fe", "metadata"},
  });
}

// --- special_purpose: IPv6 -------------------------------------------------------------------

TEST(SpecialPurpose, Ipv6RangesAtBothEdges) {
  expect_categories({
      {"::", "unspecified"},
      {"::1", "loopback"},
      {"::2", "unspecified"},   // IPv4-compatible 0.0.0.2, in 0.0.0.0/8
      {"::100:0", "reserved"},  // IPv4-compatible 1.0.0.0: public inside, special outside
      {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
      {"fc00::", "private"},
      {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"},
      {"fe00::", "reserved"},
      {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
      {"fe80::", "link_local"},
      {"fe80::1", "link_local"},
      {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link_local"},
      {"fec0::", "private"},
      {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"},
      {"ff00::", "multicast"},
      {"ff02::1", "multicast"},
      {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
      {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "public"},  // outside 2001::/23
      {"2001:db8::", "documentation"},
      {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"},
      {"2001:db9::", "public"},
      {"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"},
      {"3fff::", "documentation"},
      {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"},
      {"3fff:1000::", "public"},
      {"2001:2::", "benchmarking"},
      {"2001:2:0:ffff:ffff:ffff:ffff:ffff", "benchmarking"},
      {"2001:2:1::", "reserved"},
      {"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
      {"2001:200::", "public"},
      {"2000::", "public"},
      {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
      {"4000::", "reserved"},
      {"5f00::1", "reserved"},
      {"100::", "reserved"},
      {"100::ffff:ffff:ffff:ffff", "reserved"},
      {"100:0:0:1::", "reserved"},  // outside 2000::/3 anyway
      {"64:ff9b:1::", "private"},
      {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "private"},
      {"2606:4700:4700::1111", "public"},
      {"2a00:1450:4001:81c::200e", "public"},
  });
}

TEST(SpecialPurpose, EmbeddedIpv4TakesItsCategory) {
  expect_categories({
      // ::ffff:0:0/96 IPv4-mapped.
      {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:7f00:1", "loopback"},
      {"::ffff:10.0.0.1", "private"},
      {"::ffff:0.0.0.0", "unspecified"},
      {"::ffff:255.255.255.255", "broadcast"},
      {"::ffff:8.8.8.8", "public"},
      {"::fffe:808:808", "reserved"},  // just below the mapped block
      {"::1:ffff:808:808", "reserved"},
      // ::/96 IPv4-compatible: special always, with the embedded category when it has one.
      {"::127.0.0.1", "loopback"},
      {"::10.0.0.1", "private"},
      {"::8.8.8.8", "reserved"},
      // 64:ff9b::/96 NAT64: a public embedded address is a public destination.
      {"64:ff9b::127.0.0.1", "loopback"},
      {"64:ff9b::7f00:1", "loopback"},
      {"64:ff9b::a00:1", "private"},
      {"64:ff9b::c0a8:101", "private"},
      {"64:ff9b::808:808", "public"},
      {"64:ff9b::1:808:808", "reserved"},  // outside the /96, in ::/8
      // 2002::/16 6to4: the IPv4 address is bits 16..47.
      {"2002:7f00:1::", "loopback"},
      {"2002:a00:1::1", "private"},
      {"2002:a9fe:a9fe::", "metadata"},
      {"2002:c000:204::1", "documentation"},
      {"2002:808:808::1", "public"},
      {"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "broadcast"},
      // 2001::/32 Teredo: client IPv4 = last 32 bits inverted; special either way.
      {"2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"},       // ~80fffffe = 127.0.0.1
      {"2001:0:4136:e378:8000:63bf:f5ff:fffe", "private"},        // ~f5fffffe = 10.0.0.1
      {"2001:0:4136:e378:8000:63bf:3fff:fdd2", "documentation"},  // RFC 4380: 192.0.2.45
      {"2001:0:4136:e378:8000:63bf:f7f7:f7f7", "reserved"},       // 8.8.8.8: Teredo anyway
      {"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "unspecified"},    // ~ffffffff = 0.0.0.0
  });
}

TEST(SpecialPurpose, ScopeIdDoesNotChangeTheCategory) {
  ip::address_v6 a = ip::make_address_v6("fe80::1");
  a.scope_id(2);
  EXPECT_EQ(special_purpose(a), "link_local");
}

// --- address_guard ---------------------------------------------------------------------------

ip::tcp::endpoint ep(std::string_view a, std::uint16_t port) {
  return {addr(a), port};
}

TEST(AddressGuard, BlocksSpecialAndAllowsPublic) {
  const address_guard g(true, {}, {}, {});
  EXPECT_TRUE(g.check(addr("8.8.8.8"), 443).allowed);
  EXPECT_TRUE(g.check(addr("2606:4700:4700::1111"), 443).allowed);
  EXPECT_TRUE(g.check(addr("::ffff:8.8.8.8"), 443).allowed);

  auto v = g.check(addr("127.0.0.1"), 80);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.category, "loopback");
  v = g.check(addr("::ffff:127.0.0.1"), 80);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.category, "loopback");
  v = g.check(addr("169.254.169.254"), 80);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.category, "metadata");
  v = g.check(addr("fd00:ec2::254"), 80);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.category, "metadata");
  v = g.check(addr("64:ff9b::a9fe:a9fe"), 80);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.category, "metadata");
  v = g.check(addr("::"), 80);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.category, "unspecified");
}

TEST(AddressGuard, AllowCidrsOpenSpecialAddresses) {
  const address_guard g(true, {net("10.0.0.0/8"), net("fd12::/16")}, {}, {});
  EXPECT_TRUE(g.check(addr("10.1.2.3"), 80).allowed);
  EXPECT_TRUE(g.check(addr("::ffff:10.1.2.3"), 80).allowed);  // mapped matches v4 CIDR
  EXPECT_TRUE(g.check(addr("fd12::1"), 80).allowed);
  EXPECT_EQ(g.check(addr("fd13::1"), 80).category, "private");
  EXPECT_TRUE(g.check(addr("11.0.0.0"), 80).allowed);
  EXPECT_EQ(g.check(addr("192.168.1.1"), 80).category, "private");
  // NAT64 of an allowed IPv4 is not the same address: refused.
  EXPECT_EQ(g.check(addr("64:ff9b::a01:203"), 80).category, "private");
}

TEST(AddressGuard, RuleExtraAllowAddsToPolicyAllow) {
  const address_guard g(true, {net("10.0.0.0/8")}, {}, {});
  const std::vector<cidr> extra{net("169.254.169.254/32"), net("::ffff:192.168.0.0/112")};
  EXPECT_EQ(g.check(addr("169.254.169.254"), 80).category, "metadata");
  EXPECT_TRUE(g.check(addr("169.254.169.254"), 80, extra).allowed);
  EXPECT_TRUE(g.check(addr("::ffff:169.254.169.254"), 80, extra).allowed);
  EXPECT_TRUE(g.check(addr("192.168.3.4"), 80, extra).allowed);  // v4 matches mapped CIDR
  EXPECT_TRUE(g.check(addr("192.169.0.0"), 80, extra).allowed);  // public anyway
  EXPECT_EQ(g.check(addr("169.254.169.253"), 80, extra).category, "link_local");
  EXPECT_TRUE(g.check(addr("10.0.0.1"), 80, extra).allowed);
}

TEST(AddressGuard, BlockSpecialOffAllowsEverythingButItself) {
  const address_guard g(false, {}, {ep("127.0.0.1", 3128)}, {});
  EXPECT_TRUE(g.check(addr("127.0.0.1"), 80).allowed);
  EXPECT_TRUE(g.check(addr("169.254.169.254"), 80).allowed);
  const auto v = g.check(addr("127.0.0.1"), 3128);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.category, "proxy_itself");
}

TEST(AddressGuard, ProxyItselfSpecificAddress) {
  const std::vector<cidr> everything{net("0.0.0.0/0"), net("::/0")};
  const address_guard g(true, everything, {ep("127.0.0.1", 3128), ep("::1", 9464)},
                        {addr("127.0.0.1"), addr("10.9.8.7")});
  EXPECT_EQ(g.check(addr("127.0.0.1"), 3128).category, "proxy_itself");
  EXPECT_EQ(g.check(addr("::ffff:127.0.0.1"), 3128).category, "proxy_itself");
  EXPECT_EQ(g.check(addr("0.0.0.0"), 3128).category, "proxy_itself");  // connect() → loopback
  EXPECT_EQ(g.check(addr("::1"), 9464).category, "proxy_itself");
  EXPECT_EQ(g.check(addr("::"), 9464).category, "proxy_itself");
  // Other ports and addresses that do not reach the bound socket are not the proxy.
  EXPECT_TRUE(g.check(addr("127.0.0.1"), 3129).allowed);
  EXPECT_TRUE(g.check(addr("127.0.0.2"), 3128).allowed);
  EXPECT_TRUE(g.check(addr("10.9.8.7"), 3128).allowed);
  EXPECT_TRUE(g.check(addr("::1"), 3128).allowed);
  // Allow CIDRs never override it.
  const std::vector<cidr> extra{net("127.0.0.1/32")};
  EXPECT_FALSE(g.check(addr("127.0.0.1"), 3128, extra).allowed);
}

TEST(AddressGuard, ProxyItselfWildcardListener) {
  const address_guard g(
      true, {net("0.0.0.0/0"), net("::/0")}, {ep("0.0.0.0", 3128)},
      {addr("127.0.0.1"), addr("10.9.8.7"), addr("::1"), addr("fe80::1234"), addr("2001:db8::5")});
  for (const char* a : {"127.0.0.1", "127.1.2.3", "0.0.0.0", "10.9.8.7", "::ffff:10.9.8.7", "::1",
                        "::", "fe80::1234", "2001:db8::5", "::ffff:127.0.0.1"}) {
    EXPECT_EQ(g.check(addr(a), 3128).category, "proxy_itself") << a;
  }
  ip::address_v6 scoped = ip::make_address_v6("fe80::1234");
  scoped.scope_id(3);
  EXPECT_EQ(g.check(scoped, 3128).category, "proxy_itself");
  for (const char* a : {"10.9.8.6", "8.8.8.8", "2001:db8::6"}) {
    EXPECT_TRUE(g.check(addr(a), 3128).allowed) << a;
  }
  EXPECT_TRUE(g.check(addr("10.9.8.7"), 3127).allowed);

  const address_guard g6(true, {}, {ep("::", 8080)}, {addr("192.0.2.10")});
  EXPECT_EQ(g6.check(addr("192.0.2.10"), 8080).category, "proxy_itself");
  EXPECT_EQ(g6.check(addr("127.0.0.1"), 8080).category, "proxy_itself");
  EXPECT_EQ(g6.check(addr("192.0.2.10"), 8081).category, "documentation");
}

TEST(AddressGuard, ReadsLocalInterfacesWhenNotGiven) {
  const auto local = local_interface_addresses();
  bool has_loopback = false;
  for (const auto& a : local)
    has_loopback = has_loopback || a.is_loopback();
  EXPECT_TRUE(has_loopback);  // lo is up in every namespace we run in
  const address_guard g(false, {}, {ep("0.0.0.0", 3128)});
  for (const auto& a : local) {
    EXPECT_EQ(g.check(a, 3128).category, "proxy_itself") << a.to_string();
    EXPECT_TRUE(g.check(a, 3127).allowed) << a.to_string();
  }
}

}  // namespace
}  // namespace airlock::net
