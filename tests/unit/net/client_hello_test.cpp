#include "net/client_hello.hpp"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace airlock::net {
namespace {

using buffer = std::vector<std::uint8_t>;

// --- real ClientHellos from OpenSSL: SSL_connect on a memory BIO pair, no sockets ----------

struct openssl_options {
  const char* server_name = nullptr;
  std::vector<std::string> alpn;
  int max_version = 0;        // e.g. TLS1_2_VERSION
  unsigned max_fragment = 0;  // >= 512: OpenSSL splits the hello into records this size
};

buffer openssl_client_hello(const char* server_name = nullptr, std::vector<std::string> alpn = {},
                            int max_version = 0, unsigned max_fragment = 0) {
  const openssl_options o{server_name, std::move(alpn), max_version, max_fragment};
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (o.max_version != 0) SSL_CTX_set_max_proto_version(ctx, o.max_version);
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);  // ssl owns both now
  SSL_set_connect_state(ssl);
  if (o.server_name != nullptr) SSL_set_tlsext_host_name(ssl, o.server_name);
  if (!o.alpn.empty()) {
    buffer wire;
    for (const auto& p : o.alpn) {
      wire.push_back(static_cast<std::uint8_t>(p.size()));
      wire.insert(wire.end(), p.begin(), p.end());
    }
    EXPECT_EQ(SSL_set_alpn_protos(ssl, wire.data(), static_cast<unsigned>(wire.size())), 0);
  }
  if (o.max_fragment != 0) SSL_set_max_send_fragment(ssl, o.max_fragment);
  const int rc = SSL_do_handshake(ssl);
  EXPECT_EQ(rc, -1);
  EXPECT_EQ(SSL_get_error(ssl, rc), SSL_ERROR_WANT_READ);
  buffer hello(BIO_ctrl_pending(out));
  EXPECT_EQ(BIO_read(out, hello.data(), static_cast<int>(hello.size())),
            static_cast<int>(hello.size()));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return hello;
}

client_hello parse(const buffer& b) {
  return parse_client_hello(b);
}

// The handshake bytes carried by a sequence of records (headers stripped).
buffer handshake_payload(const buffer& records) {
  buffer out;
  std::size_t pos = 0;
  while (pos + 5 <= records.size()) {
    const std::size_t len = (std::size_t(records[pos + 3]) << 8) | records[pos + 4];
    out.insert(out.end(), records.begin() + pos + 5, records.begin() + pos + 5 + len);
    pos += 5 + len;
  }
  EXPECT_EQ(pos, records.size());
  return out;
}

// Frames `payload` into handshake records at the given cut points.
buffer frame(const buffer& payload, const std::vector<std::size_t>& cuts,
             std::uint16_t version = 0x0301) {
  buffer out;
  std::size_t start = 0;
  auto emit = [&](std::size_t end) {
    const std::size_t len = end - start;
    out.insert(out.end(), {22, std::uint8_t(version >> 8), std::uint8_t(version & 0xff),
                           std::uint8_t(len >> 8), std::uint8_t(len & 0xff)});
    out.insert(out.end(), payload.begin() + start, payload.begin() + end);
    start = end;
  };
  for (auto c : cuts)
    emit(c);
  emit(payload.size());
  return out;
}

buffer frame_every(const buffer& payload, std::size_t size) {
  std::vector<std::size_t> cuts;
  for (std::size_t c = size; c < payload.size(); c += size)
    cuts.push_back(c);
  return frame(payload, cuts);
}

buffer bytes_of_text(std::string_view s) {
  return buffer(s.begin(), s.end());
}

void expect_every_prefix_needs_more(const buffer& b) {
  for (std::size_t n = 0; n < b.size(); ++n) {
    const auto r = parse_client_hello(std::span(b.data(), n));
    ASSERT_EQ(r.status, hello_status::need_more) << "prefix " << n << " of " << b.size();
    EXPECT_FALSE(r.server_name);
    EXPECT_TRUE(r.alpn.empty());
  }
}

