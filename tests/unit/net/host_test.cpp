#include "net/host.hpp"

#include <gtest/gtest.h>

#include <string>

namespace airlock::net {
namespace {

struct host_case {
  const char* input;
  host_kind kind;
  const char* text;
};

void expect_host(std::string_view input, host_kind kind, std::string_view text) {
  SCOPED_TRACE(std::string(input));
  const auto h = normalize_host(input);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->kind, kind);
  EXPECT_EQ(h->text, text);
  if (kind == host_kind::dns) {
    EXPECT_FALSE(h->is_ip());
  } else {
    EXPECT_TRUE(h->is_ip());
    EXPECT_EQ(h->address.is_v4(), kind == host_kind::ipv4);
    EXPECT_EQ(h->address.to_string(), text);
  }
}

void expect_rejected(std::string_view input) {
  SCOPED_TRACE(std::string(input));
  EXPECT_FALSE(normalize_host(input).has_value());
}

TEST(NormalizeHost, DnsNamesAreLowerCasedWithoutTrailingDot) {
  expect_host("example.com", host_kind::dns, "example.com");
  expect_host("Example.COM.", host_kind::dns, "example.com");
  expect_host("LOCALHOST.", host_kind::dns, "localhost");
  expect_host("a", host_kind::dns, "a");
  expect_host("xn--bcher-kva.example", host_kind::dns, "xn--bcher-kva.example");
  expect_host("_dmarc.example.com", host_kind::dns, "_dmarc.example.com");
  expect_host("a-b.c-d", host_kind::dns, "a-b.c-d");
  // Numeric labels are fine when the last label is not a number.
  expect_host("1.2.3.example", host_kind::dns, "1.2.3.example");
  expect_host("123abc", host_kind::dns, "123abc");
  expect_host("0xg", host_kind::dns, "0xg");  // not hex: a name
  expect_host("example.0x1g", host_kind::dns, "example.0x1g");
}

TEST(NormalizeHost, RejectsEmptyLabels) {
  for (const char* h : {"", ".", "..", ".example.com", "example..com", "example.com..", ".a"}) {
    expect_rejected(h);
  }
  expect_host("a.", host_kind::dns, "a");  // one trailing dot is the absolute form
}

TEST(NormalizeHost, LabelAndNameLengthLimits) {
  const std::string label63(63, 'a');
  const std::string label64(64, 'a');
  expect_host(label63, host_kind::dns, label63);
  expect_host(label63 + ".com", host_kind::dns, label63 + ".com");
  expect_rejected(label64);
  expect_rejected("x." + label64 + ".com");
  // 253 characters is the longest name; with a trailing dot 254 is still fine.
  const std::string name = label63 + "." + label63 + "." + label63 + "." + std::string(61, 'b');
  ASSERT_EQ(name.size(), 253u);
  expect_host(name, host_kind::dns, name);
  expect_host(name + ".", host_kind::dns, name);
  expect_rejected(name + "b");
  expect_rejected(name + "b.");
}

TEST(NormalizeHost, RejectsCharactersOutsideHostNames) {
  for (const char* h : {"exa mple.com",
                        "example.com/",
                        "exa%6dple.com",
                        "%31%32%37.0.0.1",
                        "user@example.com",
                        "example.com?",
                        "example.com#",
                        "exam\\ple.com",
                        "\xc3\xa9xample.com",
                        "ex*ample.com",
                        "example.com:80",
                        "[example.com]",
                        "ex\tample",
                        "example\n",
                        "exam;ple",
                        "a,b",
                        "a!b",
                        "a'b",
                        "a\"b",
                        "a+b",
                        "a=b",
                        "a~b",
                        "a$b",
                        "a&b",
                        "a(b",
                        "a<b",
                        "a>b",
                        "a^b",
                        "a`b",
                        "a{b",
                        "a|b"}) {
    expect_rejected(h);
  }
  expect_rejected(std::string_view("exa\0mple.com", 12));
  expect_rejected(std::string_view("127.0.0.1\0.evil.com", 19));
}

TEST(NormalizeHost, Ipv4EveryEncoding) {
  const host_case cases[] = {
      {"127.0.0.1", host_kind::ipv4, "127.0.0.1"},
      {"127.0.0.1.", host_kind::ipv4, "127.0.0.1"},
      {"2130706433", host_kind::ipv4, "127.0.0.1"},
      {"0x7f000001", host_kind::ipv4, "127.0.0.1"},
      {"0X7F000001", host_kind::ipv4, "127.0.0.1"},
      {"0x7F.0x0.0x0.0x1", host_kind::ipv4, "127.0.0.1"},
      {"017700000001", host_kind::ipv4, "127.0.0.1"},
      {"0177.0.0.1", host_kind::ipv4, "127.0.0.1"},
      {"0177.00.000.01", host_kind::ipv4, "127.0.0.1"},
      {"127.1", host_kind::ipv4, "127.0.0.1"},
      {"127.0.1", host_kind::ipv4, "127.0.0.1"},
      {"0x7f.1", host_kind::ipv4, "127.0.0.1"},
      {"0x7f.0.1", host_kind::ipv4, "127.0.0.1"},
      {"0177.1", host_kind::ipv4, "127.0.0.1"},
      {"127.0x1", host_kind::ipv4, "127.0.0.1"},
      {"0x7f.0.0.01", host_kind::ipv4, "127.0.0.1"},  // mixed hex, decimal, octal
      {"0x0a.010.0x1.9", host_kind::ipv4, "10.8.1.9"},
      {"169.254.43518", host_kind::ipv4, "169.254.169.254"},  // last part fills 2 bytes
      {"169.16689662", host_kind::ipv4, "169.254.169.254"},
      {"0xa9fea9fe", host_kind::ipv4, "169.254.169.254"},
      {"0", host_kind::ipv4, "0.0.0.0"},
      {"0x", host_kind::ipv4, "0.0.0.0"},  // WHATWG: "0x" alone is zero
      {"0x.0x.0x.0x", host_kind::ipv4, "0.0.0.0"},
      {"00", host_kind::ipv4, "0.0.0.0"},
      {"4294967295", host_kind::ipv4, "255.255.255.255"},
      {"0xffffffff", host_kind::ipv4, "255.255.255.255"},
      {"037777777777", host_kind::ipv4, "255.255.255.255"},
      {"255.16777215", host_kind::ipv4, "255.255.255.255"},
      {"255.255.65535", host_kind::ipv4, "255.255.255.255"},
      {"8.8.8.8", host_kind::ipv4, "8.8.8.8"},
      {"0x00000000000000000000007f.1", host_kind::ipv4, "127.0.0.1"},
      {"000000000000000000000000177.1", host_kind::ipv4, "127.0.0.1"},
  };
  for (const auto& c : cases)
    expect_host(c.input, c.kind, c.text);
}

TEST(NormalizeHost, Ipv4OverflowAndInvalidNumbersRejected) {
  for (const char* h : {"4294967296",
                        "0x100000000",
                        "040000000000",
                        "256.0.0.1",
                        "1.256.0.1",
                        "1.1.256.1",
                        "1.1.1.256",
                        "127.16777216",
                        "127.0.65536",
                        "1.2.3.4.5",
                        "1.2.3.4.5.",
                        "08",
                        "09.1",
                        "1.2.3.08",
                        "0x7g.1",
                        "1.0xg.1",
                        "99999999999999999999999999",
                        "0x1ffffffffffffffff",
                        "example.1",
                        "example.123",
                        "foo.09",
                        "localhost.0x",
                        "a.b.0x10",
                        "1.2.3.4.example.5",
                        "-1.1",
                        "18446744073709551617",
                        "0.0.0.0.0",
                        "1.2.3.4..",
                        "0x7f..1"}) {
    expect_rejected(h);
  }
  // A last label that is not a number in any base makes a name, not an address.
  expect_host("1e2", host_kind::dns, "1e2");
  expect_host("0b101", host_kind::dns, "0b101");
  expect_host("-1", host_kind::dns, "-1");
  expect_host("1.2.3.4x", host_kind::dns, "1.2.3.4x");
  expect_host("1.2.3.0xg", host_kind::dns, "1.2.3.0xg");
  expect_host("1.-1", host_kind::dns, "1.-1");
}

TEST(NormalizeHost, Ipv6Literals) {
  expect_host("[::1]", host_kind::ipv6, "::1");
  expect_host("::1", host_kind::ipv6, "::1");
  expect_host("[2001:DB8::0001]", host_kind::ipv6, "2001:db8::1");
  expect_host("[2001:0db8:0000:0000:0000:0000:0000:0001]", host_kind::ipv6, "2001:db8::1");
  expect_host("[fe80::1]", host_kind::ipv6, "fe80::1");
  expect_host("[::]", host_kind::ipv6, "::");
  expect_host("[64:ff9b::7f00:1]", host_kind::ipv6, "64:ff9b::7f00:1");
  expect_host("[64:ff9b::127.0.0.1]", host_kind::ipv6, "64:ff9b::7f00:1");
  // RFC 5952: longest zero run compressed, first of equal runs.
  expect_host("[2001:db8:0:0:1:0:0:1]", host_kind::ipv6, "2001:db8::1:0:0:1");
}

TEST(NormalizeHost, Ipv4MappedIpv6IsReportedAsIpv4) {
  expect_host("[::ffff:127.0.0.1]", host_kind::ipv4, "127.0.0.1");
  expect_host("[::ffff:7f00:1]", host_kind::ipv4, "127.0.0.1");
  expect_host("[::FFFF:7F00:0001]", host_kind::ipv4, "127.0.0.1");
  expect_host("::ffff:169.254.169.254", host_kind::ipv4, "169.254.169.254");
  expect_host("[0:0:0:0:0:ffff:a00:1]", host_kind::ipv4, "10.0.0.1");
}

TEST(NormalizeHost, Ipv6Rejections) {
  for (const char* h : {"[fe80::1%eth0]",
                        "[fe80::1%25eth0]",
                        "fe80::1%eth0",
                        "[::1",
                        "::1]",
                        "[]",
                        "[:]",
                        "[1.2.3.4]",
                        "[127.1]",
                        "[::ffff:127.1]",
                        "[::ffff:0x7f.0.0.1]",
                        "[::ffff:0177.0.0.1]",
                        "[::ffff:127.0.0.01]",
                        "[::1::1]",
                        "[1:2:3:4:5:6:7:8:9]",
                        "[12345::]",
                        "[g::]",
                        "[ ::1]",
                        "[::1 ]",
                        "[::1]:80",
                        "[[::1]]",
                        "[v1.x]",
                        ":::",
                        "[::1]x",
                        "1:2"}) {
    expect_rejected(h);
  }
}

TEST(NormalizeHost, IsIdempotent) {
  for (const char* h :
       {"Example.COM.", "0x7f.1", "[::ffff:7f00:1]", "[2001:DB8::1]", "127.1", "2130706433"}) {
    const auto once = normalize_host(h);
    ASSERT_TRUE(once) << h;
    const std::string again_input =
        once->kind == host_kind::ipv6 ? "[" + once->text + "]" : once->text;
    const auto twice = normalize_host(again_input);
    ASSERT_TRUE(twice) << h;
    EXPECT_EQ(twice->text, once->text);
    EXPECT_EQ(twice->kind, once->kind);
  }
}

// --- parse_authority -------------------------------------------------------------------------

TEST(ParseAuthority, HostAndPort) {
  auto a = parse_authority("Example.com:8080", 80, false);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host.text, "example.com");
  EXPECT_EQ(a->port, 8080);

