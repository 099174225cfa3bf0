"""Scenario (g): the request-rate cost of credential injection and response redaction (issue 5).

One Airlock instance (`airlock_credentials`) has one agent with two rules for the same loopback
origin:

- `bare` (host bare.test): no inject, no redact;
- `cred` (host cred.test): `inject: {headers: {Authorization: 'Bearer ${secrets.api}'}}` and
  `redact: [email, aws-access-key]`. The secret `api` comes from an environment variable that
  is set for the proxy process only (never in the benchmark's own environment), is bound to
  cred.test, and is made afresh for every run.

wrk sends byte-for-byte the same request to both but for the host name. Two bodies are measured:

- /small (97 bytes, application/octet-stream): injection and the redaction of the response's
  header values; the body is binary, so it passes untouched and keeps its Content-Length;
- /small.json (JSON_BODY, application/json, nothing in it to redact): the same, plus a body
  that streams through the redaction engine and comes back re-framed chunked.

Before the load, verify() shows that injection and redaction are really on: the origin (its
echo.log, written by nginx, not a response that could itself be redacted) receives the
injected Authorization on cred.test in place of the agent's own, and the agent's own (or none)
on bare.test; a JSON body that holds the secret, an e-mail address and an AWS access key comes
back from cred.test with all three replaced and chunked, and byte-identical from bare.test;
the admin port's airlock_redactions_total counts those redactions under `cred` and none under
`bare`; and the proxy's logs hold no trace of the secret. Around the load, bench.py reads
airlock_requests_total: no request of either rule may be refused while measuring.
"""

import http.client
import json
import os
import re
import urllib.request

from .report import median, round_rates
from .scenarios import Target
from .servers import LOOPBACK, Airlock, BenchError

GOAL_RATIO = 0.9  # cred/bare requests/s: a goal, reported, never asserted
SECRET_NAME = "api"
SECRET_ENV = "AIRLOCK_BENCH_API_KEY"
HOSTS = {"bare": "bare.test", "cred": "cred.test"}
REDACTORS = ("email", "aws-access-key")
SMALL_PATH = "/small"
JSON_PATH = "/small.json"
LEAK_PATH = "/leak.json"
ECHO_PATH = "/__echo"
# What an agent might send on its own: the cred rule must replace it, the bare rule pass it.
AGENT_AUTHORIZATION = "Bearer agent-own-credential-0001"
# Fake, but of the shape the redactors look for (an AWS key ID is AKIA + 16 of [A-Z0-9]).
LEAK_EMAIL = "jane.doe@example.com"
LEAK_AWS_KEY = "AKIAIOSFODNN7BENCH01"


def _json_body():
    """A small API-like JSON answer with nothing a redactor would match (no '@', no AKIA, no
    long digit runs): every byte is scanned, none replaced."""
    doc = {
        "object": "list",
        "model": "bench-model-small",
        "data": [{"id": f"item-{i:03d}", "kind": "record", "score": i * 7 % 100,
                  "label": f"entry number {i} of the benchmark list"} for i in range(4)],
        "usage": {"input_units": 12, "output_units": 34},
        "note": "a small JSON response body for the credentials benchmark",
    }
    return (json.dumps(doc, separators=(", ", ": ")) + "\n").encode()


JSON_BODY = _json_body()


def new_secret():
    """A fresh value per run (41 printable bytes, no prefix a built-in redactor knows)."""
    return "sk-bench-" + os.urandom(16).hex()


def origin_files(secret):
    """The files the origin serves for this scenario (name -> writer, as bench.py's)."""
    def write(data):
        def writer(path):
            with open(path, "wb") as f:
                f.write(data)
        return writer
    return {JSON_PATH[1:]: write(JSON_BODY), LEAK_PATH[1:]: write(leak_body(secret))}


def leak_body(secret):
    """What an upstream might send back by mistake: the key echoed in an error, an e-mail
    address, an AWS access key ID."""
    return (json.dumps({
        "error": {"message": f"invalid key {secret} for this project",
                  "owner": LEAK_EMAIL, "aws_access_key_id": LEAK_AWS_KEY}}) + "\n").encode()