const std::vector<std::string> h2_http11{"h2", "http/1.1"};

// A ClientHello captured from `curl https://example.com:PORT/` (curl 7.88 / OpenSSL 3.0, with
// --resolve to a loopback listener): TLS 1.3, SNI, ALPN h2 + http/1.1, and the padding
// extension (type 21) that pads it to 512 bytes.
constexpr std::string_view curl_hello_hex =
    "1603010200010001fc030310846b1878111d9c17711573d321f5aa07c48e005cf6838a661a86862bb5183b20"
    "dc3525f42acd0b9b3d3fd635670c3348ce98437c8cf66313bf56f66be7360993003e130213031301c02cc030"
    "009fcca9cca8ccaac02bc02f009ec024c028006bc023c0270067c00ac0140039c009c0130033009d009c003d"
    "003c0035002f00ff0100017500000010000e00000b6578616d706c652e636f6d000b000403000102000a0016"
    "0014001d0017001e00190018010001010102010301040010000e000c02683208687474702f312e3100160000"
    "0017000000310000000d002a0028040305030603080708080809080a080b0804080508060401050106010303"
    "03010302040205020602002b0009080304030303020301002d00020101003300260024001d00205ae1bce705"
    "713595e26850e6bd4efba3298f9a7e8eb71040b27e4c29ad21b12f001500b200000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000";

