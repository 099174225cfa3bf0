#include "telemetry/console_page.hpp"

namespace airlock::telemetry {
namespace {

// Kept in one raw string so the binary carries the whole console. The script builds every
// element with createElement and sets text with textContent: no innerHTML anywhere.
constexpr std::string_view page = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Airlock console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px system-ui,sans-serif;margin:0;background:#f5f6f8;color:#1d2330}
header{background:#1d2330;color:#fff;padding:10px 16px;display:flex;gap:24px;align-items:baseline}
header h1{font-size:18px;margin:0}header span{opacity:.8;font-family:monospace}
main{padding:12px 16px;display:grid;gap:16px}
section{background:#fff;border:1px solid #d8dce3;border-radius:6px;padding:8px 12px}
h2{font-size:15px;margin:4px 0 8px}table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eceef2;vertical-align:top}
td.reason{font-family:monospace;white-space:pre-wrap;max-width:30em;overflow-wrap:anywhere}
button,select{margin-right:4px}tr.settling button{opacity:.4}.stopped{color:#b3261e;font-weight:600}.empty{color:#777}
#status{color:#777}
</style></head>
<body>
<header><h1>Airlock console</h1><span id="version">policy …</span><span id="status"></span>
<label>operator token <input id="token" type="password" autocomplete="off" size="24"></label>
<button id="token-set" name="token-set">Use</button><button id="token-clear">Forget</button></header>
<main>
<section><h2>Pending approvals</h2>
<table id="pending"><thead><tr><th>id</th><th>kind</th><th>agent</th><th>request</th>
<th>rule</th><th>reason</th><th>left</th><th>decide</th></tr></thead><tbody></tbody></table></section>
<section><h2>Live decisions <span id="live-status" class="empty"></span></h2>
<table id="live"><thead><tr><th>time</th><th>agent</th><th>request</th><th>decision</th>
<th>reason</th></tr></thead><tbody></tbody></table></section>
<section><h2>Policy</h2>
<table id="policy"><tbody>
<tr><th>version</th><td id="p-version"></td></tr>
<tr><th>source</th><td id="p-source"></td></tr>
<tr><th>loaded at</th><td id="p-loaded"></td></tr>
<tr><th>last reload's changes</th><td id="p-changes"></td></tr>
<tr><th>last reload's errors</th><td id="p-error" class="reason"></td></tr>
<tr><th>interception CA (SHA-256)</th><td id="p-ca" class="reason"></td></tr>
</tbody></table></section>
<section><h2>Rules</h2>
<table id="rules"><thead><tr><th>rule</th><th>hits</th><th>allow</th><th>deny</th>
<th>report</th><th>error</th></tr></thead><tbody></tbody></table></section>
<section><h2>Agents</h2>
<table id="agents"><thead><tr><th>agent</th><th>state</th><th>in flight</th><th>concurrent</th>
<th>limits</th><th>breaker</th><th>kill switch</th></tr></thead><tbody></tbody></table></section>
<section><h2>Grants</h2>
<table id="grants"><thead><tr><th>id</th><th>agent</th><th>host:port</th><th>method</th>
<th>path prefix</th><th>expires</th><th>by</th></tr></thead><tbody></tbody></table>
<h2>Last permanent approval</h2><pre id="overlay"></pre></section>
</main>
<script>
"use strict";
function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text === undefined || text === null ? "" : String(text);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}
function choice(parent, name, options, value) {
  const select = document.createElement("select");
  select.name = name;
  for (const [v, label] of options) {
    const o = document.createElement("option");
    o.value = v;
    o.textContent = label;
    select.appendChild(o);
  }
  select.value = value;
  parent.appendChild(select);
  return select;
}
function button(parent, label, name, onclick) {
  const b = document.createElement("button");
  b.textContent = label;
  b.name = name;
  b.addEventListener("click", onclick);
  parent.appendChild(b);
  return b;
}
// A row that now stands where another stood (one above it ended, or a new one took its place)
// cannot be clicked for a moment: a click aimed at the row that was there would land on this
// one, and an agent can end its own held request just before the operator clicks.
const settleMs = 1500;
function settle(tr) {
  const controls = tr.querySelectorAll("button, select, input");
  for (const c of controls) c.disabled = true;
  tr.classList.add("settling");
  clearTimeout(tr.settleTimer);
  tr.settleTimer = setTimeout(() => {
    for (const c of controls) c.disabled = false;
    tr.classList.remove("settling");
  }, settleMs);
}
// Rows whose data did not change are kept as they are (a scope the operator picked, a button
// about to be clicked); `update` refreshes the parts that change on their own (time left).
// `key` names what a row stands for (an approval's id, an agent's name): a row whose place
// held something else at the last refresh settles (above). The first fill settles nothing.
function fill(id, rows, make, update, key) {
  const body = document.querySelector("#" + id + " tbody");
  const before = body.dataset.order ? JSON.parse(body.dataset.order) : null;
  const keys = rows.map(r => String(key ? key(r) : JSON.stringify(r)));
  const old = new Map();
  for (const tr of body.children) if (tr.dataset.sig) old.set(tr.dataset.sig, tr);
  const keep = [];
  for (const r of rows) {
    const shown = Object.assign({}, r);
    delete shown.seconds_left;
    const sig = JSON.stringify(shown);
    let tr = old.get(sig);
    if (!tr) {
      tr = make(r);
      tr.dataset.sig = sig;
    }
    if (update) update(tr, r);
    keep.push(tr);
  }
  body.replaceChildren(...keep);
  if (before) keep.forEach((tr, i) => { if (before[i] !== keys[i]) settle(tr); });
  body.dataset.order = JSON.stringify(keys);
  if (!rows.length) {
    const tr = document.createElement("tr");
    cell(tr, "none", "empty");
    body.appendChild(tr);
  }
}
// The operator token lives in this tab's sessionStorage only (never a cookie, never a URL):
// sent as a Bearer credential with each action, forgotten when the tab closes.
const tokenInput = document.getElementById("token");
function operatorToken() {
  return sessionStorage.getItem("airlock-operator-token") || "";
}
document.getElementById("token-set").addEventListener("click", () => {
  sessionStorage.setItem("airlock-operator-token", tokenInput.value);
  tokenInput.value = "";
  tokenInput.placeholder = "token set";
});
document.getElementById("token-clear").addEventListener("click", () => {
  sessionStorage.removeItem("airlock-operator-token");
  tokenInput.placeholder = "";
});
if (operatorToken()) tokenInput.placeholder = "token set";
// An agent's rate and quotas (GET /agents `limits`, 0 meaning none), with what is left of
// each hourly quota where this replica counts it (`*_left`, null otherwise).
function limitsText(l, a) {
  if (!l) return "";
  const left = (v) => (a && a[v] !== null && a[v] !== undefined) ? " (" + a[v] + " left)" : "";
  const parts = [];
  if (l.requests) parts.push(l.requests + (l.per_seconds === 60 ? "/min" : "/s") +
                             (l.burst ? " burst " + l.burst : ""));
  if (l.concurrent) parts.push(l.concurrent + " at once");
  if (l.requests_per_hour)
    parts.push(l.requests_per_hour + " requests/h" + left("requests_per_hour_left"));
  if (l.bytes_per_hour) parts.push(l.bytes_per_hour + " bytes/h" + left("bytes_per_hour_left"));
  if (l.upload_bytes_per_second) parts.push("up " + l.upload_bytes_per_second + " B/s");
  if (l.download_bytes_per_second) parts.push("down " + l.download_bytes_per_second + " B/s");
  return parts.length ? parts.join(", ") : "none";
}
async function post(path, body) {
  const headers = {"Content-Type": "application/json"};
  if (operatorToken()) headers["Authorization"] = "Bearer " + operatorToken();
  const r = await fetch(path, {method: "POST", body: body ? JSON.stringify(body) : "", headers});
  const answer = (await r.text()).split("\n")[0];
  document.getElementById("status").textContent = path + ": " + r.status + " " + answer;
  if (r.status === 401) tokenInput.focus();
  refresh();
}
let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const [policy, agents, approvals, rules] = await Promise.all(
        ["/policy", "/agents", "/approvals", "/rules"].map(p => fetch(p).then(r => r.json())));
    document.getElementById("version").textContent =
        "policy " + String(policy.version || "").slice(0, 12);
    const text = (id, v, none) => {
      document.getElementById(id).textContent = v === null || v === undefined || v === "" ? none
                                                                                           : v;
    };
    text("p-version", policy.version, "");
    text("p-source", policy.source, "");
    text("p-loaded", policy.loaded_at, "");
    text("p-changes", policy.last_changes, "none");
    text("p-error", policy.last_error, "none");
    text("p-ca", policy.ca_fingerprint, "no interception CA");
    fill("pending", approvals.pending, p => {
      const tr = document.createElement("tr");
      tr.dataset.id = p.id;
      cell(tr, p.id);
      cell(tr, p.kind);
      cell(tr, p.agent);
      cell(tr, p.method + " " + p.host + ":" + p.port + (p.path || ""));
      cell(tr, p.rule || "(no rule)");
      cell(tr, p.reason, "reason");
      cell(tr, "", "left");
      const td = cell(tr, "");
      // An access request names a host, not one request: approving it grants the host (any
      // method and path) for the duration, so "once" is not offered for it.
      const scopes = p.kind === "access_request"
                         ? [["agent_host", "grant the host for"], ["permanent", "permanent"]]
                         : [["once", "once"], ["agent_host", "agent_host for"],
                            ["permanent", "permanent"]];
      const scope = choice(td, "scope", scopes, scopes[0][0]);
      const duration = choice(td, "duration",
                              [["10m", "10 min"], ["1h", "1 h"], ["8h", "8 h"], ["24h", "24 h"]],
                              "1h");
      // A held request's grant may be narrowed to its method (agent_host and permanent) and to
      // a path prefix (agent_host): the admin API's `method` and `path_prefix`. A CONNECT or an
      // access request names no method or path a later request could be held to.
      const narrowable = p.kind === "request" && p.method !== "CONNECT";
      const method = narrowable ? choice(td, "method", [["any", "any method"],
                                                        ["same", p.method + " only"]], "any")
                                : null;
      const prefix = narrowable ? document.createElement("input") : null;
      if (prefix) {
        prefix.name = "path_prefix";
        prefix.placeholder = "any path, or a prefix";
        prefix.size = 18;
        td.appendChild(prefix);
      }
      const showNarrowing = () => {
        duration.hidden = scope.value !== "agent_host";
        if (method) method.hidden = scope.value === "once";
        if (prefix) prefix.hidden = scope.value !== "agent_host";
      };
      scope.addEventListener("change", showNarrowing);
      showNarrowing();
      const decision = () => {
        const d = {scope: scope.value};
        if (scope.value === "agent_host") d.duration = duration.value;
        if (method && scope.value !== "once" && method.value === "same") d.method = true;
        if (prefix && scope.value === "agent_host" && prefix.value.trim())
          d.path_prefix = prefix.value.trim();
        return d;
      };
      button(td, "Approve", "approve", () => post("/approvals/" + p.id + "/approve", decision()));
      button(td, "Refuse", "refuse", () => post("/approvals/" + p.id + "/refuse"));
      return tr;
    }, (tr, p) => { tr.querySelector("td.left").textContent = p.seconds_left + " s"; },
    p => p.id);
    fill("agents", agents.agents, a => {
      const tr = document.createElement("tr");
      tr.dataset.agent = a.name;
      cell(tr, a.name);
      // The breaker's suspension shows with its time left.
      cell(tr, a.stopped ? "stopped"
               : a.suspended_seconds_left ? "suspended (breaker), " + a.suspended_seconds_left +
                                                " s left"
                                          : "running",
           a.stopped ? "stopped" : "");
      cell(tr, a.in_flight);
      cell(tr, a.concurrent);
      cell(tr, limitsText(a.limits, a), "limits");
      const b = a.breaker;
      cell(tr, b && b.max_failures ? b.max_failures + " failures in " + b.window_seconds +
                                         " s: " + b.cooldown_seconds + " s off"
                                   : "off");
      const td = cell(tr, "");
      const path = "/agents/" + encodeURIComponent(a.name);
      if (a.stopped) button(td, "Resume", "resume", () => post(path + "/resume"));
      else button(td, "Stop", "stop", () => post(path + "/stop"));
      return tr;
    }, undefined, a => a.name);
    fill("rules", rules.rules, r => {
      const tr = document.createElement("tr");
      tr.dataset.rule = r.name;
      cell(tr, r.in_policy ? r.name : r.name + " (not in the policy)");
      cell(tr, r.hits, "hits");
      for (const d of ["allow", "deny", "report", "error"]) cell(tr, r.by_decision[d] || 0);
      return tr;
    });
    fill("grants", approvals.grants, g => {
      const tr = document.createElement("tr");
      cell(tr, g.id);
      cell(tr, g.agent);
      cell(tr, g.host + ":" + g.port);
      cell(tr, g.method || "any");
      cell(tr, g.path_prefix || "any");
      cell(tr, g.expires === null ? "never" : new Date(g.expires * 1000).toISOString());
      cell(tr, g.by);
      return tr;
    });
    document.getElementById("overlay").textContent = approvals.overlay_diff || "none yet";
  } catch (e) {
    document.getElementById("status").textContent = "admin API unreachable";
  } finally {
    busy = false;
  }
}
// Live decisions: GET /events streams each audit record as it is written (server-sent
// events); the newest 50 are shown, newest first.
const live = document.querySelector("#live tbody");
const liveStatus = document.getElementById("live-status");
function target(r) {
  return r.host ? (r.method || "") + " " + r.host + ":" + r.port + (r.path || "") : "";
}
function addLive(r) {
  const tr = document.createElement("tr");
  cell(tr, String(r.time || "").slice(11, 23));
  cell(tr, r.agent);
  if (r.type) {  // an operator's action or an approval's event
    tr.className = "event";
    cell(tr, r.type + " " + r.action + (r.approval_id ? " #" + r.approval_id : "") + " " +
             target(r));
    cell(tr, r.outcome + (r.scope ? " (" + r.scope + ")" : ""));
    cell(tr, r.by ? "by " + r.by : r.detail, "reason");
  } else {
    cell(tr, target(r));
    cell(tr, r.decision + " " + r.status, r.decision === "allow" ? "" : "stopped");
    cell(tr, r.reason + (r.rule ? " (rule " + r.rule + ")" : ""), "reason");
  }
  live.prepend(tr);
  while (live.children.length > 50) live.lastChild.remove();
}
const events = new EventSource("/events");
events.onopen = () => { liveStatus.textContent = "(live)"; };
events.onmessage = e => {
  try {
    addLive(JSON.parse(e.data));
  } catch (x) {
    // not JSON: nothing to show
  }
};
events.addEventListener("lost", e => {
  liveStatus.textContent = "(" + JSON.parse(e.data).lost + " events lost: too many at once)";
});
events.onerror = () => { liveStatus.textContent = "(reconnecting…)"; };
refresh();
setInterval(refresh, 1000);
</script>
</body></html>
)html";

}  // namespace

std::string_view console_html() noexcept {
  return page;
}

}  // namespace airlock::telemetry