class AirlockCredentials(Airlock):
    """`airlock proxy` with the two rules above; the admin port is on (for the metrics that
    verify() and the load checks read), the audit log off. The secret is in the environment of
    this process only."""

    def __init__(self, workdir, binary, origin_port, threads, secret):
        super().__init__(workdir, binary, origin_port, threads, name="airlock_credentials")
        self.secret = secret
        self.env = dict(os.environ, **{SECRET_ENV: secret})

    def policy(self):
        pin = (f"addresses: [{LOOPBACK}]\n    allow_cidrs: [{LOOPBACK}/32]\n"
               f"    ports: [{self.origin_port}]")
        return f"""\
listen: {{proxy: '{LOOPBACK}:0', admin: '{LOOPBACK}:0'}}
audit: {{path: 'off'}}
limits: {{max_connections_per_client: 4096}}
secrets:
  {SECRET_NAME}: {{env: {SECRET_ENV}, hosts: [{HOSTS["cred"]}]}}
agents: {{default: {{rules: [bare, cred]}}}}
rules:
  - name: bare
    hosts: [{HOSTS["bare"]}]
    {pin}
  - name: cred
    hosts: [{HOSTS["cred"]}]
    {pin}
    inject:
      headers: {{Authorization: 'Bearer ${{secrets.{SECRET_NAME}}}'}}
    redact: [{", ".join(REDACTORS)}]
"""


def targets(origin, proxy):
    """The two wrk targets: same proxy, same request but for the host."""
    return [Target(f"airlock_{'nocred' if r == 'bare' else 'cred'}", origin, proxy,
                   host=HOSTS[r]) for r in ("bare", "cred")]


def _request(proxy, origin, rule, path, headers=None):
    """One GET through the proxy on a fresh connection: (status, {lower name: value}, body)."""
    conn = http.client.HTTPConnection(LOOPBACK, proxy.port, timeout=10)
    try:
        conn.request("GET", f"http://{HOSTS[rule]}:{origin.port}{path}", headers=headers or {})
        r = conn.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    except (OSError, http.client.HTTPException) as e:
        raise BenchError(f"credentials: GET {HOSTS[rule]}{path}: {e}")
    finally:
        conn.close()


def _framing(headers):
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return "chunked"
    return "length" if "content-length" in headers else "none"


def _echoed(proxy, origin, rule, headers):
    """Sends GET /__echo via `rule` and returns (the Authorization the origin logged, "-" for
    none; the response body)."""
    before = len(origin.echo_lines())
    status, _, body = _request(proxy, origin, rule, ECHO_PATH, headers)
    lines = origin.echo_lines()[before:]
    host = f"{HOSTS[rule]}:{origin.port}"
    mine = [auth for h, auth in lines if h == host]
    if status != 200 or len(mine) != 1:
        raise BenchError(f"credentials: GET {host}{ECHO_PATH}: HTTP {status}, the origin logged "
                         f"{len(mine)} requests for that host (expected 1)")
    return mine[0], body