buffer from_hex(std::string_view hex) {
  buffer out;
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(std::uint8_t(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  }
  return out;
}

TEST(ClientHello, CapturedCurlHello) {
  const auto hello = from_hex(curl_hello_hex);
  ASSERT_EQ(hello.size(), 517u);
  const auto r = parse(hello);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_EQ(r.server_name, "example.com");
  EXPECT_EQ(r.alpn, h2_http11);
  expect_every_prefix_needs_more(hello);
}

TEST(ClientHello, OpenSslTls13WithSniAndAlpn) {
  const auto hello = openssl_client_hello("example.com", h2_http11);
  ASSERT_GT(hello.size(), 100u);
  const auto r = parse(hello);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_EQ(r.server_name, "example.com");
  EXPECT_EQ(r.alpn, h2_http11);
}

TEST(ClientHello, OpenSslTls12) {
  const auto hello = openssl_client_hello("api.github.com", {"http/1.1"}, TLS1_2_VERSION);
  const auto r = parse(hello);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_EQ(r.server_name, "api.github.com");
  EXPECT_EQ(r.alpn, std::vector<std::string>{"http/1.1"});
}

TEST(ClientHello, NoSniNoAlpn) {
  // What a client connecting to an IP literal sends: RFC 6066 forbids IP addresses in SNI.
  const auto hello = openssl_client_hello();
  const auto r = parse(hello);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_FALSE(r.server_name);
  EXPECT_TRUE(r.alpn.empty());
}

TEST(ClientHello, NameReportedAsSent) {
  // Case, trailing dot and even an IP literal come back verbatim; the proxy normalises.
  for (const char* name : {"Example.COM", "example.com.", "127.0.0.1"}) {
    const auto r = parse(openssl_client_hello(name));
    ASSERT_EQ(r.status, hello_status::complete) << name;
    EXPECT_EQ(r.server_name, name);
  }
}

TEST(ClientHello, EveryPrefixOfARealHelloNeedsMore) {
  for (const auto& hello : {openssl_client_hello("example.com", h2_http11),
                            openssl_client_hello(nullptr, {}, TLS1_2_VERSION)}) {
    expect_every_prefix_needs_more(hello);
    EXPECT_EQ(parse(hello).status, hello_status::complete);
  }
}

TEST(ClientHello, OpenSslMultiRecordHello) {
  // A hello larger than one small record, split by OpenSSL itself.
  std::vector<std::string> alpn = h2_http11;
  for (int i = 0; i < 12; ++i)
    alpn.push_back(std::string(200, char('a' + i)));
  const auto hello = openssl_client_hello("big.example", alpn, 0, 512);
  const auto payload = handshake_payload(hello);
  ASSERT_GT(hello.size(), payload.size() + 5 * 4);  // at least 5 records
  const auto r = parse(hello);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_EQ(r.server_name, "big.example");
  EXPECT_EQ(r.alpn, alpn);
  expect_every_prefix_needs_more(hello);
}

TEST(ClientHello, ReframedAtEverySplitPoint) {
  const auto payload = handshake_payload(openssl_client_hello("example.com", h2_http11));
  for (std::size_t cut = 1; cut < payload.size(); ++cut) {
    const auto two = frame(payload, {cut});
    const auto r = parse(two);
    ASSERT_EQ(r.status, hello_status::complete) << "cut " << cut;
    EXPECT_EQ(r.server_name, "example.com");
    EXPECT_EQ(r.alpn, h2_http11);
    // The TCP stream may stop anywhere too; sample the prefixes around the record boundary.
    for (std::size_t n = cut; n < std::min(two.size(), cut + 12); ++n) {
      ASSERT_EQ(parse_client_hello(std::span(two.data(), n)).status, hello_status::need_more)
          << "cut " << cut << " prefix " << n;
    }
  }
}

// The first `small` records one byte each (RFC 8446 section 5.1 allows that), the rest of the
// payload in one more record.
buffer one_byte_records_then_rest(const buffer& payload, std::size_t small) {
  std::vector<std::size_t> cuts;
  for (std::size_t c = 1; c <= small; ++c)
    cuts.push_back(c);
  return frame(payload, cuts);
}

TEST(ClientHello, OneByteRecordsUpToTheRecordBound) {
  const auto payload = handshake_payload(openssl_client_hello("example.com", h2_http11));
  const auto most = one_byte_records_then_rest(payload, max_client_hello_records - 1);
  const auto r = parse(most);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_EQ(r.server_name, "example.com");
  EXPECT_EQ(r.alpn, h2_http11);
  expect_every_prefix_needs_more(most);
}

TEST(ClientHello, MoreRecordsThanTheBoundAreMalformed) {
  // A hello in thousands of 1-byte records made the proxy re-walk them all on every read; the
  // bound makes it malformed as soon as record max_client_hello_records is in without the end.
  const auto payload = handshake_payload(openssl_client_hello("example.com", h2_http11));
  const auto over = one_byte_records_then_rest(payload, max_client_hello_records);
  EXPECT_EQ(parse(over).status, hello_status::malformed);
  const auto tiny = frame_every(payload, 1);
  ASSERT_EQ(tiny.size(), payload.size() * 6);
  const std::size_t bound = max_client_hello_records * 6;
  for (std::size_t n = 0; n < bound; ++n)
    ASSERT_EQ(parse_client_hello(std::span(tiny.data(), n)).status, hello_status::need_more) << n;
  const auto at_bound = parse_client_hello(std::span(tiny.data(), bound));
  EXPECT_EQ(at_bound.status, hello_status::malformed);
  EXPECT_FALSE(at_bound.server_name);
  EXPECT_EQ(parse(tiny).status, hello_status::malformed);
}

// Feeds `b` to one parser in growing prefixes (`step` more bytes each call): the verdict must
// be the one the whole input gets, and need_more until the prefix that decides it.
void expect_incremental_matches_whole(const buffer& b, std::size_t step) {
  const auto whole = parse(b);
  client_hello_parser parser;
  std::optional<client_hello> got;
  for (std::size_t n = 0;; n = std::min(b.size(), n + step)) {
    const auto& r = parser.parse(std::span(b.data(), n));
    // A fresh parser on the same prefix agrees with the resumed one.
    const auto fresh = parse_client_hello(std::span(b.data(), n));
    ASSERT_EQ(r.status, fresh.status) << "prefix " << n << " step " << step;
    ASSERT_EQ(r.server_name, fresh.server_name) << "prefix " << n;
    ASSERT_EQ(r.alpn, fresh.alpn) << "prefix " << n;
    if (r.status != hello_status::need_more && !got) got = r;
    if (n == b.size()) break;
  }
  ASSERT_TRUE(got || whole.status == hello_status::need_more);
  if (got) {
    EXPECT_EQ(got->status, whole.status);
    EXPECT_EQ(got->server_name, whole.server_name);
    EXPECT_EQ(got->alpn, whole.alpn);
  }
}

TEST(ClientHello, ResumedParsingMatchesWholeParsing) {
  std::vector<std::string> alpn = h2_http11;
  for (int i = 0; i < 12; ++i)
    alpn.push_back(std::string(200, char('a' + i)));
  const auto payload = handshake_payload(openssl_client_hello("example.com", h2_http11));
  const std::vector<buffer> inputs{
      openssl_client_hello("example.com", h2_http11),
      openssl_client_hello("big.example", alpn, 0, 512),  // several records
      one_byte_records_then_rest(payload, max_client_hello_records - 1),
      one_byte_records_then_rest(payload, max_client_hello_records),  // malformed
      frame(payload, {3, 9}),               // the handshake header split across records
      bytes_of_text("GET / HTTP/1.1\r\n"),  // not_tls
  };
  for (const auto& b : inputs)
    for (std::size_t step : {1, 2, 5, 7, 100, 4096})
      expect_incremental_matches_whole(b, step);
}

TEST(ClientHello, ResumedParsingKeepsItsVerdict) {
  const auto hello = openssl_client_hello("example.com", h2_http11);
  client_hello_parser parser;
  ASSERT_EQ(parser.parse(std::span(hello.data(), 10)).status, hello_status::need_more);
  ASSERT_EQ(parser.parse(hello).status, hello_status::complete);
  // Bytes after the hello (the client's next flight) change nothing.
  auto more = hello;
  more.insert(more.end(), {0x17, 3, 3, 0, 1, 0});
  const auto& again = parser.parse(more);
  EXPECT_EQ(again.status, hello_status::complete);
  EXPECT_EQ(again.server_name, "example.com");
}

TEST(ClientHello, RecordVersions) {
  const auto payload = handshake_payload(openssl_client_hello("example.com"));
  for (std::uint16_t v : {0x0300, 0x0301, 0x0302, 0x0303, 0x0304}) {
    EXPECT_EQ(parse(frame(payload, {}, v)).status, hello_status::complete) << v;
  }
  for (std::uint16_t v : {0x0305, 0x0200, 0x0403, 0xfeff}) {
    EXPECT_EQ(parse(frame(payload, {}, v)).status, hello_status::not_tls) << v;
    // In a later record it is a broken handshake, not some other protocol.
    auto two = frame(payload, {10});
    two[5 + 10 + 1] = std::uint8_t(v >> 8);
    two[5 + 10 + 2] = std::uint8_t(v & 0xff);
    EXPECT_EQ(parse(two).status, hello_status::malformed) << v;
  }
}

TEST(ClientHello, BytesAfterTheHelloAreIgnored) {
  auto hello = openssl_client_hello("example.com");
  hello.insert(hello.end(), {20, 3, 3, 0, 1, 1, 0x17, 3, 3, 0});  // CCS, start of app data
  const auto r = parse(hello);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_EQ(r.server_name, "example.com");
}

TEST(ClientHello, NotTls) {
  auto text = [](std::string_view s) { return buffer(s.begin(), s.end()); };
  for (const auto& b : {text("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"), text("G"),
                        text("CONNECT example.com:443 HTTP/1.1\r\n"), text("SSH-2.0-OpenSSH\r\n"),
                        buffer{0x80, 0x2e, 0x01, 0x03, 0x01, 0x00, 0x15},    // SSLv2 hello
                        buffer{0x80}, buffer{0x17, 0x03, 0x03, 0x00, 0x10},  // app data
                        buffer{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28},    // alert
                        buffer{0x14, 0x03, 0x03, 0x00, 0x01, 0x01},          // CCS
                        buffer{0x16, 0x02}, buffer{0x16, 0x03, 0x05}, buffer{0x16, 0xfe, 0xfd},
                        buffer{0x00}, buffer{0xff, 0xff, 0xff}}) {
    const auto r = parse(b);
    EXPECT_EQ(r.status, hello_status::not_tls) << std::string(b.begin(), b.end());
    EXPECT_FALSE(r.server_name);
  }
  EXPECT_EQ(parse({}).status, hello_status::need_more);
  EXPECT_EQ(parse({0x16}).status, hello_status::need_more);
  EXPECT_EQ(parse({0x16, 0x03}).status, hello_status::need_more);
  EXPECT_EQ(parse({0x16, 0x03, 0x01, 0x02}).status, hello_status::need_more);
}

// --- crafted hellos: every length field lies ------------------------------------------------

void put16(buffer& b, std::size_t v) {
  b.push_back(std::uint8_t(v >> 8));
  b.push_back(std::uint8_t(v & 0xff));
}

void put_vec16(buffer& b, const buffer& v) {
  put16(b, v.size());
  b.insert(b.end(), v.begin(), v.end());
}

buffer bytes_of(std::string_view s) {
  return buffer(s.begin(), s.end());
}

buffer sni_ext(std::string_view name) {
  buffer entry{0};
  put_vec16(entry, bytes_of(name));
  buffer ext;
  put_vec16(ext, entry);
  return ext;
}

buffer alpn_ext(std::initializer_list<std::string_view> names) {
  buffer list;
  for (auto n : names) {
    list.push_back(std::uint8_t(n.size()));
    list.insert(list.end(), n.begin(), n.end());
  }
  buffer ext;
  put_vec16(ext, list);
  return ext;
}

struct hello_spec {
  std::uint16_t version = 0x0303;
  buffer session_id = buffer(32, 0xab);
  buffer cipher_suites{0x13, 0x01, 0x13, 0x02};
  buffer compression{0};
  bool has_extensions = true;
  std::vector<std::pair<std::uint16_t, buffer>> extensions;
  // When set, replaces the encoded extensions block (length prefix included).
  std::optional<buffer> raw_extensions;
};

buffer body_of(const hello_spec& s) {
  buffer b;
  put16(b, s.version);
  b.insert(b.end(), 32, 0x11);  // random
  b.push_back(std::uint8_t(s.session_id.size()));
  b.insert(b.end(), s.session_id.begin(), s.session_id.end());
  put_vec16(b, s.cipher_suites);
  b.push_back(std::uint8_t(s.compression.size()));
  b.insert(b.end(), s.compression.begin(), s.compression.end());
  if (s.raw_extensions) {
    b.insert(b.end(), s.raw_extensions->begin(), s.raw_extensions->end());
  } else if (s.has_extensions) {
    buffer exts;
    for (const auto& [type, data] : s.extensions) {
      put16(exts, type);
      put_vec16(exts, data);
    }
    put_vec16(b, exts);
  }
  return b;
}

buffer message_of(const buffer& body, std::uint8_t type = 1) {
  buffer m{type, std::uint8_t(body.size() >> 16), std::uint8_t(body.size() >> 8),
           std::uint8_t(body.size() & 0xff)};
  m.insert(m.end(), body.begin(), body.end());
  return m;
}

buffer wire(const hello_spec& s) {
  return frame_every(message_of(body_of(s)), 16384);
}

client_hello parse_spec(const hello_spec& s) {
  return parse(wire(s));
}

TEST(ClientHello, CraftedValid) {
  hello_spec s;
  s.extensions = {{0x0a0a, {}}, {0, sni_ext("a.example")}, {16, alpn_ext({"h2"})}, {0xff01, {0}}};
  auto r = parse_spec(s);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_EQ(r.server_name, "a.example");
  EXPECT_EQ(r.alpn, std::vector<std::string>{"h2"});

  // TLS 1.0-era hello with no extensions block at all.
  hello_spec old;
  old.version = 0x0301;
  old.session_id.clear();
  old.has_extensions = false;
  r = parse_spec(old);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_FALSE(r.server_name);

  // An empty extensions block is allowed too.
  hello_spec empty;
  r = parse_spec(empty);
  EXPECT_EQ(r.status, hello_status::complete);

  // Unknown name types before the host_name are skipped.
  hello_spec other;
  buffer list{7, 0, 3, 'x', 'y', 'z', 0, 0, 5, 'h', '.', 'c', 'o', 'm'};
  buffer ext;
  put_vec16(ext, list);
  other.extensions = {{0, ext}};
  r = parse_spec(other);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_EQ(r.server_name, "h.com");
}

TEST(ClientHello, LargePostQuantumSizedHello) {
  // ~40 KiB of key shares: must still parse (spans three records).
  hello_spec s;
  s.extensions = {{0, sni_ext("pq.example")}, {51, buffer(40000, 0x42)}};
  const auto w = wire(s);
  ASSERT_GT(w.size(), 40000u);
  const auto r = parse(w);
  ASSERT_EQ(r.status, hello_status::complete);
  EXPECT_EQ(r.server_name, "pq.example");
  for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{16388}, std::size_t{16389},
                        std::size_t{16394}, w.size() - 1}) {
    EXPECT_EQ(parse_client_hello(std::span(w.data(), n)).status, hello_status::need_more) << n;
  }
}

