// The host/authority/URL normaliser (src/net/host.*): every byte string a Host header, a
// CONNECT target, an absolute-form URL or an SNI may carry. Properties: a normalised host is
// canonical (normalising its text again gives the same host), IP hosts print as their address,
// ports are never 0, and an origin-form path always starts with '/'.

#include "fuzz_input.hpp"
#include "net/host.hpp"

#include <string>

namespace airlock::fuzz {
namespace {

void check_canonical(const net::normalized_host& h) {
  if (h.text.size() > 253) fail("host longer than 253");
  if (h.is_ip() && h.address.to_string() != h.text) fail("IP host text is not its address");
  const auto again =
      net::normalize_host(h.kind == net::host_kind::ipv6 ? "[" + h.text + "]" : h.text);
  if (!again || again->text != h.text || again->kind != h.kind)
    fail("normalised host does not normalise to itself");
}

}  // namespace
}  // namespace airlock::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace airlock;
  using fuzz::fail;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto h = net::normalize_host(in)) fuzz::check_canonical(*h);
  for (bool required : {false, true}) {
    if (auto a = net::parse_authority(in, required ? 0 : 80, required)) {
      if (a->port == 0) fail("authority with port 0");
      fuzz::check_canonical(a->host);
    }
  }
  if (auto u = net::parse_http_url(in)) {
    if (u->target.port == 0) fail("URL with port 0");
    if (u->path_and_query.empty() || u->path_and_query.front() != '/')
      fail("origin-form path does not start with '/'");
    fuzz::check_canonical(u->target.host);
  }
  // The same bytes after a scheme, so that mutations explore the authority and path.
  if (auto u = net::parse_http_url("http://" + std::string(in))) {
    if (u->target.port == 0) fail("URL with port 0");
    fuzz::check_canonical(u->target.host);
  }
  return 0;
}
