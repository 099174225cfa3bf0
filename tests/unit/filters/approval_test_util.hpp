#pragma once
// Helpers shared by the approval tests.

#include "filters/approval/registry.hpp"

#include <string>
#include <utility>

namespace airlock::filters::approval::test {

// A plain GET of `agent` to host:443.
inline request_info get(std::string agent, std::string host, std::string path = "/x") {
  request_info r;
  r.agent = std::move(agent);
  r.host = std::move(host);
  r.port = 443;
  r.method = "GET";
  r.path = std::move(path);
  return r;
}

}  // namespace airlock::filters::approval::test