void expect_malformed(const hello_spec& s, const char* what) {
  const auto w = wire(s);
  const auto r = parse(w);
  EXPECT_EQ(r.status, hello_status::malformed) << what;
  EXPECT_FALSE(r.server_name) << what;
  EXPECT_TRUE(r.alpn.empty()) << what;
}

TEST(ClientHello, MalformedBodies) {
  {
    hello_spec s;
    s.version = 0x0200;
    expect_malformed(s, "body version 2.0");
    s.version = 0x0305;
    expect_malformed(s, "body version 3.5");
  }
  {
    hello_spec s;
    s.session_id = buffer(33, 1);
    expect_malformed(s, "session id 33");
  }
  {
    hello_spec s;
    s.cipher_suites = {0x13, 0x01, 0x13};
    expect_malformed(s, "odd cipher suites");
    s.cipher_suites.clear();
    expect_malformed(s, "no cipher suites");
  }
  {
    hello_spec s;
    s.compression.clear();
    expect_malformed(s, "no compression methods");
  }
  {
    hello_spec s;
    s.raw_extensions = buffer{0};
    expect_malformed(s, "one byte of extensions length");
    s.raw_extensions = buffer{0, 5, 0, 0, 0, 0};
    expect_malformed(s, "extensions length too long");
    s.raw_extensions = buffer{0, 3, 0, 0, 0, 0};
    expect_malformed(s, "extensions length too short (trailing data)");
    s.raw_extensions = buffer{0, 4, 0, 0, 0, 1};
    expect_malformed(s, "extension data runs past the block");
    s.raw_extensions = buffer{0, 3, 0, 0, 0};
    expect_malformed(s, "truncated extension header");
    s.raw_extensions = buffer{0, 4, 0, 15, 0, 0, 0xde, 0xad};
    expect_malformed(s, "bytes after the extensions block");
  }
  {
    hello_spec s;
    s.extensions = {{0x1234, {}}, {0x1234, {}}};
    expect_malformed(s, "duplicate unknown extension");
    s.extensions = {{0, sni_ext("a.com")}, {0, sni_ext("b.com")}};
    expect_malformed(s, "two server_name extensions");
    s.extensions = {{16, alpn_ext({"h2"})}, {16, alpn_ext({"http/1.1"})}};
    expect_malformed(s, "two ALPN extensions");
  }
}

