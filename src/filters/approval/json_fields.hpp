#pragma once
// The JSON keys of a held request and of a grant, as GET /approvals shows them
// (registry_json.cpp) and as the replicas exchange them (fleet_message.cpp, fleet_store.cpp).

#include "filters/approval/registry.hpp"

#include <boost/json/object.hpp>

namespace airlock::filters::approval {

// kind, agent, host, port, method, path, in_tunnel, rule, reason (the agent's own words:
// untrusted text, stored raw; whoever shows it escapes it).
void put_request(boost::json::object& o, const request_info& r);
// id, agent, host, port, method, path_prefix, by (the expiry is each caller's own format).
void put_grant(boost::json::object& o, const grant& g);

}  // namespace airlock::filters::approval
