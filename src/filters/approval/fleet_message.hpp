#pragma once
// What the replicas tell each other about approvals through the shared store (fleet.hpp): the
// held requests each one lists, the decisions sent to the replica holding a request, its
// answers, and the grants every replica applies. JSON text, one object per message.
//
// Everything read back from the store is untrusted input (whoever can write to the store can
// write anything): decode_* bound the size, check every field's type and range, and give
// nullopt for anything else; the caller drops it and counts it. Nothing here approves
// anything: a message that does not decode is never a decision.

#include "filters/approval/registry.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::filters::approval::fleet_msg {

// The longest message read from the store; longer ones are dropped unread.
constexpr std::size_t max_message = 16 * 1024;

// A replica's name: 1 to 64 of [A-Za-z0-9._-] (it is part of keys, channels and ids).
bool valid_replica(std::string_view name);
// `text` made a valid replica name (other characters become '-', cut at 64; "replica" if empty).
std::string sanitize_replica(std::string_view text);

// "r2:7" -> {"r2", 7}; nullopt unless a valid replica name, ':' and a number > 0.
struct qualified_id {
  std::string replica;
  std::uint64_t id = 0;
};
std::optional<qualified_id> parse_qualified(std::string_view text);

// A held request or access request as the other replicas list it.
struct held {
  std::string replica;
  std::uint64_t id = 0;
  request_info request;
  std::int64_t since_s = 0;      // unix seconds
  std::int64_t deadline_ms = 0;  // unix milliseconds: the hold ends by then
};
std::string encode(const held& h);
std::optional<held> decode_held(std::string_view text);

// A decision sent to the replica holding the request.
struct decide {
  std::string from;  // the deciding replica (the answer goes to its channel)
  std::uint64_t nonce = 0;
  std::uint64_t id = 0;  // the holder's own id
  decision d;
};
std::string encode(const decide& m);

// The holder's answer.
struct ack {
  std::uint64_t nonce = 0;
  unsigned status = 0;  // 200, 404 or 409 (admin_api.hpp)
  std::string message;
  request_info target;  // what was decided (agent, method, host, port, path), for the audit
};
std::string encode(const ack& m);

// A grant, applied by every replica.
struct grant_msg {
  std::string from;
  approval::grant g;  // expires: time_point::max() travels as 0 (never)
};
std::string encode(const grant_msg& m);

// A message on a replica's channel or the grants channel: exactly one is set.
struct incoming {
  std::optional<decide> decision;
  std::optional<ack> answer;
  std::optional<grant_msg> grant;
};
std::optional<incoming> decode(std::string_view text);

}  // namespace airlock::filters::approval::fleet_msg