TEST(ClientHello, MalformedServerName) {
  auto with_sni = [](buffer ext) {
    hello_spec s;
    s.extensions = {{0, std::move(ext)}};
    return s;
  };
  expect_malformed(with_sni({}), "empty server_name extension");
  expect_malformed(with_sni({0, 0}), "empty name list");
  expect_malformed(with_sni({0}), "one-byte list length");
  expect_malformed(with_sni({0, 9, 0, 0, 5, 'a', '.', 'c', 'o', 'm'}), "list length too long");
  expect_malformed(with_sni({0, 7, 0, 0, 5, 'a', '.', 'c', 'o', 'm'}), "list length too short");
  expect_malformed(with_sni({0, 8, 0, 0, 6, 'a', '.', 'c', 'o', 'm'}), "name length too long");
  expect_malformed(with_sni({0, 8, 0, 0, 4, 'a', '.', 'c', 'o', 'm'}), "name length too short");
  expect_malformed(with_sni({0, 3, 0, 0, 0}), "empty host_name");
  expect_malformed(with_sni({0, 2, 0, 0}), "truncated entry");
  auto garbage = sni_ext("a.com");
  garbage.push_back(0);
  expect_malformed(with_sni(garbage), "trailing garbage after the list");
  expect_malformed(with_sni({0, 10, 0, 0, 5, 'a', '.', 'c', 'o', 'm', 0, 0}),
                   "trailing partial entry in the list");
  expect_malformed(with_sni({0, 11, 0, 0, 5, 'a', '.', 'c', 'o', 'm', 7, 0, 0}),
                   "trailing entry with an empty name");
  expect_malformed(with_sni({0, 14, 0, 0, 5, 'a', '.', 'c', 'o', 'm', 0, 0, 3, 'b', '.', 'c'}),
                   "two host_name entries");
}

