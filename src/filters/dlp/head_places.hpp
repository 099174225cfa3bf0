#pragma once
// The places of a request head that DLP reads, each a scanner::piece: the host (also
// upper-cased and with its labels joined), the path, the query, the method, every field's name
// (also upper-cased) and value. Proxy-Authorization, Host and Proxy-Connection are the proxy's;
// a WebSocket upgrade's Sec-WebSocket-Key nonce is handed back apart (it is random by design).
//
// @par Thread Safety
// Pure functions.

#include "filters/dlp/scanner.hpp"
#include "filters/exchange.hpp"

#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::dlp {

struct head_places {
  std::vector<scanner::piece> pieces;
  std::deque<std::string> readings;  // what pieces point into besides the head (stable)
  std::string_view query;            // the raw query, also read value by value joined
  std::string_view nonce;            // a WebSocket upgrade's Sec-WebSocket-Key
};

head_places places_of(const exchange& ex);

// The host name besides as sent: upper-cased, and each run of its parts joined.
std::vector<std::string> host_readings(std::string_view host);

// Whether `value` of Sec-WebSocket-Key is the nonce of a WebSocket upgrade the rule allows.
bool websocket_nonce(const exchange& ex, std::string_view value);

}  // namespace airlock::filters::dlp