  a = parse_authority("example.com", 80, false);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->port, 80);

  a = parse_authority("example.com.:443", 80, true);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host.text, "example.com");
  EXPECT_EQ(a->port, 443);

  a = parse_authority("127.1:1", 80, true);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host.text, "127.0.0.1");
  EXPECT_EQ(a->host.kind, host_kind::ipv4);
  EXPECT_EQ(a->port, 1);

  a = parse_authority("h:65535", 80, true);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->port, 65535);
}

TEST(ParseAuthority, Ipv6MustBeBracketed) {
  auto a = parse_authority("[::1]:443", 80, true);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host.kind, host_kind::ipv6);
  EXPECT_EQ(a->host.text, "::1");
  EXPECT_EQ(a->port, 443);

  a = parse_authority("[::1]", 80, false);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->port, 80);

  a = parse_authority("[::ffff:127.0.0.1]:80", 80, true);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host.kind, host_kind::ipv4);
  EXPECT_EQ(a->host.text, "127.0.0.1");

  for (const char* t : {"::1", "::1:443", "2001:db8::1:443", "[::1]:", "[::1]443", "[::1]:x",
                        "[::1", "[::1]:443]", "[fe80::1%eth0]:443", "[fe80::1%25eth0]:443"}) {
    EXPECT_FALSE(parse_authority(t, 80, false)) << t;
  }
}