TEST(ClientHello, MalformedAlpn) {
  auto with_alpn = [](buffer ext) {
    hello_spec s;
    s.extensions = {{0, sni_ext("a.com")}, {16, std::move(ext)}};
    return s;
  };
  expect_malformed(with_alpn({}), "empty ALPN extension");
  expect_malformed(with_alpn({0, 0}), "empty protocol list");
  expect_malformed(with_alpn({0, 3, 2, 'h', '2', 0}), "trailing byte in the list");
  expect_malformed(with_alpn({0, 4, 2, 'h', '2'}), "list length too long");
  expect_malformed(with_alpn({0, 3, 3, 'h', '2'}), "name length too long");
  expect_malformed(with_alpn({0, 4, 2, 'h', '2', 0}), "empty protocol name");
  expect_malformed(with_alpn({0, 2, 2, 'h', '2'}), "list length too short");
  buffer many;
  for (int i = 0; i < 129; ++i)
    many.insert(many.end(), {1, 'x'});
  buffer ext;
  put_vec16(ext, many);
  expect_malformed(with_alpn(ext), "129 protocols");
  many.resize(128 * 2);
  ext.clear();
  put_vec16(ext, many);
  EXPECT_EQ(parse_spec(with_alpn(ext)).alpn.size(), 128u);
}

