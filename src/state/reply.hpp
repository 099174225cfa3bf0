#pragma once
// One Redis reply as a plain value (RESP2: RESP spec,
// https://redis.io/docs/reference/protocol-spec/), copied out of hiredis's redisReply so that it
// can cross threads and outlive the callback.

#include <cstdint>
#include <string>
#include <vector>

namespace airlock::state {

struct reply {
  enum class kind : std::uint8_t {
    unavailable,  // no answer: not connected, timed out, or the connection dropped
    error,        // -ERR ...: `text` holds it
    nil,
    integer,
    string,  // bulk string
    status,  // +OK and friends
    array,
  };
  kind what = kind::unavailable;
  std::int64_t integer = 0;
  std::string text;  // string, status, error; the reason for unavailable
  std::vector<reply> elements;

  // Redis answered, and not with an error.
  bool ok() const noexcept { return what != kind::unavailable && what != kind::error; }
  static reply unavailable(std::string why) {
    reply r;
    r.text = std::move(why);
    return r;
  }
};

}  // namespace airlock::state
