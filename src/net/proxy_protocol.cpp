#include "net/proxy_protocol.hpp"

#include <algorithm>

namespace airlock::net::proxy_v2 {
namespace {

constexpr std::uint8_t version2 = 0x20;
constexpr std::uint8_t fam_unspec = 0x00;
constexpr std::uint8_t fam_tcp4 = 0x11;  // AF_INET << 4 | STREAM
constexpr std::uint8_t fam_tcp6 = 0x21;  // AF_INET6 << 4 | STREAM
constexpr std::size_t max_payload = 0xFFFF;

void put16(std::vector<std::uint8_t>& out, std::size_t v) {
  out.push_back(static_cast<std::uint8_t>((v >> 8) & 0xFF));
  out.push_back(static_cast<std::uint8_t>(v & 0xFF));
}

std::uint16_t get16(std::span<const std::uint8_t> d, std::size_t at) {
  return static_cast<std::uint16_t>((d[at] << 8) | d[at + 1]);
}

}  // namespace

std::optional<std::vector<std::uint8_t>> encode(const header& h) {
  if (h.source.has_value() != h.destination.has_value()) return std::nullopt;
  std::uint8_t fam = fam_unspec;
  std::size_t addr_len = 0;
  if (h.source) {
    if (h.source->v6 != h.destination->v6) return std::nullopt;
    fam = h.source->v6 ? fam_tcp6 : fam_tcp4;
    addr_len = h.source->v6 ? 36 : 12;
  }
  std::size_t payload = addr_len;
  for (const auto& t : h.tlvs) {
    if (t.value.size() > max_payload) return std::nullopt;
    payload += 3 + t.value.size();
  }
  if (payload > max_payload) return std::nullopt;

  std::vector<std::uint8_t> out;
  out.reserve(header_size + payload);
  out.insert(out.end(), signature.begin(), signature.end());
  out.push_back(version2 | static_cast<std::uint8_t>(h.cmd));
  out.push_back(fam);
  put16(out, payload);
  if (h.source) {
    const std::size_t n = h.source->v6 ? 16 : 4;
    out.insert(out.end(), h.source->addr.begin(), h.source->addr.begin() + n);
    out.insert(out.end(), h.destination->addr.begin(), h.destination->addr.begin() + n);
    put16(out, h.source->port);
    put16(out, h.destination->port);
  }
  for (const auto& t : h.tlvs) {
    out.push_back(t.type);
    put16(out, t.value.size());
    out.insert(out.end(), t.value.begin(), t.value.end());
  }
  return out;
}

std::optional<std::vector<std::uint8_t>> encode_agent(const endpoint& source,
                                                      const endpoint& destination,
                                                      std::string_view agent) {
  header h;
  h.cmd = command::proxy;
  h.source = source;
  h.destination = destination;
  h.tlvs.push_back(tlv{tlv_agent, std::string(agent)});
  return encode(h);
}

std::optional<decoded> decode(std::span<const std::uint8_t> d) {
  if (d.size() < header_size) return std::nullopt;
  if (!std::equal(signature.begin(), signature.end(), d.begin())) return std::nullopt;
  const std::uint8_t ver_cmd = d[12];
  if ((ver_cmd & 0xF0) != version2) return std::nullopt;
  const std::uint8_t cmd = ver_cmd & 0x0F;
  if (cmd > 1) return std::nullopt;
  const std::uint8_t fam = d[13];
  const std::size_t len = get16(d, 14);
  if (d.size() < header_size + len) return std::nullopt;
  auto body = d.subspan(header_size, len);

  decoded out;
  out.value.cmd = static_cast<command>(cmd);
  out.consumed = header_size + len;
  std::size_t pos = 0;
  if (fam == fam_tcp4 || fam == fam_tcp6) {
    const bool v6 = fam == fam_tcp6;
    const std::size_t n = v6 ? 16 : 4;
    if (body.size() < 2 * n + 4) return std::nullopt;
    endpoint src, dst;
    src.v6 = dst.v6 = v6;
    std::copy_n(body.begin(), n, src.addr.begin());
    std::copy_n(body.begin() + static_cast<std::ptrdiff_t>(n), n, dst.addr.begin());
    src.port = get16(body, 2 * n);
    dst.port = get16(body, 2 * n + 2);
    out.value.source = src;
    out.value.destination = dst;
    pos = 2 * n + 4;
  } else if (fam != fam_unspec) {
    return std::nullopt;  // UDP and AF_UNIX are never produced by our relay
  }
  while (pos < body.size()) {
    if (body.size() - pos < 3) return std::nullopt;
    const std::uint8_t type = body[pos];
    const std::size_t tlen = get16(body, pos + 1);
    pos += 3;
    if (body.size() - pos < tlen) return std::nullopt;
    out.value.tlvs.push_back(
        tlv{type, std::string(reinterpret_cast<const char*>(body.data() + pos), tlen)});
    pos += tlen;
  }
  return out;
}

void add_binary(header& h, const peer_binary& binary) {
  h.tlvs.push_back(tlv{tlv_binary, binary.path});
  h.tlvs.push_back(tlv{tlv_binary_sha256, binary.sha256});
  if (binary.ancestors.empty()) return;
  std::string chain;
  for (const auto& a : binary.ancestors) {
    chain += a;
    chain.push_back('\0');
  }
  h.tlvs.push_back(tlv{tlv_binary_ancestors, std::move(chain)});
}

std::optional<peer_binary> binary_of(const header& h) {
  const tlv* path = nullptr;
  const tlv* hash = nullptr;
  const tlv* chain = nullptr;
  for (const auto& t : h.tlvs) {
    if (t.type == tlv_binary) path = &t;
    if (t.type == tlv_binary_sha256) hash = &t;
    if (t.type == tlv_binary_ancestors) chain = &t;
  }
  if (!path || !hash || path->value.empty() || path->value.find('\0') != std::string::npos)
    return std::nullopt;
  const bool hex =
      hash->value.size() == 64 && std::all_of(hash->value.begin(), hash->value.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      });
  if (!hex) return std::nullopt;
  peer_binary out{path->value, hash->value, {}};
  if (chain) {
    std::string_view rest = chain->value;
    while (!rest.empty()) {
      const auto end = rest.find('\0');
      out.ancestors.emplace_back(rest.substr(0, end));
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
  }
  return out;
}

std::optional<std::string> agent_of(const header& h) {
  for (const auto& t : h.tlvs) {
    if (t.type == tlv_agent) return t.value;
  }
  return std::nullopt;
}

}  // namespace airlock::net::proxy_v2
