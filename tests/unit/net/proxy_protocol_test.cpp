#include "net/proxy_protocol.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>

namespace airlock::net::proxy_v2 {
namespace {

endpoint v4(const char* ip, std::uint16_t port) {
  endpoint e;
  inet_pton(AF_INET, ip, e.addr.data());
  e.port = port;
  return e;
}

endpoint v6(const char* ip, std::uint16_t port) {
  endpoint e;
  e.v6 = true;
  inet_pton(AF_INET6, ip, e.addr.data());
  e.port = port;
  return e;
}

TEST(LauncherProxyV2, EncodesAgentHeaderByteForByte) {
  auto bytes = encode_agent(v4("127.0.0.1", 40000), v4("127.0.0.1", 3128), "coder");
  ASSERT_TRUE(bytes);
  const std::vector<std::uint8_t> expected = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51,
                                              0x55, 0x49, 0x54, 0x0A,  // signature
                                              0x21,                    // v2, PROXY
                                              0x11,                    // TCP over IPv4
                                              0x00, 0x14,              // 12 + 3 + 5
                                              127,  0,    0,    1,     // source
                                              127,  0,    0,    1,     // destination
                                              0x9C, 0x40,              // 40000
                                              0x0C, 0x38,              // 3128
                                              0xE0, 0x00, 0x05, 'c',  'o',  'd',  'e',  'r'};
  EXPECT_EQ(*bytes, expected);
}

TEST(LauncherProxyV2, RoundTripsIPv6AndSeveralTlvs) {
  header h;
  h.source = v6("::1", 1);
  h.destination = v6("fe80::2", 65535);
  h.tlvs = {{tlv_agent, "a"}, {0xE1, std::string("\0\xff", 2)}, {0x04, ""}};
  auto bytes = encode(h);
  ASSERT_TRUE(bytes);
  EXPECT_EQ((*bytes)[13], 0x21);
  EXPECT_EQ(bytes->size(), header_size + 36 + 4 + 5 + 3);
  auto d = decode(*bytes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->consumed, bytes->size());
  EXPECT_EQ(d->value.source->addr, h.source->addr);
  EXPECT_EQ(d->value.destination->port, 65535);
  ASSERT_EQ(d->value.tlvs.size(), 3u);
  EXPECT_EQ(d->value.tlvs[1].value, std::string("\0\xff", 2));
  EXPECT_EQ(agent_of(d->value), "a");
}

TEST(LauncherProxyV2, LocalWithoutAddresses) {
  header h;
  h.cmd = command::local;
  auto bytes = encode(h);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), header_size);
  EXPECT_EQ((*bytes)[12], 0x20);
  EXPECT_EQ((*bytes)[13], 0x00);
  auto d = decode(*bytes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->value.cmd, command::local);
  EXPECT_FALSE(d->value.source);
  EXPECT_FALSE(agent_of(d->value));
}

TEST(LauncherProxyV2, RefusesWhatCannotBeEncoded) {
  header half;
  half.source = v4("127.0.0.1", 1);
  EXPECT_FALSE(encode(half));
  header mixed;
  mixed.source = v4("127.0.0.1", 1);
  mixed.destination = v6("::1", 1);
  EXPECT_FALSE(encode(mixed));
  // The length field is 16 bits: 12 address bytes + 3 TLV header bytes + value <= 65535.
  EXPECT_TRUE(encode_agent(v4("127.0.0.1", 1), v4("127.0.0.1", 2), std::string(65535 - 15, 'a')));
  EXPECT_FALSE(encode_agent(v4("127.0.0.1", 1), v4("127.0.0.1", 2), std::string(65535 - 14, 'a')));
}

TEST(LauncherProxyV2, DecodeRejectsMalformedInput) {
  auto good = *encode_agent(v4("127.0.0.1", 1), v4("127.0.0.1", 2), "agent");
  // Every truncation is incomplete.
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(decode(std::span(good.data(), n))) << n;
  }
  // Trailing bytes (the agent's own data) are not part of the header.
  auto longer = good;
  longer.push_back('G');
  auto d = decode(longer);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->consumed, good.size());
  // Wrong signature, version, command, family; TLV running past the end.
  for (auto [index, value] : std::vector<std::pair<std::size_t, std::uint8_t>>{
           {0, 0x0E}, {11, 0x0B}, {12, 0x11}, {12, 0x22}, {13, 0x12}, {13, 0x31}}) {
    auto bad = good;
    bad[index] = value;
    EXPECT_FALSE(decode(bad)) << index;
  }
  auto bad_tlv = good;
  bad_tlv[16 + 12 + 2] = 0x06;  // TLV length 6 > 5 bytes left
  EXPECT_FALSE(decode(bad_tlv));
}

TEST(LauncherProxyV2, BinaryTlvsRoundTrip) {
  header h;
  h.tlvs.push_back(tlv{tlv_agent, "a"});
  const std::string hash(64, 'a');
  add_binary(h, peer_binary{"/usr/bin/git", hash, {"/bin/sh", "[bash]"}});
  auto bytes = encode(h);
  ASSERT_TRUE(bytes);
  auto d = decode(*bytes);
  ASSERT_TRUE(d);
  auto b = binary_of(d->value);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->path, "/usr/bin/git");
  EXPECT_EQ(b->sha256, hash);
  EXPECT_EQ(b->ancestors, (std::vector<std::string>{"/bin/sh", "[bash]"}));
  EXPECT_EQ(agent_of(d->value), "a");
}

TEST(LauncherProxyV2, BinaryTlvsMalformedMeanNoIdentity) {
  header none;
  none.tlvs.push_back(tlv{tlv_agent, "a"});
  EXPECT_FALSE(binary_of(none));  // direct: no identity at all
  auto with = [](std::string path, std::string hash) {
    header h;
    h.tlvs.push_back(tlv{tlv_binary, std::move(path)});
    h.tlvs.push_back(tlv{tlv_binary_sha256, std::move(hash)});
    return binary_of(h);
  };
  EXPECT_TRUE(with("/usr/bin/curl", std::string(64, '0')));
  EXPECT_FALSE(with("", std::string(64, '0')));
  EXPECT_FALSE(with(std::string("/a\0b", 4), std::string(64, '0')));
  EXPECT_FALSE(with("/usr/bin/curl", std::string(63, '0')));
  EXPECT_FALSE(with("/usr/bin/curl", std::string(64, 'A')));  // lower-case hex only
  header path_only;
  path_only.tlvs.push_back(tlv{tlv_binary, "/usr/bin/curl"});
  EXPECT_FALSE(binary_of(path_only));
}

}  // namespace
}  // namespace airlock::net::proxy_v2
