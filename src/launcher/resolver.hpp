#pragma once
// The jail's resolver: answers every DNS query the jail sends to 127.0.0.1:53 itself, so no
// query ever leaves the jail (and none can carry data out in a name). Decisions, in order:
//
//   - a reply, a query that is not a standard QUERY, or a malformed one: no answer, NOTIMP or
//     FORMERR (dns_message.hpp);
//   - class other than IN, or a type other than A/AAAA: REFUSED;
//   - `localhost`, `*.localhost` (RFC 6761 section 6.3) and the jail's own host name: the
//     loopback address, so local servers keep working;
//   - names no policy could ever allow: not a host name (bytes other than letters, digits,
//     '-', '_'; empty labels), the root, `*.invalid` (RFC 6761 section 6.4), `*.onion`
//     (RFC 7686 section 2): NXDOMAIN, counted and logged;
//   - names that look like they carry data (net/data_like_host.hpp: long hex or base32 labels,
//     high-entropy labels, long chains), unless --dns-allow names them: NXDOMAIN, counted, and
//     logged at warn without the name's data labels (issue 16). No query leaves the jail
//     anyway, so this is not what stops the leak (the proxy refuses the name at connect time,
//     hostname_exfiltration); it makes the agent fail at the lookup and shows it early. The
//     proxy lets a rule that names such a host exactly reach it; the resolver has no copy of
//     the policy, hence --dns-allow;
//   - every other name: its address from the pool (name_pool.hpp); AAAA only when the jail's
//     capture handles IPv6, else an empty answer.
//
// Why every other name gets an address, rather than NXDOMAIN for names the policy denies:
// the launcher has no copy of the policy, and the proxy's decision also depends on the agent,
// the port, the method and the path, and on reloads. Answering from the pool keeps one place
// that decides; a denied name is refused by the proxy at connect time, with the agent, rule
// and reason in its audit log, and the lookup itself reveals nothing to anyone.
//
// Not thread-safe: the relay's thread owns it (and the pool).

#include "launcher/name_pool.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace airlock::launcher {

class resolver {
 public:
  struct stats {
    std::uint64_t queries = 0;
    std::uint64_t answered = 0;   // NOERROR with or without addresses
    std::uint64_t nxdomain = 0;   // names no policy could allow
    std::uint64_t refused = 0;    // other types and classes
    std::uint64_t malformed = 0;  // FORMERR, NOTIMP, or dropped
    std::uint64_t data_like = 0;  // of nxdomain: names that look like they carry data
    std::uint64_t pool_full = 0;  // SERVFAIL: no address left
  };

  // hostname: the jail's own (answered as loopback). ipv6: whether AAAA gets pool addresses.
  // allowed: data-like names answered anyway (lower case, no trailing dot).
  resolver(name_pool& pool, std::string hostname, bool ipv6, std::vector<std::string> allowed = {});

  // The reply to one datagram; empty when it deserves none.
  std::vector<std::uint8_t> answer(std::span<const std::uint8_t> datagram);

  const stats& get_stats() const noexcept { return stats_; }

  // Answers live this long in caches; a name keeps its address for the whole run anyway.
  static constexpr std::uint32_t ttl_seconds = 60;

 private:
  name_pool& pool_;
  std::string hostname_;
  bool ipv6_;
  std::vector<std::string> allowed_;
  stats stats_;
};

}  // namespace airlock::launcher