TEST(ClientHello, MalformedFraming) {
  const auto payload = handshake_payload(openssl_client_hello("example.com"));
  auto framed = frame(payload, {});
  // Record length zero, and above 2^14.
  EXPECT_EQ(parse({22, 3, 1, 0, 0}).status, hello_status::malformed);
  EXPECT_EQ(parse({22, 3, 1, 0x40, 0x01}).status, hello_status::malformed);
  EXPECT_EQ(parse({22, 3, 1, 0xff, 0xff}).status, hello_status::malformed);
  EXPECT_EQ(parse({22, 3, 1, 0x40, 0x00}).status, hello_status::need_more);
  // Handshake types other than ClientHello (ServerHello, Certificate, HelloRequest).
  for (std::uint8_t type : {0, 2, 11, 20}) {
    auto b = framed;
    b[5] = type;
    EXPECT_EQ(parse(b).status, hello_status::malformed) << int(type);
    EXPECT_EQ(parse(buffer(b.begin(), b.begin() + 6)).status, hello_status::malformed);
  }
  // Handshake length: beyond the 64 KiB bound, or too short to be a ClientHello.
  EXPECT_EQ(parse({22, 3, 1, 0, 4, 1, 0xff, 0xff, 0xff}).status, hello_status::malformed);
  EXPECT_EQ(parse({22, 3, 1, 0, 4, 1, 0x01, 0x00, 0x00}).status, hello_status::malformed);
  EXPECT_EQ(parse({22, 3, 1, 0, 4, 1, 0, 0, 40}).status, hello_status::malformed);
  EXPECT_EQ(parse({22, 3, 1, 0, 4, 1, 0, 0, 0}).status, hello_status::malformed);
  EXPECT_EQ(parse({22, 3, 1, 0, 4, 1, 0, 0, 41}).status, hello_status::need_more);
  // Handshake length that lies: shorter than the hello (body parse fails at once), or longer
  // (waits for the next record, then the body has trailing bytes).
  auto set_length = [](buffer& b, std::size_t len) {
    b[6] = std::uint8_t(len >> 16);
    b[7] = std::uint8_t(len >> 8);
    b[8] = std::uint8_t(len & 0xff);
  };
  {
    auto b = framed;
    set_length(b, payload.size() - 4 - 1);
    EXPECT_EQ(parse(b).status, hello_status::malformed);
    set_length(b, payload.size() - 4 + 1);
    EXPECT_EQ(parse(b).status, hello_status::need_more);
    b.insert(b.end(), {22, 3, 3, 0, 1, 0});
    EXPECT_EQ(parse(b).status, hello_status::malformed);
  }
  // A record of another type in the middle of the hello (RFC 8446 section 5.1 forbids
  // interleaving).
  {
    auto two = frame(payload, {20});
    two[5 + 20] = 23;
    EXPECT_EQ(parse(two).status, hello_status::malformed);
    two[5 + 20] = 21;
    EXPECT_EQ(parse(two).status, hello_status::malformed);
  }
  // A record whose length lies beyond what is left of the bound.
  {
    buffer huge(16384, 0);
    buffer lots;
    for (int i = 0; i < 4; ++i) {
      lots.insert(lots.end(), {22, 3, 1, 0x40, 0x00});
      lots.insert(lots.end(), huge.begin(), huge.end());
    }
    // A 1-byte handshake header start then 4 full records: exceeds max_client_hello_bytes.
    buffer start{22, 3, 1, 0, 4, 1, 0x00, 0xff, 0xf0};
    start.insert(start.end(), lots.begin(), lots.end());
    EXPECT_EQ(parse(start).status, hello_status::malformed);
  }
}

