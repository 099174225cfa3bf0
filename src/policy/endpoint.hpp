#pragma once
// Listening endpoints as written in the policy (`listen.proxy`, `listen.admin`).

#include <boost/asio/ip/tcp.hpp>

#include <optional>
#include <string_view>

namespace airlock::policy {

// "127.0.0.1:3128", "[::1]:9464", "0.0.0.0:0" (port 0 = any free port). The host must be an
// IP literal: a listener never depends on DNS.
std::optional<boost::asio::ip::tcp::endpoint> parse_endpoint(std::string_view text);

}  // namespace airlock::policy