TEST(ParseAuthority, PortMustBePlainDecimal) {
  for (const char* t : {"h:0", "h:00", "h:080", "h:+80", "h:-80", "h:0x50", "h:65536", "h:99999",
                        "h:100000", "h:", "h: 80", "h:80 ", "h:8 0", "h:80a", "h:1e3", "h:80:80",
                        "h:\xd9\xa0", "h:18446744073709551696"}) {
    EXPECT_FALSE(parse_authority(t, 80, false)) << t;
  }
}

TEST(ParseAuthority, PortRequired) {
  EXPECT_FALSE(parse_authority("example.com", 443, true));
  EXPECT_FALSE(parse_authority("[::1]", 443, true));
  EXPECT_TRUE(parse_authority("example.com:443", 443, true));
  // default_port 0 is no port.
  EXPECT_FALSE(parse_authority("example.com", 0, false));
}

TEST(ParseAuthority, RejectsUserinfoPathAndJunk) {
  for (const char* t : {"", ":80", "user@host", "user@host:80", "user:pw@host:80", "host/",
                        "host:80/", "host?x", "host#x", "host:80#", " host:80", "host :80", "[]:80",
                        "@:80", "a..b:80", "1.2.3.256:80", "example.09:80", "%68ost:80"}) {
    EXPECT_FALSE(parse_authority(t, 80, false)) << t;
  }
}

