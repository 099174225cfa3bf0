#include "launcher/resolver.hpp"

#include "launcher/dns_message.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace airlock::launcher {
namespace {

using bytes = std::vector<std::uint8_t>;

bytes query(const std::string& name, std::uint16_t type, std::uint16_t klass = dns::class_in) {
  bytes q = {0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  std::size_t start = 0;
  while (start < name.size()) {
    auto dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q.push_back(static_cast<std::uint8_t>(dot - start));
    q.insert(q.end(), name.begin() + static_cast<std::ptrdiff_t>(start),
             name.begin() + static_cast<std::ptrdiff_t>(dot));
    start = dot + 1;
  }
  q.push_back(0);
  q.push_back(static_cast<std::uint8_t>(type >> 8));
  q.push_back(static_cast<std::uint8_t>(type));
  q.push_back(static_cast<std::uint8_t>(klass >> 8));
  q.push_back(static_cast<std::uint8_t>(klass));
  return q;
}

struct answer {
  int rcode = -1;
  int count = 0;
  bytes address;  // of the first answer
};

answer decode(const bytes& r) {
  answer a;
  if (r.size() < 12) return a;
  a.rcode = r[3] & 0x0f;
  a.count = (r[6] << 8) | r[7];
  if (a.count == 0) return a;
  // Skip the question: name, type, class.
  std::size_t pos = 12;
  while (r[pos] != 0)
    pos += 1 + r[pos];
  pos += 5;
  const std::size_t rdlength = static_cast<std::size_t>((r[pos + 10] << 8) | r[pos + 11]);
  a.address.assign(r.begin() + static_cast<std::ptrdiff_t>(pos + 12),
                   r.begin() + static_cast<std::ptrdiff_t>(pos + 12 + rdlength));
  return a;
}

TEST(LauncherResolver, EveryHostNameGetsItsOwnPoolAddress) {
  name_pool pool;
  resolver r(pool, "airlock", true);
  auto a = decode(r.answer(query("allowed.test", dns::type_a)));
  EXPECT_EQ(a.rcode, 0);
  ASSERT_EQ(a.count, 1);
  EXPECT_EQ(a.address, (bytes{198, 18, 0, 1}));
  auto other = decode(r.answer(query("denied.example", dns::type_a)));
  EXPECT_EQ(other.address, (bytes{198, 18, 0, 2}));
  // Case does not make a new name; AAAA has the same index in the IPv6 pool.
  auto again = decode(r.answer(query("ALLOWED.Test", dns::type_a)));
  EXPECT_EQ(again.address, (bytes{198, 18, 0, 1}));
  auto v6 = decode(r.answer(query("allowed.test", dns::type_aaaa)));
  ASSERT_EQ(v6.count, 1);
  EXPECT_EQ(v6.address, (bytes{0xfd, 0x61, 0x69, 0x72, 0x6c, 0x6b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(pool.name_of_v4({198, 18, 0, 2}), "denied.example");
  // A single label is a name like any other (a policy may list "intranet").
  EXPECT_EQ(decode(r.answer(query("intranet", dns::type_a))).count, 1);
}

TEST(LauncherResolver, WithoutIpv6CaptureAaaaIsAnEmptyAnswer) {
  name_pool pool;
  resolver r(pool, "airlock", false);
  auto v6 = decode(r.answer(query("allowed.test", dns::type_aaaa)));
  EXPECT_EQ(v6.rcode, 0);  // NOERROR, no records: "no IPv6 address", not "no such name"
  EXPECT_EQ(v6.count, 0);
  EXPECT_EQ(decode(r.answer(query("allowed.test", dns::type_a))).address, (bytes{198, 18, 0, 1}));
}

TEST(LauncherResolver, LocalNamesAreLoopback) {
  name_pool pool;
  resolver r(pool, "Airlock", true);
  for (const char* name : {"localhost", "api.localhost", "airlock", "AIRLOCK"}) {
    auto a = decode(r.answer(query(name, dns::type_a)));
    EXPECT_EQ(a.address, (bytes{127, 0, 0, 1})) << name;
    auto v6 = decode(r.answer(query(name, dns::type_aaaa)));
    ASSERT_EQ(v6.address.size(), 16u) << name;
    EXPECT_EQ(v6.address[15], 1);
    EXPECT_EQ(v6.address[0], 0);
  }
  EXPECT_EQ(pool.size(), 0u);
  // "notlocalhost" is not under localhost.
  EXPECT_EQ(decode(r.answer(query("notlocalhost", dns::type_a))).address, (bytes{198, 18, 0, 1}));
}

TEST(LauncherResolver, NamesNoPolicyCouldAllowAreNxdomain) {
  name_pool pool;
  resolver r(pool, "airlock", true);
  const std::vector<bytes> queries = {
      query("x.onion", dns::type_a),          query("onion", dns::type_a),
      query("a.b.invalid", dns::type_aaaa),   query("bad name.test", dns::type_a),
      query("under/score.test", dns::type_a), query("", dns::type_a),
  };
  for (const auto& q : queries) {
    auto a = decode(r.answer(q));
    EXPECT_EQ(a.rcode, 3);
    EXPECT_EQ(a.count, 0);
  }
  EXPECT_EQ(pool.size(), 0u);  // nothing of them is remembered
  EXPECT_EQ(r.get_stats().nxdomain, queries.size());
}

TEST(LauncherResolver, NamesThatCarryDataAreNxdomainUnlessAllowed) {
  name_pool pool;
  const std::string hex = "7365637265745f6170695f6b65795f3132333435.exfil.example.com";
  const std::string b32 = "jbswy3dpehpk3pxp.exfil.example.com";
  resolver r(pool, "airlock", true, {"jbswy3dpehpk3pxp.exfil.example.com"});
  EXPECT_EQ(decode(r.answer(query(hex, dns::type_a))).rcode, 3);
  // Case is not a way around it (names are compared lower-cased).
  EXPECT_EQ(decode(r.answer(query("7365637265745F6170695F6B65795F3132333435.Exfil.Example.Com",
                                  dns::type_a)))
                .rcode,
            3);
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_EQ(r.get_stats().data_like, 2u);
  // --dns-allow NAME: answered from the pool like any other name.
  auto allowed = decode(r.answer(query(b32, dns::type_a)));
  EXPECT_EQ(allowed.rcode, 0);
  EXPECT_EQ(allowed.count, 1);
  // Ordinary names, UUID-like CDN labels and git-SHA-like ones of the kind hosts use pass.
  for (const char* name : {"api.github.com", "registry.npmjs.org", "d1a2b3c4d5e6f7.cloudfront.net",
                           "s3.us-east-1.amazonaws.com", "pypi.org"})
    EXPECT_EQ(decode(r.answer(query(name, dns::type_a))).rcode, 0) << name;
  EXPECT_EQ(r.get_stats().data_like, 2u);
}

TEST(LauncherResolver, OtherTypesAndClassesAreRefused) {
  name_pool pool;
  resolver r(pool, "airlock", true);
  for (std::uint16_t type : {15, 16, 33, 65, 255, 12, 5}) {  // MX TXT SRV HTTPS ANY PTR CNAME
    auto a = decode(r.answer(query("allowed.test", type)));
    EXPECT_EQ(a.rcode, 5) << type;
    EXPECT_EQ(a.count, 0);
  }
  EXPECT_EQ(decode(r.answer(query("allowed.test", dns::type_a, 3))).rcode, 5);  // CH
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_EQ(r.get_stats().refused, 8u);
}

TEST(LauncherResolver, FullPoolIsAServerFailure) {
  name_pool pool(1);
  resolver r(pool, "airlock", true);
  EXPECT_EQ(decode(r.answer(query("a.test", dns::type_a))).rcode, 0);
  EXPECT_EQ(decode(r.answer(query("b.test", dns::type_a))).rcode, 2);
  EXPECT_EQ(decode(r.answer(query("a.test", dns::type_a))).rcode, 0);
  EXPECT_EQ(r.get_stats().pool_full, 1u);
}

TEST(LauncherResolver, GarbageGetsFormerrOrNothing) {
  name_pool pool;
  resolver r(pool, "airlock", true);
  EXPECT_TRUE(r.answer(bytes{1, 2, 3}).empty());
  auto response = query("a.test", dns::type_a);
  response[2] |= 0x80;  // QR: an answer, not a question
  EXPECT_TRUE(r.answer(response).empty());
  auto cut = query("a.test", dns::type_a);
  cut.resize(15);
  auto reply = r.answer(cut);
  ASSERT_EQ(reply.size(), 12u);
  EXPECT_EQ(reply[3] & 0x0f, 1);
  EXPECT_EQ(r.get_stats().malformed, 3u);
  EXPECT_EQ(r.get_stats().queries, 3u);
}

}  // namespace
}  // namespace airlock::launcher
