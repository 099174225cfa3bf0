#include "launcher/resolver.hpp"

#include "core/log.hpp"
#include "launcher/dns_message.hpp"
#include "net/data_like_host.hpp"

#include <algorithm>

#include <string_view>

namespace airlock::launcher {
namespace {

bool is_or_under(std::string_view name, std::string_view domain) {
  return name == domain || (name.size() > domain.size() && name.ends_with(domain) &&
                            name[name.size() - domain.size() - 1] == '.');
}

// Why no policy could ever allow the name, or nullptr when one could.
const char* never_allowed(const dns::query& q) {
  if (q.name.empty()) return "the root";
  if (!q.name_is_hostname) return "not a host name";
  std::string_view rest = q.name;
  while (!rest.empty()) {  // empty labels ("a..b") cannot be written in a URL either
    const auto dot = rest.find('.');
    if (dot == 0) return "not a host name";
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  if (is_or_under(q.name, "invalid")) return "special-use name (RFC 6761)";
  if (is_or_under(q.name, "onion")) return "special-use name (RFC 7686)";
  return nullptr;
}

// The last two labels of name ("example.com" of "x.y.example.com").
std::string_view registrable(std::string_view name) {
  auto dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return name;
  dot = name.rfind('.', dot - 1);
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

}  // namespace

resolver::resolver(name_pool& pool, std::string hostname, bool ipv6,
                   std::vector<std::string> allowed)
    : pool_(pool), hostname_(std::move(hostname)), ipv6_(ipv6), allowed_(std::move(allowed)) {
  for (auto& c : hostname_) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
}

std::vector<std::uint8_t> resolver::answer(std::span<const std::uint8_t> datagram) {
  ++stats_.queries;
  auto parsed = dns::parse_query(datagram);
  if (!parsed.value) {
    ++stats_.malformed;
    if (!parsed.reply) return {};
    return dns::make_header_reply(datagram, parsed.error);
  }
  const dns::query& q = *parsed.value;
  if (q.klass != dns::class_in || (q.type != dns::type_a && q.type != dns::type_aaaa)) {
    ++stats_.refused;
    return dns::make_reply(q, dns::rcode::refused, {}, 0);
  }
  if (const char* why = never_allowed(q)) {
    ++stats_.nxdomain;
    AIRLOCK_LOG(debug, "launcher", "resolver: NXDOMAIN for '", q.name, "': ", why);
    return dns::make_reply(q, dns::rcode::name_error, {}, 0);
  }
  if (const auto why = net::data_like_host(q.name);
      why && std::find(allowed_.begin(), allowed_.end(), q.name) == allowed_.end()) {
    ++stats_.nxdomain;
    ++stats_.data_like;
    // The registrable part only: the labels left of it are what would carry the data.
    AIRLOCK_LOG(warn, "launcher", "resolver: NXDOMAIN for a name under '", registrable(q.name),
                "' that looks like it carries data (", *why, "); --dns-allow NAME lets it resolve");
    return dns::make_reply(q, dns::rcode::name_error, {}, 0);
  }
  dns::address_record rec;
  rec.type = q.type;
  if (is_or_under(q.name, "localhost") || (!hostname_.empty() && q.name == hostname_)) {
    if (q.type == dns::type_a) {
      rec.address[0] = 127;
      rec.address[3] = 1;
    } else {
      rec.address[15] = 1;
    }
    ++stats_.answered;
    return dns::make_reply(q, dns::rcode::no_error, {&rec, 1}, ttl_seconds);
  }
  const auto index = pool_.assign(q.name);
  if (!index) {
    ++stats_.pool_full;
    AIRLOCK_LOG(warn, "launcher", "resolver: the address pool is full; no address for '", q.name,
                "'");
    return dns::make_reply(q, dns::rcode::server_failure, {}, 0);
  }
  ++stats_.answered;
  if (q.type == dns::type_aaaa && !ipv6_) {
    // NOERROR without records ("NODATA", RFC 2308 section 2.2): the name exists, it just has
    // no IPv6 address here, so clients use the IPv4 one rather than give up.
    return dns::make_reply(q, dns::rcode::no_error, {}, ttl_seconds);
  }
  if (q.type == dns::type_a) {
    const auto a = pool_.v4_address(*index);
    std::copy(a.begin(), a.end(), rec.address.begin());
  } else {
    rec.address = pool_.v6_address(*index);
  }
  AIRLOCK_LOG(debug, "launcher", "resolver: ", q.type == dns::type_a ? "A " : "AAAA ", q.name,
              " -> pool entry ", *index);
  return dns::make_reply(q, dns::rcode::no_error, {&rec, 1}, ttl_seconds);
}

}  // namespace airlock::launcher
