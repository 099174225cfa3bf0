// Random and mutated input for every parser of the component: nothing may crash or read out of
// bounds (this runs under ASan/UBSan in CI), and a few properties must hold on every input.
// Fixed seeds, bounded in iterations and in time (each loop stops after 0.3 s), no libFuzzer.

#include "net/address_guard.hpp"
#include "net/client_hello.hpp"
#include "net/host.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace airlock::net {
namespace {

namespace ip = boost::asio::ip;
using buffer = std::vector<std::uint8_t>;

class budget {
 public:
  explicit budget(int iterations) : left_(iterations) {}
  bool next() {
    return left_-- > 0 &&
           std::chrono::steady_clock::now() - start_ < std::chrono::milliseconds(300);
  }

 private:
  int left_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

std::string random_text(std::mt19937& rng, std::string_view alphabet, std::size_t max_len) {
  std::string s(rng() % (max_len + 1), '\0');
  for (auto& c : s) {
    // Mostly the interesting alphabet, sometimes any byte at all.
    c = rng() % 16 == 0 ? char(rng() & 0xff) : alphabet[rng() % alphabet.size()];
  }
  return s;
}

TEST(NetFuzz, NormalizeHostIsSafeAndIdempotent) {
  std::mt19937 rng(0x5eed1);
  const std::string_view alphabet = "0123456789xXabcdefABCDEF.:[]%-_@/?#gz ";
  for (budget b(200000); b.next();) {
    const std::string input = random_text(rng, alphabet, 40);
    const auto h = normalize_host(input);
    if (!h) continue;
    ASSERT_LE(h->text.size(), 253u) << input;
    if (h->kind == host_kind::dns) {
      constexpr std::string_view allowed = "abcdefghijklmnopqrstuvwxyz0123456789-_.";
      for (char c : h->text) {
        ASSERT_NE(allowed.find(c), std::string_view::npos) << input;
      }
    } else {
      ASSERT_EQ(h->address.to_string(), h->text) << input;
    }
    const auto again = normalize_host(h->kind == host_kind::ipv6 ? "[" + h->text + "]" : h->text);
    ASSERT_TRUE(again) << input;
    ASSERT_EQ(again->text, h->text) << input;
    ASSERT_EQ(again->kind, h->kind) << input;
  }
}

TEST(NetFuzz, AuthorityAndUrlAreSafe) {
  std::mt19937 rng(0x5eed2);
  const std::string_view alphabet = "0123456789xabcdef.:[]%-_@/?#hHtTpP \\";
  for (budget b(100000); b.next();) {
    const std::string input = random_text(rng, alphabet, 40);
    if (auto a = parse_authority(input, 80, rng() % 2 == 0)) {
      ASSERT_NE(a->port, 0) << input;
    }
    const std::string url = (rng() % 2 ? "http://" : "HTTP://") + input;
    if (auto u = parse_http_url(url)) {
      ASSERT_NE(u->target.port, 0) << url;
      ASSERT_FALSE(u->path_and_query.empty()) << url;
      ASSERT_EQ(u->path_and_query.front(), '/') << url;
    }
  }
}

ip::address random_address(std::mt19937& rng) {
  if (rng() % 2 == 0) return ip::address_v4(static_cast<std::uint32_t>(rng()));
  ip::address_v6::bytes_type b;
  for (auto& x : b)
    x = static_cast<std::uint8_t>(rng());
  // Bias towards the interesting prefixes.
  switch (rng() % 6) {
    case 0:
      std::fill(b.begin(), b.begin() + 10, 0), b[10] = b[11] = 0xff;
      break;  // mapped
    case 1:
      b[0] = 0, b[1] = 0x64, b[2] = 0xff, b[3] = 0x9b;
      break;  // NAT64
    case 2:
      b[0] = 0x20, b[1] = 0x02;
      break;  // 6to4
    case 3:
      b[0] = 0x20, b[1] = 0x01, b[2] = b[3] = 0;
      break;  // Teredo
    default:
      break;
  }
  return ip::address_v6(b);
}

TEST(NetFuzz, SpecialPurposeAndCidrAgreeOnMappedForms) {
  std::mt19937 rng(0x5eed3);
  for (budget b(100000); b.next();) {
    const auto a = random_address(rng);
    const auto category = special_purpose(a);
    if (a.is_v4()) {
      // The mapped form is the same destination, so it must be judged the same.
      const auto mapped = ip::make_address_v6(ip::v4_mapped, a.to_v4());
      ASSERT_EQ(special_purpose(mapped), category) << a;
      const unsigned prefix = rng() % 33;
      const auto c = cidr::parse(a.to_string() + "/" + std::to_string(prefix));
      ASSERT_TRUE(c);
      ASSERT_TRUE(c->contains(a));
      ASSERT_TRUE(c->contains(mapped));
      const auto other = ip::address_v4(static_cast<std::uint32_t>(rng()));
      ASSERT_EQ(c->contains(other), c->contains(ip::make_address_v6(ip::v4_mapped, other)));
    }
  }
  // Random text into the CIDR parser.
  const std::string_view alphabet = "0123456789abcdef.:/%[]x-+ ";
  for (budget b(100000); b.next();) {
    const std::string input = random_text(rng, alphabet, 48);
    if (auto c = cidr::parse(input)) {
      const auto again = cidr::parse(c->to_string());
      ASSERT_TRUE(again) << input;
      ASSERT_EQ(again->to_string(), c->to_string()) << input;
    }
  }
}

// A ClientHello-shaped buffer: a valid record header and handshake header more often than
// chance would give, then random bytes.
buffer random_hello(std::mt19937& rng) {
  buffer b(rng() % 600);
  for (auto& x : b)
    x = static_cast<std::uint8_t>(rng());
  if (b.size() >= 9 && rng() % 4 != 0) {
    const std::size_t len = b.size() - 5;
    b[0] = 22, b[1] = 3, b[2] = rng() % 5;
    b[3] = std::uint8_t(len >> 8), b[4] = std::uint8_t(len);
    b[5] = 1, b[6] = 0;
    b[7] = std::uint8_t((len - 4) >> 8), b[8] = std::uint8_t(len - 4);
  }
  return b;
}

// A syntactically valid hello with random extensions, so mutations start from deep inside.
buffer valid_hello(std::mt19937& rng) {
  buffer body{3, 3};
  body.insert(body.end(), 32, 7);
  body.push_back(0);
  body.insert(body.end(), {0, 2, 0x13, 0x01, 1, 0});
  buffer exts;
  auto put16 = [](buffer& out, std::size_t v) {
    out.push_back(std::uint8_t(v >> 8));
    out.push_back(std::uint8_t(v));
  };
  std::array<std::uint16_t, 4> types{0, 16, 43, 51};
  std::shuffle(types.begin(), types.end(), rng);
  const std::size_t n = rng() % (types.size() + 1);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t type = types[i];  // each at most once (RFC 8446 section 4.2)
    buffer data;
    if (type == 0) {
      data = {0, 8, 0, 0, 5, 'a', '.', 'c', 'o', 'm'};
    } else if (type == 16) {
      data = {0, 3, 2, 'h', '2'};
    } else {
      data.resize(rng() % 40);
    }
    put16(exts, type);
    put16(exts, data.size());
    exts.insert(exts.end(), data.begin(), data.end());
  }
  put16(body, exts.size());
  body.insert(body.end(), exts.begin(), exts.end());
  buffer msg{1, 0, std::uint8_t(body.size() >> 8), std::uint8_t(body.size())};
  msg.insert(msg.end(), body.begin(), body.end());
  // Random record boundaries.
  buffer out;
  std::size_t pos = 0;
  while (pos < msg.size()) {
    const std::size_t len = std::min<std::size_t>(msg.size() - pos, 1 + rng() % 200);
    out.insert(out.end(), {22, 3, 1, std::uint8_t(len >> 8), std::uint8_t(len)});
    out.insert(out.end(), msg.begin() + pos, msg.begin() + pos + len);
    pos += len;
  }
  return out;
}

void check_hello_properties(const buffer& b, std::mt19937& rng) {
  const auto full = parse_client_hello(b);
  if (full.status != hello_status::complete) {
    ASSERT_FALSE(full.server_name);
    ASSERT_TRUE(full.alpn.empty());
  }
  for (const auto& p : full.alpn)
    ASSERT_FALSE(p.empty());
  if (full.server_name) {
    ASSERT_FALSE(full.server_name->empty());
  }
  // Verdicts are final: once a prefix is decided, more bytes never change the answer.
  const std::size_t n = b.empty() ? 0 : rng() % b.size();
  const auto prefix = parse_client_hello(std::span(b.data(), n));
  if (prefix.status != hello_status::need_more) {
    ASSERT_EQ(prefix.status, full.status);
    ASSERT_EQ(prefix.server_name, full.server_name);
    ASSERT_EQ(prefix.alpn, full.alpn);
  }
}

TEST(NetFuzz, ClientHelloRandomBytes) {
  std::mt19937 rng(0x5eed4);
  for (budget b(100000); b.next();)
    check_hello_properties(random_hello(rng), rng);
}

TEST(NetFuzz, ClientHelloMutations) {
  std::mt19937 rng(0x5eed5);
  int completes = 0;
  for (budget b(100000); b.next();) {
    buffer h = valid_hello(rng);
    ASSERT_EQ(parse_client_hello(h).status, hello_status::complete);
    ++completes;
    const int mutations = 1 + rng() % 3;
    for (int m = 0; m < mutations && !h.empty(); ++m) {
      const std::size_t at = rng() % h.size();
      switch (rng() % 4) {
        case 0:
          h[at] ^= std::uint8_t(1u << (rng() % 8));
          break;
        case 1:
          h[at] = std::uint8_t(rng());
          break;
        case 2:
          h.resize(at);
          break;
        default:
          h.insert(h.begin() + at, std::uint8_t(rng()));
          break;
      }
    }
    check_hello_properties(h, rng);
  }
  EXPECT_GT(completes, 100);
}

}  // namespace
}  // namespace airlock::net
