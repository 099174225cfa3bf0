#include "launcher/dns_message.hpp"

namespace airlock::launcher::dns {
namespace {

constexpr std::uint16_t flag_response = 0x8000;  // QR
constexpr std::uint16_t flag_recursion_desired = 0x0100;
constexpr std::uint16_t flag_recursion_available = 0x0080;
constexpr std::size_t max_name_wire = 255;    // RFC 1035 section 2.3.4
constexpr std::uint16_t our_udp_size = 1232;  // the usual EDNS size (DNS flag day 2020)

std::uint16_t get16(std::span<const std::uint8_t> d, std::size_t at) {
  return static_cast<std::uint16_t>((d[at] << 8) | d[at + 1]);
}

void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v & 0xff));
}

void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  put16(out, static_cast<std::uint16_t>(v >> 16));
  put16(out, static_cast<std::uint16_t>(v & 0xffff));
}

bool hostname_byte(std::uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

// Skips one resource record starting at pos (RFC 1035 section 4.1.3); its owner name may be
// compressed. Returns the position after it and its type, or nullopt when it runs past the end.
struct rr_info {
  std::size_t next;
  std::uint16_t type;
};
std::optional<rr_info> skip_record(std::span<const std::uint8_t> d, std::size_t pos) {
  for (std::size_t labels = 0;; ++labels) {
    if (pos >= d.size() || labels > 128) return std::nullopt;
    const std::uint8_t len = d[pos];
    if (len == 0) {
      ++pos;
      break;
    }
    if ((len & 0xC0) == 0xC0) {  // a pointer ends the name
      pos += 2;
      break;
    }
    if ((len & 0xC0) != 0) return std::nullopt;  // the reserved label types
    pos += 1 + len;
  }
  if (pos + 10 > d.size()) return std::nullopt;
  const std::uint16_t type = get16(d, pos);
  const std::size_t rdlength = get16(d, pos + 8);
  pos += 10 + rdlength;
  if (pos > d.size()) return std::nullopt;
  return rr_info{pos, type};
}

}  // namespace

parsed_query parse_query(std::span<const std::uint8_t> d) {
  parsed_query out;
  if (d.size() < header_size) return out;  // not even an id to answer to
  const std::uint16_t flags = get16(d, 2);
  if (flags & flag_response) return out;  // never answer an answer
  out.reply = true;
  query q;
  q.id = get16(d, 0);
  q.opcode = static_cast<std::uint8_t>((flags >> 11) & 0x0f);
  q.recursion_desired = (flags & flag_recursion_desired) != 0;
  if (q.opcode != 0) {  // only QUERY (RFC 1035 section 4.1.1)
    out.error = rcode::not_implemented;
    return out;
  }
  const std::uint16_t qdcount = get16(d, 4), ancount = get16(d, 6), nscount = get16(d, 8),
                      arcount = get16(d, 10);
  // One question per query is all anybody sends (RFC 9619); answers and authority records
  // have no business in a query.
  if (qdcount != 1 || ancount != 0 || nscount != 0) return out;

  std::size_t pos = header_size;
  while (true) {
    if (pos >= d.size()) return out;
    const std::uint8_t len = d[pos];
    if (len == 0) {
      ++pos;
      break;
    }
    if (len > 63) return out;  // no compression in a question, no reserved label types
    if (pos + 1 + len > d.size() || pos + 1 + len - header_size >= max_name_wire) return out;
    if (!q.name.empty()) q.name.push_back('.');
    for (std::size_t i = pos + 1; i < pos + 1 + len; ++i) {
      const std::uint8_t c = d[i];
      if (!hostname_byte(c)) q.name_is_hostname = false;
      q.name.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
    }
    pos += 1 + len;
  }
  if (pos + 4 > d.size()) return out;
  q.type = get16(d, pos);
  q.klass = get16(d, pos + 2);
  pos += 4;
  q.question.assign(d.begin() + header_size, d.begin() + static_cast<std::ptrdiff_t>(pos));

  for (std::uint16_t i = 0; i < arcount; ++i) {
    auto rr = skip_record(d, pos);
    if (!rr) return out;
    if (rr->type == type_opt) {
      if (q.edns) return out;  // more than one OPT (RFC 6891 section 6.1.1)
      q.edns = true;
    }
    pos = rr->next;
  }
  out.value = std::move(q);
  return out;
}

std::vector<std::uint8_t> make_reply(const query& q, rcode code,
                                     std::span<const address_record> answers, std::uint32_t ttl) {
  std::vector<std::uint8_t> out;
  out.reserve(header_size + q.question.size() + answers.size() * 28 + 11);
  put16(out, q.id);
  std::uint16_t flags = flag_response | flag_recursion_available |
                        static_cast<std::uint16_t>(q.opcode << 11) |
                        static_cast<std::uint16_t>(code);
  if (q.recursion_desired) flags |= flag_recursion_desired;
  put16(out, flags);
  put16(out, 1);
  put16(out, static_cast<std::uint16_t>(answers.size()));
  put16(out, 0);
  put16(out, q.edns ? 1 : 0);
  out.insert(out.end(), q.question.begin(), q.question.end());
  for (const auto& a : answers) {
    put16(out, 0xC000 | header_size);  // the name: a pointer to the question's
    put16(out, a.type);
    put16(out, class_in);
    put32(out, ttl);
    const std::uint16_t size = a.type == type_aaaa ? 16 : 4;
    put16(out, size);
    out.insert(out.end(), a.address.begin(), a.address.begin() + size);
  }
  if (q.edns) {
    // RFC 6891 section 6.1.2: root owner, our UDP payload size as the class, extended RCODE
    // and flags zero, no options.
    out.push_back(0);
    put16(out, type_opt);
    put16(out, our_udp_size);
    put32(out, 0);
    put16(out, 0);
  }
  return out;
}

std::vector<std::uint8_t> make_header_reply(std::span<const std::uint8_t> d, rcode code) {
  std::vector<std::uint8_t> out;
  if (d.size() < header_size) return out;
  const std::uint16_t flags = get16(d, 2);
  out.push_back(d[0]);
  out.push_back(d[1]);
  put16(out, static_cast<std::uint16_t>(flag_response | flag_recursion_available |
                                        (flags & (0x7800 | flag_recursion_desired)) |
                                        static_cast<std::uint16_t>(code)));
  for (int i = 0; i < 4; ++i)
    put16(out, 0);
  return out;
}

}  // namespace airlock::launcher::dns
