"""Scenarios (h) and (h'): the cost of content inspection (issue 16).

(h) One Airlock instance serves two agents, each with one rule for the same loopback origin:

- `bare` (host bare.test): a rule with no scanning;
- `dlp` (host dlp.test): the same rule with outbound DLP on everything the request carries
  (host name, path, query, header values; every default class plus `high-entropy`, action
  `block`).

Both agents are identified the same way (a Bearer token of the same length) and wrk sends
byte-for-byte the same request to both but for the host name and the token: a GET with a query
string and a header of free text, answered with a 1 KiB plain-text page. The two take turns in
rounds on the same process, so background load hits both alike. Goal (issue 16: "a rule with
DLP on small requests"): dlp/bare requests/s >= 0.9. Response scanning (`responses`) is not
on here: its goal is per MB, measured by (h'); what it adds per small response is in
bench/README.md.

Before the load, verify() shows that the scanner is really on: a cloud key in the query and a
token in a header are refused under `dlp` (403 `dlp_blocked` naming the class) and pass under
`bare`. The secrets are made afresh for each run, shaped as the detectors expect but
belonging to nobody. Around the load, bench.py reads the admin port's metrics: no request of
either agent may be refused.

(h') The scanners alone: bench/dlp (airlock_dlp_bench, built in Release with airlock) times
response prompt-injection scanning on generated HTML-ish text and request secret scanning on
the same text as a JSON body, MB/s per core of the scanning thread. Goal (responses): >= 300.
"""

import hashlib
import http.client
import json
import os
import random
import re
import string
import subprocess
import time

from . import procfs
from .report import median, round_rates
from .scenarios import Target
from .servers import LOOPBACK, Airlock, BenchError

GOAL_RATIO = 0.9  # issue 16: "at >= 0.9x the request rate of the same rule without it"
GOAL_MB_PER_S = 300  # issue 16: "response scanning at >= 300 MB/s per core on text"
PATH = "/article.txt?page=12&q=bench"
NOTE_HEADER = "X-Note"
NOTE = "weekly report for the team, section two"
TOKENS = {"bare": "bench-token-bare-0001", "dlp": "bench-token-dlpx-0001"}
HOSTS = {"bare": "bare.test", "dlp": "dlp.test"}
# Result keys of their own: (f) has an airlock_bare already.
TARGET_NAMES = {"bare": "airlock_nodlp", "dlp": "airlock_dlp"}
TOOL_TIMEOUT_SECONDS = 600


def article():
    """About 1 KiB of ordinary documentation text: what an agent reads most of the time."""
    para = ("Airlock keeps a list of the hosts each agent may reach. A request to any other host "
            "is refused with a short reason, and every decision is written to the audit log. "
            "Operators read the log in their SIEM and watch the request rate in Grafana; the "
            "dashboards ship with the deployment files. ")
    return ("# Release notes\n\n" + para * 3 + "\nSee the operations guide for upgrades.\n"
            ).encode()


def origin_files():
    def write(data):
        def writer(path):
            with open(path, "wb") as f:
                f.write(data)
        return writer
    return {"article.txt": write(article())}


def fresh_secrets():
    """Shapes the detectors know, random each run: never a real credential, never in the tree."""
    rng = random.SystemRandom()
    upper = string.ascii_uppercase + "234567"
    alnum = string.ascii_letters + string.digits
    return {
        "aws-access-key": "AKIA" + "".join(rng.choice(upper) for _ in range(16)),
        "github-token": "ghp_" + "".join(rng.choice(alnum) for _ in range(36)),
    }


class AirlockDlp(Airlock):
    """`airlock proxy` with the two agents and rules above; the admin port is on (for the
    metrics that bench.py reads), the audit log off."""

    def __init__(self, workdir, binary, origin_port, threads):
        super().__init__(workdir, binary, origin_port, threads, name="airlock_inspection")

    def policy(self):
        sha = {a: hashlib.sha256(t.encode()).hexdigest() for a, t in TOKENS.items()}
        pin = (f"addresses: [{LOOPBACK}]\n    allow_cidrs: [{LOOPBACK}/32]\n"
               f"    ports: [{self.origin_port}]")
        return f"""\
listen: {{proxy: '{LOOPBACK}:0', admin: '{LOOPBACK}:0'}}
audit: {{path: 'off'}}
limits: {{max_connections_per_client: 4096}}
agents:
  bare: {{rules: [bare], token_sha256: '{sha["bare"]}'}}
  dlp: {{rules: [dlp], token_sha256: '{sha["dlp"]}'}}
rules:
  - name: bare
    hosts: [{HOSTS["bare"]}]
    {pin}
  - name: dlp
    hosts: [{HOSTS["dlp"]}]
    {pin}
    dlp: {{action: block, entropy: true}}
"""


