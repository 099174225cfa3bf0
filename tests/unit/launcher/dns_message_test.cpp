#include "launcher/dns_message.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace airlock::launcher::dns {
namespace {

using bytes = std::vector<std::uint8_t>;

// A query as a stub resolver sends it: id 0x1234, RD, one question, optionally an OPT record.
bytes make_query(const std::vector<std::string>& labels, std::uint16_t type, bool edns = false,
                 std::uint16_t flags = 0x0100, std::uint16_t qdcount = 1) {
  bytes q = {0x12,
             0x34,
             static_cast<std::uint8_t>(flags >> 8),
             static_cast<std::uint8_t>(flags & 0xff),
             0,
             static_cast<std::uint8_t>(qdcount),
             0,
             0,
             0,
             0,
             0,
             static_cast<std::uint8_t>(edns ? 1 : 0)};
  for (const auto& l : labels) {
    q.push_back(static_cast<std::uint8_t>(l.size()));
    q.insert(q.end(), l.begin(), l.end());
  }
  q.push_back(0);
  q.push_back(static_cast<std::uint8_t>(type >> 8));
  q.push_back(static_cast<std::uint8_t>(type & 0xff));
  q.push_back(0);
  q.push_back(1);  // IN
  if (edns) {
    const bytes opt = {0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0};  // 1232 bytes, DO
    q.insert(q.end(), opt.begin(), opt.end());
  }
  return q;
}

std::uint16_t u16(const bytes& b, std::size_t at) {
  return static_cast<std::uint16_t>((b[at] << 8) | b[at + 1]);
}

TEST(LauncherDns, ParsesAQuestionAndLowerCasesTheName) {
  auto p = parse_query(make_query({"Allowed", "TEST"}, type_a));
  ASSERT_TRUE(p.value);
  EXPECT_EQ(p.value->id, 0x1234);
  EXPECT_TRUE(p.value->recursion_desired);
  EXPECT_EQ(p.value->name, "allowed.test");
  EXPECT_TRUE(p.value->name_is_hostname);
  EXPECT_EQ(p.value->type, type_a);
  EXPECT_EQ(p.value->klass, class_in);
  EXPECT_FALSE(p.value->edns);
}

TEST(LauncherDns, ReplyEchoesTheQuestionInItsOriginalCase) {
  const auto query = make_query({"ExAmPle", "CoM"}, type_a, /*edns=*/true);
  auto p = parse_query(query);
  ASSERT_TRUE(p.value);
  EXPECT_TRUE(p.value->edns);
  address_record rec;
  rec.address = {198, 18, 0, 7};
  const auto r = make_reply(*p.value, rcode::no_error, {&rec, 1}, 60);
  EXPECT_EQ(u16(r, 0), 0x1234);
  EXPECT_EQ(u16(r, 2), 0x8180);  // QR, RD, RA, NOERROR
  EXPECT_EQ(u16(r, 4), 1);       // one question
  EXPECT_EQ(u16(r, 6), 1);       // one answer
  EXPECT_EQ(u16(r, 10), 1);      // the OPT record
  const std::size_t qlen = 1 + 7 + 1 + 3 + 1 + 4;
  EXPECT_EQ(bytes(r.begin() + 12, r.begin() + 12 + qlen),
            bytes(query.begin() + 12, query.begin() + 12 + qlen));
  std::size_t a = 12 + qlen;
  EXPECT_EQ(u16(r, a), 0xC00C);  // a pointer to the question's name
  EXPECT_EQ(u16(r, a + 2), type_a);
  EXPECT_EQ(u16(r, a + 4), class_in);
  EXPECT_EQ(u16(r, a + 8), 60);  // TTL, low half
  EXPECT_EQ(u16(r, a + 10), 4);
  EXPECT_EQ(bytes(r.begin() + a + 12, r.begin() + a + 16), (bytes{198, 18, 0, 7}));
  const std::size_t opt = a + 16;
  EXPECT_EQ(r[opt], 0);
  EXPECT_EQ(u16(r, opt + 1), type_opt);
  EXPECT_EQ(r.size(), opt + 11);
}

TEST(LauncherDns, AaaaAnswerCarriesSixteenBytes) {
  auto p = parse_query(make_query({"a", "b"}, type_aaaa));
  ASSERT_TRUE(p.value);
  address_record rec;
  rec.type = type_aaaa;
  rec.address = {0xfd, 0x61, 0x69, 0x72, 0x6c, 0x6b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const auto r = make_reply(*p.value, rcode::no_error, {&rec, 1}, 60);
  EXPECT_EQ(u16(r, 2) & 0x000f, 0);
  EXPECT_EQ(r.size(), 12 + (1 + 1 + 1 + 1 + 1 + 4) + 12 + 16u);
  EXPECT_EQ(r.back(), 1);
  EXPECT_EQ(r[r.size() - 16], 0xfd);
}

TEST(LauncherDns, NeverAnswersAnAnswerOrAFragment) {
  // QR set: a response. Answering it could make two resolvers play ping-pong.
  EXPECT_FALSE(parse_query(make_query({"a"}, type_a, false, 0x8100)).reply);
  for (std::size_t n = 0; n < header_size; ++n) {
    bytes b(n, 0);
    auto p = parse_query(b);
    EXPECT_FALSE(p.value);
    EXPECT_FALSE(p.reply) << n;
  }
  EXPECT_TRUE(make_header_reply(bytes(5, 0), rcode::format_error).empty());
}

TEST(LauncherDns, OtherOpcodesAreNotImplemented) {
  auto q = make_query({"a"}, type_a, false, 0x1100);  // opcode 2 (STATUS), RD
  auto p = parse_query(q);
  EXPECT_FALSE(p.value);
  ASSERT_TRUE(p.reply);
  EXPECT_EQ(p.error, rcode::not_implemented);
  auto r = make_header_reply(q, p.error);
  ASSERT_EQ(r.size(), header_size);
  EXPECT_EQ(u16(r, 0), 0x1234);
  EXPECT_EQ(u16(r, 2), 0x8000 | 0x1000 | 0x0100 | 0x0080 | 4);
  EXPECT_EQ(u16(r, 4), 0);
}

TEST(LauncherDns, MalformedQueriesAreFormatErrors) {
  std::vector<bytes> bad;
  bad.push_back(make_query({"a"}, type_a, false, 0x0100, 0));  // no question
  bad.push_back(make_query({"a"}, type_a, false, 0x0100, 2));  // two questions
  {
    auto q = make_query({"abc"}, type_a);
    q.resize(q.size() - 3);  // the type and class cut short
    bad.push_back(q);
  }
  {
    auto q = make_query({"abc"}, type_a);
    q.resize(14);  // inside the name
    bad.push_back(q);
  }
  bad.push_back(make_query({std::string(64, 'a')}, type_a));  // label over 63
  {
    auto q = make_query({"a"}, type_a);
    q[12] = 0xC0;  // a compression pointer in a question
    q[13] = 0x0C;
    bad.push_back(q);
  }
  {
    // 5 labels of 63: 320 bytes of name, over the 255 limit.
    std::vector<std::string> labels(5, std::string(63, 'x'));
    bad.push_back(make_query(labels, type_a));
  }
  {
    auto q = make_query({"a"}, type_a);
    q[7] = 1;  // an answer record in a query
    bad.push_back(q);
  }
  {
    auto q = make_query({"a"}, type_a, true);
    q.pop_back();  // the OPT record cut short
    bad.push_back(q);
  }
  {
    auto q = make_query({"a"}, type_a, true);
    const bytes opt = {0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};
    q.insert(q.end(), opt.begin(), opt.end());
    q[11] = 2;  // two OPT records (RFC 6891 section 6.1.1)
    bad.push_back(q);
  }
  for (std::size_t i = 0; i < bad.size(); ++i) {
    auto p = parse_query(bad[i]);
    EXPECT_FALSE(p.value) << i;
    EXPECT_TRUE(p.reply) << i;
    EXPECT_EQ(p.error, rcode::format_error) << i;
  }
}

TEST(LauncherDns, NameOfExactlyTheMaximumLengthIsAccepted) {
  // 3 x 63 + 61 = 250 bytes of labels, + 4 length bytes + the root = 255 on the wire.
  std::vector<std::string> labels = {std::string(63, 'a'), std::string(63, 'b'),
                                     std::string(63, 'c'), std::string(61, 'd')};
  auto p = parse_query(make_query(labels, type_a));
  ASSERT_TRUE(p.value);
  EXPECT_EQ(p.value->name.size(), 253u);
  labels.back().push_back('e');
  EXPECT_FALSE(parse_query(make_query(labels, type_a)).value);
}

TEST(LauncherDns, BytesNoHostNameHasAreFlagged) {
  for (const std::string& label : {std::string("a b"), std::string("a.b"), std::string("a\0b", 3),
                                   std::string("caf\xc3\xa9"), std::string("x/y")}) {
    auto p = parse_query(make_query({label, "test"}, type_a));
    ASSERT_TRUE(p.value);
    EXPECT_FALSE(p.value->name_is_hostname) << label;
  }
  auto ok = parse_query(make_query({"_acme-challenge", "x-1", "test"}, type_a));
  ASSERT_TRUE(ok.value);
  EXPECT_TRUE(ok.value->name_is_hostname);
  auto root = parse_query(make_query({}, type_a));
  ASSERT_TRUE(root.value);
  EXPECT_EQ(root.value->name, "");
}

TEST(LauncherDns, RandomBytesNeverBreakTheParser) {
  std::mt19937 rng(7);
  const auto seed = make_query({"www", "example", "test"}, type_aaaa, true);
  for (int i = 0; i < 20000; ++i) {
    bytes b;
    if (i % 2 == 0) {
      b.resize(rng() % 80);
      for (auto& x : b)
        x = static_cast<std::uint8_t>(rng());
    } else {
      b = seed;  // a valid query with a few bytes flipped, or cut
      for (int k = 0; k < 3; ++k)
        b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
      b.resize(rng() % (b.size() + 1));
    }
    auto p = parse_query(b);
    if (p.value) {
      EXPECT_LE(p.value->name.size(), 254u);
      address_record rec;
      const auto r = make_reply(*p.value, rcode::no_error, {&rec, 1}, 1);
      EXPECT_GE(r.size(), header_size + p.value->question.size());
    } else if (p.reply) {
      EXPECT_EQ(make_header_reply(b, p.error).size(), header_size);
    }
  }
}

}  // namespace
}  // namespace airlock::launcher::dns