def verify(proxy, origin, small_size):
    """Raises BenchError unless injection and redaction are on for cred and off for bare.
    Returns the checks made, for the JSON (never the secret itself)."""
    secret = proxy.secret
    injected = f"Bearer {secret}"
    checks = []

    # 1. The origin receives the injected Authorization on cred, whatever the agent sent.
    for agent_sent in (None, AGENT_AUTHORIZATION):
        hdrs = {"Authorization": agent_sent} if agent_sent else {}
        what = "agent sends its own" if agent_sent else "agent sends none"
        got, body = _echoed(proxy, origin, "cred", hdrs)
        if got != injected:
            raise BenchError(f"credentials: cred, {what}: the origin received Authorization "
                             f"{_describe(got, secret)}, not the injected 'Bearer <secret>'")
        if secret.encode() in body or f"[REDACTED:secret:{SECRET_NAME}]".encode() not in body:
            raise BenchError(f"credentials: cred, {what}: the origin's echo of the injected "
                             f"Authorization came back unredacted: {_scrub(body, secret)!r}")
        got_bare, body_bare = _echoed(proxy, origin, "bare", hdrs)
        want_bare = agent_sent or "-"
        if got_bare != want_bare or secret in got_bare:
            raise BenchError(f"credentials: bare, {what}: the origin received Authorization "
                             f"{_describe(got_bare, secret)}, expected {want_bare!r}")
        if agent_sent and agent_sent.encode() not in body_bare:
            raise BenchError(f"credentials: bare, {what}: the echo did not come back as sent: "
                             f"{body_bare!r}")
        checks.append({"check": f"origin's Authorization ({what})",
                       "bare": "none" if want_bare == "-" else "the agent's",
                       "cred": "injected (echo redacted)"})

    # 2. A body holding the secret, an e-mail address and an AWS key comes back redacted.
    leak = leak_body(secret)
    status, hdrs, body = _request(proxy, origin, "cred", LEAK_PATH)
    markers = [f"[REDACTED:secret:{SECRET_NAME}]"] + [f"[REDACTED:{r}]" for r in REDACTORS]
    left = [w for w, v in (("secret", secret), ("e-mail", LEAK_EMAIL), ("AWS key", LEAK_AWS_KEY))
            if v.encode() in body]
    missing = [m for m in markers if m.encode() not in body]
    if status != 200 or left or missing or _framing(hdrs) != "chunked":
        raise BenchError(f"credentials: cred {LEAK_PATH}: HTTP {status}, {_framing(hdrs)}, "
                         f"still holds {left or 'nothing'}, lacks {missing or 'nothing'}: "
                         f"{_scrub(body, secret)!r}")
    status_b, hdrs_b, body_b = _request(proxy, origin, "bare", LEAK_PATH)
    if status_b != 200 or body_b != leak or _framing(hdrs_b) != "length":
        raise BenchError(f"credentials: bare {LEAK_PATH}: HTTP {status_b}, {_framing(hdrs_b)}, "
                         f"body {'identical' if body_b == leak else 'changed'} "
                         f"(expected 200, Content-Length, identical)")
    checks.append({"check": f"{LEAK_PATH}: secret, e-mail, AWS key",
                   "bare": "identical, Content-Length",
                   "cred": f"{', '.join(markers)}, chunked"})

    # 3. The measured requests: the origin's bytes from both, framed as the README says.
    for path, size, cred_framing in ((SMALL_PATH, small_size, "length"),
                                     (JSON_PATH, len(JSON_BODY), "chunked")):
        framings = {}
        for rule in ("bare", "cred"):
            status, hdrs, body = _request(proxy, origin, rule, path)
            if status != 200 or len(body) != size or (path == JSON_PATH and body != JSON_BODY):
                raise BenchError(f"credentials: the measured request {path} via {rule} got HTTP "
                                 f"{status}, {len(body)} of {size} bytes")
            framings[rule] = _framing(hdrs)
        if framings != {"bare": "length", "cred": cred_framing}:
            raise BenchError(f"credentials: {path}: framing {framings}, expected bare length, "
                             f"cred {cred_framing}")
        checks.append({"check": f"the measured request {path}",
                       "bare": f"200, {size} bytes, Content-Length",
                       "cred": f"200, {size} bytes, "
                               + ("chunked" if cred_framing == "chunked" else "Content-Length")})

    # 4. The proxy's own count of what it redacted, by rule.
    counts = redaction_counts(proxy)
    cred_counts = {r: n for (rule, r), n in counts.items() if rule == "cred" and n > 0}
    bare_counts = {r: n for (rule, r), n in counts.items() if rule == "bare" and n > 0}
    want = [f"secret:{SECRET_NAME}"] + list(REDACTORS)
    if bare_counts or any(cred_counts.get(r, 0) < 1 for r in want):
        raise BenchError(f"credentials: airlock_redactions_total: cred {cred_counts}, bare "
                         f"{bare_counts}; expected {want} under cred and nothing under bare")
    checks.append({"check": "airlock_redactions_total", "bare": "none",
                   "cred": ", ".join(f"{r} {cred_counts[r]:.0f}" for r in want)})
    check_logs(proxy)
    checks.append({"check": "proxy logs hold no secret", "bare": "-", "cred": "none"})
    return checks


def check_logs(proxy):
    """Raises BenchError when the proxy wrote the secret's value to its stdout or stderr."""
    for name in ("stderr.log", "stdout.log"):
        try:
            with open(os.path.join(proxy.dir, name), "rb") as f:
                if proxy.secret.encode() in f.read():
                    raise BenchError(f"credentials: the secret's value is in airlock's {name}")
        except OSError:
            pass


def _describe(value, secret):
    if value == "-":
        return "none"
    return repr(_scrub(value, secret))


def _scrub(text, secret):
    """Never print the secret, even in a failure message."""
    if isinstance(text, bytes):
        return text.replace(secret.encode(), b"<secret>")
    return text.replace(secret, "<secret>")


def _admin_get(proxy, path):
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                f"http://{LOOPBACK}:{proxy.admin_port}{path}", timeout=5) as r:
            return r.read().decode()
    except OSError as e:
        raise BenchError(f"credentials: admin {path}: {e}")


def _series(proxy, metric):
    """[(labels, value)] of one counter from the admin port's /metrics."""
    pattern = re.compile(r"^" + re.escape(metric) + r"\{([^}]*)\} ([0-9.eE+-]+)$")
    out = []
    for line in _admin_get(proxy, "/metrics").splitlines():
        m = pattern.match(line)
        if m:
            out.append((dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1))),
                        float(m.group(2))))
    return out


def redaction_counts(proxy):
    """airlock_redactions_total as {(rule, redactor): count}."""
    out = {}
    for labels, v in _series(proxy, "airlock_redactions_total"):
        key = (labels.get("rule"), labels.get("redactor"))
        out[key] = out.get(key, 0) + v
    return out


def request_counts(proxy):
    """airlock_requests_total as {(rule, decision, reason): count}."""
    out = {}
    for labels, v in _series(proxy, "airlock_requests_total"):
        key = (labels.get("rule"), labels.get("decision"), labels.get("reason"))
        out[key] = out.get(key, 0) + v
    return out


