// The in-jail resolver's DNS codec (src/launcher/dns_message.*): any datagram the agent sends
// to 127.0.0.53 or wherever its resolv.conf points. Properties: no reply to a response or to
// fewer than 12 bytes; a reply to a parsed query, with answers, fits a UDP datagram of
// max_udp_size and is itself a response (parse_query never answers it: no resolver loops).

#include "fuzz_input.hpp"
#include "launcher/dns_message.hpp"

#include <array>

namespace dns = airlock::launcher::dns;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using airlock::fuzz::fail;
  const std::span<const std::uint8_t> in(data, size);
  const auto p = dns::parse_query(in);
  if (size < dns::header_size && (p.value || p.reply)) fail("answered fewer than 12 bytes");
  if (size >= 3 && (data[2] & 0x80) && (p.value || p.reply)) fail("answered a response");
  if (p.reply && !p.value) {
    const auto r = dns::make_header_reply(in, p.error);
    if (r.size() != dns::header_size) fail("header reply is not a bare header");
    if (dns::parse_query(r).reply || dns::parse_query(r).value) fail("a reply is answered");
  }
  if (!p.value) return 0;
  const auto& q = *p.value;
  std::array<dns::address_record, 3> answers{};
  answers[1].type = dns::type_aaaa;
  for (std::size_t n = 0; n <= answers.size(); ++n) {
    const auto r = dns::make_reply(q, dns::rcode::no_error, std::span(answers).first(n), 60);
    if (r.size() > dns::max_udp_size) fail("reply larger than a UDP datagram");
    const auto back = dns::parse_query(r);
    if (back.value || back.reply) fail("a reply is answered");
  }
  (void)dns::make_reply(q, dns::rcode::name_error, {}, 0);
  return 0;
}
