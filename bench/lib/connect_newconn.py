"""Scenario connect_newconn: new opaque CONNECT tunnels per second (issue 21's goal "opaque
CONNECT tunnels: >= Squid for bulk and for new connections, at less CPU"; scenario `connect`
measures the bulk half).

Each connection of the HTTPS load client (bench/tls_client, mode newconn) opens a CONNECT
tunnel, does a full TLS handshake with the ORIGIN through it, sends one GET /small with
`Connection: close` and waits for the close; 16 at a time, as in tls_newconn. The proxy does
not intercept: the client trusts the origin's CA only, so a proxy that intercepted would fail
every handshake, which checks that the tunnel is opaque. Targets: the origin's TLS port
directly, a plain Squid (CONNECT to any port, no bump) and Airlock with a rule for the origin's
TLS port without `inspect`. The goals are reported in the table, never asserted.
"""

from . import report, tls_scenarios
from .servers import LOOPBACK, Airlock, BenchError, Squid

KEY = "connect_newconn"
# Result names of the targets, in the table's columns (report.table's direct, squid, airlock).
COLUMNS = (("direct", "direct"), ("squid", "squid_tunnel"), ("airlock", "airlock_tunnel"))
PROXIES = ("squid_tunnel", "airlock_tunnel")


class AirlockTunnel(Airlock):
    """Airlock with one rule for the origin's TLS port that does not inspect: `*.bench.test`
    pinned to loopback as in the inspected rule of airlock_tls, but no `inspect: true` (and so
    no `tls:` section, no methods or paths: Airlock relays the tunnel's bytes as they are)."""

    def __init__(self, workdir, binary, origin_tls_port, threads):
        super().__init__(workdir, binary, origin_tls_port, threads, name="airlock_tunnel")

    def policy(self):
        return f"""\
listen: {{proxy: '{LOOPBACK}:0', admin: 'off'}}
audit: {{path: '{self.audit_path}'}}
limits: {{max_connections_per_client: 4096}}
agents: {{default: {{rules: [tunnel]}}}}
rules:
  - name: tunnel
    hosts: ['*.bench.test']
    addresses: [{LOOPBACK}]
    allow_cidrs: [{LOOPBACK}/32]
    ports: [{self.origin_port}]
"""


def make_proxy(name, workdir, airlock_bin, origin, threads):
    """The proxy process of target `name` (one of PROXIES), not started."""
    if name == "squid_tunnel":
        # The plain Squid's settings (CONNECT to any port, no bump, one process), the bench name
        # pinned to the loopback origin as for the ssl-bump Squid: the client asks for
        # `CONNECT www.bench.test:PORT`, and no DNS may be used.
        return Squid(workdir, name="squid_tunnel", hosts=[tls_scenarios.HOST])
    return AirlockTunnel(workdir, airlock_bin, origin.tls_port, threads)


def target(name, origin, proxy, tls):
    """A tls_scenarios.TlsTarget that trusts the origin's CA (not the interception CA)."""
    return tls_scenarios.TlsTarget(name, origin, proxy, tls.origin_ca)


def verify(t, body_size):
    """curl through the tunnel, trusting only the origin's CA, gets /small; and /1m as well,
    which an inspecting Airlock rule of this shape would refuse (airlock_tls allows only
    /small): through an opaque tunnel the proxy cannot see the path."""
    tls_scenarios.verify(t, body_size)
    code, size = tls_scenarios._curl(t, "/1m")
    if code != 200 or size != 1 << 20:
        raise BenchError(f"{t.name}: GET /1m through the tunnel: HTTP {code}, {size} bytes")


def describe(r):
    return (f"{r['requests_per_second']:>9,.0f} conn/s, p50 {r['latency_us']['p50']:,} us, "
            f"p99 {r['latency_us']['p99']:,} us, {r['cpu_us_per_request']} us CPU/conn, "
            f"client {r['client_cpu_share']:.0%} of a core")


def run(bench_run, targets, client, body_size, aggregate):
    """Verifies each target, then measures it (bench.py's Run.scenario: rounds, rotation)."""
    s = bench_run.s
    bench_run.log("== connect_newconn verify: GET /small and /1m over TLS with the origin, "
                  "trusting only the origin's CA (the tunnel must be opaque)")
    for t in targets:
        try:
            verify(t, body_size)
            bench_run.results.setdefault(t.name, {})["tls_verify"] = "ok"
            bench_run.log(f"  {t.name:<14} ok")
        except BenchError as e:
            bench_run.fail(t, "tls_verify", e)
    cn, secs, warm = s["tls_newconn_connections"], s["tls_seconds"], s["tls_warmup_seconds"]
    bench_run.scenario(
        f"(c2) new opaque CONNECT tunnels: TLS with the origin through the tunnel, one GET "
        f"each; {cn} at a time, {secs}s after {warm}s warm-up", KEY, targets,
        lambda t, rnd: tls_scenarios.load(t, client, "newconn", cn, secs, warm,
                                          bench_run.raw(t, KEY, rnd), body_size),
        aggregate, describe)


def rows(results, s):
    """report.rows' shape (direct, squid, airlock, ratios, goal, met), so report.table
    prints them. Rows with no value at all are left out."""
    out = []

    def add(metric, unit, keys, goal="", met=lambda v: None, note=""):
        vals = {col: report._get(results, name, KEY, *keys) for col, name in COLUMNS}
        if all(v is None for v in vals.values()):
            return
        have_both = vals["airlock"] is not None and vals["squid"] is not None
        out.append({
            "metric": metric,
            "unit": unit,
            **vals,
            "airlock_over_squid": report._ratio(vals["airlock"], vals["squid"]),
            "airlock_over_direct": report._ratio(vals["airlock"], vals["direct"]),
            "goal": goal,
            "met": met(vals) if have_both and goal else None,
            "note": note,
        })

    c = s["tls_newconn_connections"]
    add(f"new tunnels: connections/s (c{c})", "conn/s", ("requests_per_second",),
        ">= 1x Squid", lambda v: v["airlock"] >= v["squid"],
        note="TCP + CONNECT + full TLS handshake with the origin (no resumption) + one GET, "
             "per connection; direct column: no proxy")
    add("new tunnels: p50 latency", "us", ("latency_us", "p50"))
    add("new tunnels: p99 latency", "us", ("latency_us", "p99"))
    add("new tunnels: CPU per connection", "us", ("cpu_us_per_request",),
        "< Squid's", lambda v: v["airlock"] < v["squid"],
        note="the proxy process over the recorded window; direct column: the origin (nginx)")
    return out


def notes(results):
    """Lines below the table: the client's own ceiling, and Squid over direct next to the
    issue's reference run (1,075 of 1,733 conn/s)."""
    lines = []
    d = report._get(results, "direct", KEY)
    if d and "client_cpu_share" in d:
        share = d["client_cpu_share"]
        lines.append(f"  the client's own ceiling, direct: it used {share:.0%} of a core"
                     + (" -- the client is the bottleneck, direct is a floor"
                        if share > 0.9 else ""))
    sq = report._get(results, "squid_tunnel", KEY, "requests_per_second")
    dr = report._get(results, "direct", KEY, "requests_per_second")
    if sq and dr:
        lines.append(f"  squid / direct: {sq / dr:.2f}x (the issue saw about 0.62x)")
    return lines


def table(rows_, results):
    return report.table(rows_, notes(results))