def growth(before, after):
    """(allowed requests per rule, {(rule, decision, reason): count} of every other series that
    grew) between two request_counts()."""
    allowed, other = {}, {}
    for key, n in after.items():
        d = n - before.get(key, 0)
        if d <= 0:
            continue
        if key[1] == "allow":
            allowed[key[0]] = allowed.get(key[0], 0) + d
        else:
            other[key] = d
    return allowed, other


# (results key, row label): the two measured bodies.
LOADS = (("credentials", f"{SMALL_PATH} (97 B, binary: passes as is)"),
         ("credentials_json", f"{JSON_PATH} ({len(JSON_BODY)} B JSON: redacted, chunked)"))


def summary(results, settings):
    """Per body: requests/s, CPU per request, latency, the ratios and the goal (reported, not
    asserted). None when nothing was measured."""
    out = {}
    for key, label in LOADS:
        bare = results.get("airlock_nocred", {}).get(key)
        cred = results.get("airlock_cred", {}).get(key)
        if not bare or not cred or "broken" in bare or "broken" in cred:
            continue
        ratio = cred["requests_per_second"] / bare["requests_per_second"]
        out[key] = {
            "body": label,
            "bare_requests_per_second": bare["requests_per_second"],
            "cred_requests_per_second": cred["requests_per_second"],
            "ratio": round(ratio, 4),
            "round_ratios": [round(c / b, 4) for b, c in
                             zip(round_rates(bare), round_rates(cred)) if b],
            "bare_cpu_us_per_request": bare["cpu_us_per_request"],
            "cred_cpu_us_per_request": cred["cpu_us_per_request"],
            # What cred/bare req/s would be if airlock's CPU alone set the pace.
            "cpu_ratio": round(bare["cpu_us_per_request"] / cred["cpu_us_per_request"], 4),
            "bare_latency_us": bare["latency_us"],
            "cred_latency_us": cred["latency_us"],
            "bare_bytes_per_response": bare["bytes_per_response"],
            "cred_bytes_per_response": cred["bytes_per_response"],
            "goal": f"cred/bare requests/s >= {GOAL_RATIO}",
            "met": ratio >= GOAL_RATIO,
        }
    if not out:
        return None
    out["rounds"] = settings["credentials_rounds"]
    out["seconds_per_run"] = settings["credentials_seconds"]
    out["connections"] = settings["small_connections"]
    return out


def table(s):
    def us(v):
        return f"{round(v):,}"

    rows = []
    for key, _ in LOADS:
        m = s.get(key)
        if not m:
            continue
        lat_b, lat_c = m["bare_latency_us"], m["cred_latency_us"]
        cpu_b, cpu_c = m["bare_cpu_us_per_request"], m["cred_cpu_us_per_request"]
        rows += [
            (m["body"], "", "", "", "", ""),
            ("  requests/s", f"{m['bare_requests_per_second']:,.0f}",
             f"{m['cred_requests_per_second']:,.0f}", f"{m['ratio']:.3f}x",
             f">= {GOAL_RATIO}x", "yes" if m["met"] else "NO"),
            ("  airlock CPU per request [us]", f"{cpu_b:.1f}", f"{cpu_c:.1f}",
             f"{cpu_c / cpu_b:.3f}x ({cpu_c - cpu_b:+.1f} us)", "", ""),
            ("  p50 latency [us]", us(lat_b["p50"]), us(lat_c["p50"]),
             f"{lat_c['p50'] - lat_b['p50']:+,.0f} us", "", ""),
            ("  p99 latency [us]", us(lat_b["p99"]), us(lat_c["p99"]),
             f"{lat_c['p99'] - lat_b['p99']:+,.0f} us", "", ""),
            ("  bytes per response (wrk)", f"{m['bare_bytes_per_response']:,.0f}",
             f"{m['cred_bytes_per_response']:,.0f}", "", "", ""),
        ]
    head = ("metric", "bare rule", "inject+redact", "cred/bare", "goal", "met")
    widths = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]

    def line(cells):
        return "  ".join(c.ljust(widths[i]) if i in (0, 4, 5) else c.rjust(widths[i])
                         for i, c in enumerate(cells)).rstrip()

    out = [line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
    out.append("")
    for key, label in LOADS:
        m = s.get(key)
        if not m:
            continue
        rr = m["round_ratios"]
        spread = (f"requests/s ratio per round {min(rr):.3f}-{max(rr):.3f}, median "
                  f"{median(rr):.3f}; " if len(rr) > 1 else "")
        out.append(f"  {label.split(' ')[0]}: {spread}by airlock's CPU alone (bare CPU / cred "
                   f"CPU per request): {m['cpu_ratio']:.3f}x")
    return "\n".join(out)