// --- parse_http_url --------------------------------------------------------------------------

TEST(ParseHttpUrl, Basic) {
  auto u = parse_http_url("http://Example.com/a/b?c=d");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->target.host.text, "example.com");
  EXPECT_EQ(u->target.port, 80);
  EXPECT_EQ(u->path_and_query, "/a/b?c=d");

  u = parse_http_url("HTTP://example.com:8080/");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->target.port, 8080);
  EXPECT_EQ(u->path_and_query, "/");

  u = parse_http_url("hTtP://[::1]:81/x");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->target.host.text, "::1");
  EXPECT_EQ(u->target.port, 81);
  EXPECT_EQ(u->path_and_query, "/x");

  u = parse_http_url("http://0x7f.1/");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->target.host.text, "127.0.0.1");
  EXPECT_EQ(u->target.host.kind, host_kind::ipv4);
}

TEST(TargetBytes, OnlyWhatARequestTargetMayHold) {
  EXPECT_TRUE(target_bytes_ok("/a/b%20c?x=1&y=%C3%A9"));
  for (std::string_view bad : {"/a#b", "/a\\b", "/a b", "/a\tb", "/a\x7f", "/caf\xc3\xa9"})
    EXPECT_FALSE(target_bytes_ok(bad)) << bad;
}

TEST(ParseHttpUrl, EmptyPathBecomesSlash) {
  auto u = parse_http_url("http://example.com");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->path_and_query, "/");

  u = parse_http_url("http://example.com:81");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->target.port, 81);
  EXPECT_EQ(u->path_and_query, "/");

  u = parse_http_url("http://example.com?x=1");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->path_and_query, "/?x=1");

  u = parse_http_url("http://example.com:82?");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->target.port, 82);
  EXPECT_EQ(u->path_and_query, "/?");
}

TEST(ParseHttpUrl, KeepsPathBytesAsSent) {
  // Percent-encoding and odd-but-legal characters in the path are the path filter's business.
  auto u = parse_http_url("http://h/%2e%2e/a;b=c/../d?e=%20&f=@:/?");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->path_and_query, "/%2e%2e/a;b=c/../d?e=%20&f=@:/?");
  // '@' after the authority is path, not userinfo.
  u = parse_http_url("http://h/user@x");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->target.host.text, "h");
}

TEST(ParseHttpUrl, Rejections) {
  for (const char* t : {"https://example.com/",
                        "ftp://example.com/",
                        "ws://example.com/",
                        "http:/example.com/",
                        "http:example.com",
                        "http//example.com/",
                        "example.com/",
                        "/path",
                        "",
                        "http://",
                        "http:///path",
                        "http://?x",
                        "http://:80/",
                        "http://user@example.com/",
                        "http://user:pw@example.com/",
                        "http://@example.com/",
                        "http://example.com/#frag",
                        "http://example.com#",
                        "http://example.com/a b",
                        "http://example.com/\t",
                        "http://exa mple.com/",
                        "http://example.com/\x7f",
                        "http://example.com/\x80",
                        "http://example.com/\r\nX: y",
                        "http://example.com\\@evil.com/",
                        "http://example.com/a\\b",
                        "http://example.com:0/",
                        "http://example.com:080/",
                        "http://example.com:/",
                        "http://[::1/",
                        "http://::1/",
                        "http://[fe80::1%25lo]/",
                        "http://%65xample.com/",
                        "http://1.2.3.256/",
                        "http://example.com.../",
                        " http://example.com/",
                        "http://example.com/ ",
                        "httpx://example.com/"}) {
    EXPECT_FALSE(parse_http_url(t)) << t;
  }
  EXPECT_FALSE(parse_http_url(std::string_view("http://h/\0", 10)));
}

}  // namespace
TEST(Ipv4Text, SameAsInetNtopForEveryOctetWidth) {
  // Every octet value in every position, against the library's own formatting.
  for (unsigned v = 0; v < 256; ++v) {
    for (unsigned pos = 0; pos < 4; ++pos) {
      boost::asio::ip::address_v4::bytes_type b{1, 20, 255, 0};
      b[pos] = static_cast<unsigned char>(v);
      const boost::asio::ip::address_v4 a(b);
      ASSERT_EQ(ipv4_text(a), a.to_string());
    }
  }
}

}  // namespace airlock::net
