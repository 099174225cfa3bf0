#pragma once
// The operator's console (GET /console on the admin port): one HTML page, its CSS and script
// inline, no external asset (it works offline and loads nothing from elsewhere). It reads the
// admin API (GET /policy, /agents, /approvals, /rules) once a second, shows GET /events live,
// and acts through it (stop and resume an agent; approve or refuse a held request with a
// scope), sending the operator token the operator typed (kept in sessionStorage) as a Bearer
// credential. Every string from the proxy (agent names, hosts, paths, an agent's own reason) is
// put in the page with textContent only, never as HTML.

#include <string_view>

namespace airlock::telemetry {

std::string_view console_html() noexcept;

// The answer's Content-Security-Policy: the inline script and style only, requests to this
// origin only, no frames (no clickjacking), no forms, no base.
inline constexpr std::string_view console_csp =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

}  // namespace airlock::telemetry