def headers_for(agent):
    return {"Proxy-Authorization": f"Bearer {TOKENS[agent]}", NOTE_HEADER: NOTE}


def targets(origin, proxy):
    """The two wrk targets: same proxy, same request but for host and token."""
    return [Target(TARGET_NAMES[a], origin, proxy, host=HOSTS[a],
                   headers=[f"{k}: {v}" for k, v in headers_for(a).items()])
            for a in ("bare", "dlp")]


def _request(proxy, origin, agent, path, add=None):
    """One GET through the proxy on a fresh connection: (status, reason, details, body)."""
    headers = {**headers_for(agent), **(add or {})}
    conn = http.client.HTTPConnection(LOOPBACK, proxy.port, timeout=10)
    try:
        conn.request("GET", f"http://{HOSTS[agent]}:{origin.port}{path}", headers=headers)
        r = conn.getresponse()
        body = r.read()
        details = re.search(r'details="((?:[^"\\]|\\.)*)"', r.getheader("Proxy-Status") or "")
        return r.status, r.getheader("X-Airlock-Reason"), details.group(1) if details else "", body
    except (OSError, http.client.HTTPException) as e:
        raise BenchError(f"dlp: GET {HOSTS[agent]}{path}: {e}")
    finally:
        conn.close()


def verify(proxy, origin):
    """Raises BenchError unless the scanner is on for dlp and off for bare. Returns the checks
    made, for the JSON (never a secret: the class names only)."""
    page = article()
    for agent in ("bare", "dlp"):
        status, reason, details, body = _request(proxy, origin, agent, PATH)
        if status != 200 or body != page:
            raise BenchError(f"dlp: the measured request to {agent} got HTTP {status} "
                             f"({reason}: {details}), {len(body)} of {len(page)} bytes")
    checks = [{"check": "the measured request", "bare": 200, "dlp": 200}]
    secrets = fresh_secrets()
    leaks = [("a cloud key in the query", "aws-access-key",
              {"path": f"/article.txt?page=12&q={secrets['aws-access-key']}"}),
             ("a token in a header", "github-token",
              {"path": PATH, "add": {NOTE_HEADER: f"deploy with {secrets['github-token']}"}})]
    for what, cls, kw in leaks:
        status, reason, details, _ = _request(proxy, origin, "dlp", **kw)
        if status != 403 or reason != "dlp_blocked" or cls not in details:
            raise BenchError(f"dlp: {what}: dlp answered HTTP {status} ({reason}: {details!r}); "
                             f"expected 403 dlp_blocked naming {cls}")
        bare_status, bare_reason, _, _ = _request(proxy, origin, "bare", **kw)
        if bare_status != 200:
            raise BenchError(f"dlp: {what}: bare (no scanning) answered HTTP {bare_status} "
                             f"({bare_reason}); expected 200")
        checks.append({"check": what, "bare": bare_status, "dlp": status, "reason": reason,
                       "details": details})
    return checks


def summary(results, settings):
    """The comparison: ratios, per-round ratios and the goal (reported, not asserted); and the
    scanners' own throughput when (h') ran."""
    out = {}
    bare = results.get(TARGET_NAMES["bare"], {}).get("dlp")
    dlp = results.get(TARGET_NAMES["dlp"], {}).get("dlp")
    if bare and dlp and "broken" not in bare and "broken" not in dlp:
        ratio = dlp["requests_per_second"] / bare["requests_per_second"]
        out["requests"] = {
            "bare_requests_per_second": bare["requests_per_second"],
            "dlp_requests_per_second": dlp["requests_per_second"],
            "ratio": round(ratio, 4),
            "round_ratios": [round(d / b, 4) for b, d in
                             zip(round_rates(bare), round_rates(dlp)) if b],
            "bare_cpu_us_per_request": bare["cpu_us_per_request"],
            "dlp_cpu_us_per_request": dlp["cpu_us_per_request"],
            "cpu_ratio": round(bare["cpu_us_per_request"] / dlp["cpu_us_per_request"], 4),
            "bare_latency_us": bare["latency_us"],
            "dlp_latency_us": dlp["latency_us"],
            "goal": f"dlp/bare requests/s >= {GOAL_RATIO}",
            "met": ratio >= GOAL_RATIO,
            "rounds": settings["dlp_rounds"],
            "seconds_per_run": settings["dlp_seconds"],
            "connections": settings["small_connections"],
        }
    tool = results.get("airlock_dlp_scanners", {}).get("dlp_throughput")
    if tool and "broken" not in tool:
        out["throughput"] = {
            **tool,
            "goal": f"responses >= {GOAL_MB_PER_S} MB/s per core",
            "met": tool["response_mb_per_s_per_core"] >= GOAL_MB_PER_S,
        }
    return out or None


