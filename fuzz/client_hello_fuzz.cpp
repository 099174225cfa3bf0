// The ClientHello/SNI reader (src/net/client_hello.*) on the first bytes of a CONNECT tunnel.
// Properties from its contract: a verdict other than need_more never changes when more bytes
// arrive (checked on prefixes of the input: a prefix's final verdict must be the whole input's,
// with the same server name and ALPN), an input of max_client_hello_bytes or more is never
// need_more, and one parser fed the input in growing prefixes (as a connection's reads arrive)
// reaches the verdict a fresh parser gives the whole input.

#include "fuzz_input.hpp"
#include "net/client_hello.hpp"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace airlock;
  using fuzz::fail;
  const std::span<const std::uint8_t> in(data, size);
  const auto whole = net::parse_client_hello(in);
  if (whole.status != net::hello_status::complete && (whole.server_name || !whole.alpn.empty()))
    fail("server name or ALPN set without a complete hello");
  if (size >= net::max_client_hello_bytes && whole.status == net::hello_status::need_more)
    fail("need_more past max_client_hello_bytes");
  // A few prefixes, chosen from the input's length so that a replay checks the same ones.
  fuzz::rng r(size * 0x9e3779b97f4a7c15ull + (size ? data[0] : 0));
  for (int i = 0; i < 4 && size > 0; ++i) {
    const std::size_t cut = r.below(size);
    const auto part = net::parse_client_hello(in.first(cut));
    if (part.status == net::hello_status::need_more) continue;
    if (part.status != whole.status || part.server_name != whole.server_name ||
        part.alpn != whole.alpn)
      fail("a final verdict changed when more bytes arrived");
  }
  net::client_hello_parser resumed;
  for (std::size_t n = 0; size > 0 && n < size;) {
    n = std::min(size, n + 1 + r.below(64));
    const auto& got = resumed.parse(in.first(n));
    if (got.status == net::hello_status::need_more) continue;
    if (got.status != whole.status || got.server_name != whole.server_name ||
        got.alpn != whole.alpn)
      fail("resumed parsing disagreed with parsing the whole input");
    break;
  }
  return 0;
}
