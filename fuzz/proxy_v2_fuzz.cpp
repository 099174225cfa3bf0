// The PROXY protocol v2 decoder (src/net/proxy_protocol.*) the proxy runs on the first bytes
// of every relay connection. Properties: a decoded header consumed no more than it was given
// and at least the fixed header; encoding it and decoding the result gives the same header
// (what the proxy understood is what the launcher would have meant).

#include "fuzz_input.hpp"
#include "net/proxy_protocol.hpp"

namespace pv2 = airlock::net::proxy_v2;

namespace {

bool same_endpoint(const std::optional<pv2::endpoint>& a, const std::optional<pv2::endpoint>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return a->v6 == b->v6 && a->addr == b->addr && a->port == b->port;
}

bool same_header(const pv2::header& a, const pv2::header& b) {
  if (a.cmd != b.cmd || !same_endpoint(a.source, b.source) ||
      !same_endpoint(a.destination, b.destination) || a.tlvs.size() != b.tlvs.size())
    return false;
  for (std::size_t i = 0; i < a.tlvs.size(); ++i) {
    if (a.tlvs[i].type != b.tlvs[i].type || a.tlvs[i].value != b.tlvs[i].value) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using airlock::fuzz::fail;
  const auto d = pv2::decode({data, size});
  if (!d) return 0;
  if (d->consumed > size || d->consumed < pv2::header_size) fail("consumed out of range");
  (void)pv2::agent_of(d->value);
  const auto encoded = pv2::encode(d->value);
  if (!encoded) return 0;  // e.g. a family the encoder does not write
  const auto again = pv2::decode(*encoded);
  if (!again) fail("re-encoded header does not decode");
  if (again->consumed != encoded->size()) fail("re-encoded header not consumed whole");
  if (!same_header(again->value, d->value)) fail("header changed through encode/decode");
  return 0;
}