def _grid(head, rows, left):
    widths = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]

    def line(cells):
        return "  ".join(c.ljust(widths[i]) if i in left else c.rjust(widths[i])
                         for i, c in enumerate(cells)).rstrip()

    return [line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]


def table(s):
    out = []
    m = s.get("requests")
    if m:
        lat_b, lat_d = m["bare_latency_us"], m["dlp_latency_us"]
        cpu_b, cpu_d = m["bare_cpu_us_per_request"], m["dlp_cpu_us_per_request"]
        rows = [
            ("requests/s", f"{m['bare_requests_per_second']:,.0f}",
             f"{m['dlp_requests_per_second']:,.0f}", f"{m['ratio']:.3f}x",
             f">= {GOAL_RATIO}x", "yes" if m["met"] else "NO"),
            ("airlock CPU per request [us]", f"{cpu_b:.1f}", f"{cpu_d:.1f}",
             f"{cpu_d / cpu_b:.3f}x ({cpu_d - cpu_b:+.1f} us)", "", ""),
            ("p50 latency [us]", f"{round(lat_b['p50']):,}", f"{round(lat_d['p50']):,}",
             f"{lat_d['p50'] - lat_b['p50']:+,.0f} us", "", ""),
            ("p99 latency [us]", f"{round(lat_b['p99']):,}", f"{round(lat_d['p99']):,}",
             f"{lat_d['p99'] - lat_b['p99']:+,.0f} us", "", ""),
        ]
        out += _grid(("metric", "bare rule", "DLP rule", "dlp/bare", "goal", "met"), rows,
                     (0, 4, 5))
        out.append("")
        rr = m["round_ratios"]
        if len(rr) > 1:
            out.append(f"  requests/s ratio per round: {min(rr):.3f}-{max(rr):.3f}, median "
                       f"{median(rr):.3f}")
        out.append(f"  by airlock's CPU alone (bare CPU / dlp CPU per request): "
                   f"{m['cpu_ratio']:.3f}x")
    t = s.get("throughput")
    if t:
        if out:
            out.append("")
        rows = [("responses: prompt injection", f"{t['body_mib']:.0f}",
                 f"{t['response_mb_per_s_per_core']:,.0f}", f">= {GOAL_MB_PER_S}",
                 "yes" if t["met"] else "NO"),
                ("requests: secrets in a JSON body", f"{t['body_mib']:.0f}",
                 f"{t['request_mb_per_s_per_core']:,.0f}", "", "")]
        out += _grid(("scanner (bench/dlp, one thread)", "MiB", "MB/s/core", "goal", "met"),
                     rows, (0, 3, 4))
        out.append(f"  median of {t['repeat']} passes; others used "
                   f"{t['other_processes_machine_share']:.0%} of the machine meanwhile")
    return "\n".join(out)


def run_tool(binary, mib, repeat, raw_path):
    """(h'): one run of airlock_dlp_bench; its JSON plus how busy the machine was meanwhile.
    Broken when the tool fails or does not find the one injection it planted."""
    cmd = [binary, "--mib", str(mib), "--repeat", str(repeat), "--json"]
    busy0, ours0, t0 = procfs.machine_busy_seconds(), procfs.children_cpu_seconds(), time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{' '.join(cmd)}: no answer in {TOOL_TIMEOUT_SECONDS} s")
    except OSError as e:
        raise BenchError(f"cannot run {binary}: {e}")
    wall = time.monotonic() - t0
    foreign = max(0.0, procfs.machine_busy_seconds() - busy0 - (procfs.children_cpu_seconds() - ours0))
    with open(raw_path, "w") as f:
        f.write(f"$ {' '.join(cmd)}\nexit {p.returncode}\n{p.stdout}{p.stderr}")
    try:
        r = json.loads(p.stdout)
    except ValueError:
        raise BenchError(f"exit {p.returncode}, no JSON on stdout: {(p.stderr or p.stdout)[-300:]}")
    if p.returncode != 0 or r.get("injections_found") != 1:
        raise BenchError(f"exit {p.returncode}: found {r.get('injections_found')} of the 1 "
                         "planted injection")
    return {
        "command": cmd,
        "body_mib": round(r["body_bytes"] / (1 << 20), 1),
        "repeat": r["repeat"],
        "response_mb_per_s_per_core": round(r["response_mb_per_s_per_core"], 1),
        "request_mb_per_s_per_core": round(r["request_mb_per_s_per_core"], 1),
        "run_wall_seconds": round(wall, 2),
        "other_processes_machine_share": round(foreign / (wall * os.cpu_count()), 3),
    }