TEST(ClientHello, NeverNeedsMoreThanTheBound) {
  // Whatever the framing, once max_client_hello_bytes have arrived the answer is final: a
  // hello in 1-byte records runs out of records long before that.
  hello_spec s;
  s.extensions = {{0, sni_ext("a.example")}, {21, buffer(12000, 0)}};
  const auto tiny = frame_every(message_of(body_of(s)), 1);
  ASSERT_GT(tiny.size(), max_client_hello_bytes);
  EXPECT_EQ(parse_client_hello(std::span(tiny.data(), max_client_hello_bytes)).status,
            hello_status::malformed);
  EXPECT_EQ(parse(tiny).status, hello_status::malformed);

  // In full records: one that would end past the bound is malformed as soon as its header is in.
  s.extensions = {{0, sni_ext("a.example")}, {21, buffer(70000, 0)}};
  const auto big = wire(s);
  ASSERT_GT(big.size(), max_client_hello_bytes);
  EXPECT_EQ(parse_client_hello(std::span(big.data(), max_client_hello_bytes)).status,
            hello_status::malformed);

  s.extensions = {{0, sni_ext("a.example")}, {21, buffer(60000, 0)}};
  const auto fits = wire(s);
  ASSERT_LT(fits.size(), max_client_hello_bytes);
  EXPECT_EQ(parse(fits).status, hello_status::complete);
}

}  // namespace
}  // namespace airlock::net
