#!/usr/bin/python3
"""Airlock benchmark: direct-to-origin vs Squid vs Airlock on loopback, in one run; the cost
of request controls (a rule with rate limits and validation vs a rule with neither); the cost
of credential injection and response redaction (a rule with inject and redact vs one without);
the cost of shared state (a rate-limited rule with `state: redis` vs `state: local`); the cost
of content inspection (a rule with DLP and response scanning vs one without) and the scanners'
own throughput; the throughput of the redaction engine itself (MB/s per core on a 100 MiB JSON body); and HTTPS
inspection: direct vs Squid ssl-bump vs mitmproxy vs Airlock.

Usually started by bench/run.sh, which installs the tools and builds airlock, the redaction
benchmark tool and the HTTPS client. See bench/README.md for what each scenario measures and
how to read the tables.

Exit status: 0 when every scenario ran cleanly (goals met or not), 1 when a scenario is
broken (errors, wrong answers, a server died), 2 on bad usage.
"""

import os
import resource
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lib import cli, controls, credentials, dlp, procfs, redaction, scenarios  # noqa: E402
from lib import connect_newconn, printout, shared_state  # noqa: E402
from lib import tls_scenarios  # noqa: E402
from lib.servers import Airlock, BenchError, Mitmproxy, Origin, Squid, SquidBump  # noqa: E402
from lib.tls_certs import DOMAIN, TlsFiles  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
SMALL_BODY = b"airlock bench: a small keep-alive response body of about one hundred bytes.\n" \
             b"0123456789abcdef0123\n"
BIG_SIZE = 512 * MIB


def write_small(path):
    with open(path, "wb") as f:
        f.write(SMALL_BODY)


def write_random(size):
    def writer(path):
        block = os.urandom(MIB)  # incompressible, in case anything on the path compresses
        with open(path, "wb") as f:
            for _ in range(size // MIB):
                f.write(block)
    return writer


def settings_for(args):
    s = {
        "rounds": args.rounds,
        "wrk_threads": 1,
        "small_connections": 32,
        "small_seconds": 5,
        "small_c1_seconds": 3,
        # (a2) 4 connections: issue 21's p99 goal, and the CPU per request (a3) is held to.
        "small_c4_seconds": 3,
        # (a3) many connections (--connections N): rate, p99 and CPU per request under load.
        "many_connections": args.connections,
        "many_seconds": 5,
        "large_connections": 8,
        "large_seconds": 4,
        "connect_seconds": 3,
        "idle_connections": 1000,
        # (f) request controls: short runs alternating between the two rules, many rounds.
        "controls_rounds": 10,
        "controls_seconds": 3,
        # (g) credentials: the same, for two bodies (small binary, small JSON) in turn.
        "credentials_rounds": 6,
        "credentials_seconds": 3,
        # (s) shared state: the same, `state: local` vs `state: redis`.
        "shared_state_rounds": 10,
        "shared_state_seconds": 3,
        # (h) content inspection: the same as (f); (h') the scanners alone, like (r).
        "dlp_rounds": 10,
        "dlp_seconds": 3,
        "dlp_mib": 32,
        "dlp_repeat": 3,
        # (r) redaction throughput: one body of this size, timed passes over it.
        "redaction_mib": 100,
        "redaction_repeat": 3,
        "warmup_seconds": 1,
        "airlock_threads": args.threads,
        "tls_keepalive_connections": 32,
        "tls_newconn_connections": 16,
        "tls_seconds": 5,
        "tls_warmup_seconds": 1,
        # Names for (t3), two connections each, one at a time: mitmproxy takes ~50 ms a pair.
        "tls_mint_names": 80,
    }
    if args.quick:
        s.update(rounds=1, small_seconds=2, small_c1_seconds=2, small_c4_seconds=2,
                 many_seconds=2, large_seconds=2,
                 connect_seconds=2, idle_connections=200, controls_rounds=6,
                 controls_seconds=2, credentials_rounds=4, credentials_seconds=2,
                 shared_state_rounds=4, shared_state_seconds=2, dlp_rounds=6, dlp_seconds=2,
                 dlp_mib=8, dlp_repeat=2,
                 redaction_mib=16, redaction_repeat=2, tls_seconds=2,
                 tls_warmup_seconds=0.5, tls_mint_names=30)
    return s



def _median(values):
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def aggregate_wrk(rounds):
    """Sums counts and CPU over rounds; latency percentiles are the median over rounds."""
    if len(rounds) == 1:
        return dict(rounds[0])
    out = {k: sum(r[k] for r in rounds) for k in
           ("requests", "bytes", "origin_hits", "cpu_seconds", "origin_cpu_seconds")}
    secs = sum(r["seconds"] for r in rounds)
    n = out["requests"]
    out.update(
        seconds=round(secs, 3),
        requests_per_second=round(n / secs, 1),
        megabytes_per_second=round(out["bytes"] / secs / 1e6, 1),
        latency_us={k: _median([r["latency_us"][k] for r in rounds])
                    for k in rounds[0]["latency_us"]},
        errors={k: sum(r["errors"][k] for r in rounds) for k in rounds[0]["errors"]},
        cpu_us_per_request=round(out["cpu_seconds"] * 1e6 / n, 1),
        origin_cpu_us_per_request=round(out["origin_cpu_seconds"] * 1e6 / n, 1),
        bytes_per_response=round(out["bytes"] / n, 1),
        cpu_seconds_per_gib=round(out["cpu_seconds"] / (out["bytes"] / 2**30), 3),
        connections=rounds[0]["connections"],
        wrk=rounds[0]["wrk"],
        rounds=[{k: r[k] for k in ("requests_per_second", "megabytes_per_second", "latency_us",
                                   "cpu_us_per_request")} for r in rounds],
    )
    out["cpu_seconds"] = round(out["cpu_seconds"], 3)
    out["origin_cpu_seconds"] = round(out["origin_cpu_seconds"], 3)
    return out


def aggregate_connect(rounds):
    if len(rounds) == 1:
        return dict(rounds[0])
    out = {k: sum(r[k] for r in rounds) for k in
           ("fetches", "complete_fetches", "bytes", "seconds", "cpu_seconds")}
    out.update(
        seconds=round(out["seconds"], 3),
        cpu_seconds=round(out["cpu_seconds"], 3),
        megabytes_per_second=round(out["bytes"] / out["seconds"] / 1e6, 1),
        cpu_seconds_per_gib=round(out["cpu_seconds"] / (out["bytes"] / 2**30), 3),
        rounds=[r["megabytes_per_second"] for r in rounds],
    )
    return out


def aggregate_tls(rounds):
    """Sums counts and CPU over rounds; latency percentiles are the median over rounds."""
    if len(rounds) == 1:
        return dict(rounds[0])
    out = {k: sum(r[k] for r in rounds) for k in
           ("requests", "seconds", "connections_opened", "origin_hits", "cpu_seconds",
            "origin_cpu_seconds", "client_cpu_seconds")}
    n, secs = out["requests"], out["seconds"]
    out.update(
        seconds=round(secs, 3),
        requests_per_second=round(n / secs, 1),
        latency_us={k: _median([r["latency_us"][k] for r in rounds])
                    for k in rounds[0]["latency_us"]},
        errors={k: sum(r["errors"][k] for r in rounds) for k in rounds[0]["errors"]},
        cpu_us_per_request=round(out["cpu_seconds"] * 1e6 / n, 1),
        client_cpu_share=round(out["client_cpu_seconds"] / secs, 3),
        rounds=[{k: r[k] for k in ("requests_per_second", "latency_us", "cpu_us_per_request",
                                   "client_cpu_share")} for r in rounds],
    )
    if rounds[0].get("handshake_us"):
        out["handshake_us"] = {k: _median([r["handshake_us"][k] for r in rounds])
                               for k in rounds[0]["handshake_us"]}
    for k in ("cpu_seconds", "origin_cpu_seconds", "client_cpu_seconds"):
        out[k] = round(out[k], 3)
    return out


class Run:
    """Runs the scenarios scenario by scenario, each target in turn (the starting target
    rotates every round), so that all targets are measured in the same stretch of time: a
    build starting in the background then hurts all of them alike, not the last one."""

    def __init__(self, args):
        self.args = args
        self.s = settings_for(args)
        self.wanted = set(args.scenarios)
        self.results = {}
        self.broken = []
        self.raw_dir = os.path.join(args.results_dir, "raw")
        os.makedirs(self.raw_dir, exist_ok=True)
        for old in os.listdir(self.raw_dir):
            os.remove(os.path.join(self.raw_dir, old))

    def log(self, msg):
        print(msg, flush=True)

    def fail(self, target, key, error):
        self.log(f"  BROKEN {target.name}/{key}: {error}")
        self.broken.append({"target": target.name, "scenario": key, "error": str(error)})
        self.results.setdefault(target.name, {})[key] = {"broken": str(error)}

    def ok(self, target, key):
        """False once the target is broken in `key` or could not be verified."""
        res = self.results.get(target.name, {})
        verify = "tls_verify" if key.startswith("tls_") or key == connect_newconn.KEY \
            else "verify"
        return "broken" not in res.get(verify, {}) and "broken" not in res.get(key, {})

    def raw(self, target, key, rnd=None):
        suffix = "" if rnd is None else f"-{rnd + 1}"
        return os.path.join(self.raw_dir, f"{target.name}-{key}{suffix}.txt")

    def scenario(self, title, key, targets, fn, aggregate, describe, rounds=None):
        """Runs fn(target, round) for every target and round, then aggregates per target."""
        if key not in self.wanted:
            return
        rounds = self.s["rounds"] if rounds is None else rounds
        self.log(f"== {title}")
        per_target = {t.name: [] for t in targets}
        for rnd in range(rounds):
            order = targets[rnd % len(targets):] + targets[:rnd % len(targets)]
            for t in order:
                if not self.ok(t, key):
                    continue
                try:
                    r = fn(t, rnd)
                except BenchError as e:
                    self.fail(t, key, e)
                    continue
                per_target[t.name].append(r)
                tag = f" (round {rnd + 1}/{rounds})" if rounds > 1 else ""
                self.log(f"  {t.name:<14} {describe(r)}{tag}")
        for t in targets:
            if per_target[t.name] and self.ok(t, key):
                self.results.setdefault(t.name, {})[key] = aggregate(per_target[t.name])

    def run(self, targets):
        """The plain scenarios (those of --scenarios)."""
        s = self.s
        wanted = self.wanted
        files = {"/small": len(SMALL_BODY), "/1m": MIB}
        self.log("== verify: each target returns the origin's bytes (GET and CONNECT)")
        for t in targets:
            try:
                scenarios.verify(t, files)
                self.results.setdefault(t.name, {})["verify"] = "ok"
                self.log(f"  {t.name:<14} ok")
            except BenchError as e:
                self.fail(t, "verify", e)
        # Warm-up: fills upstream pools and lets each proxy allocate what it keeps.
        for t in targets:
            if self.ok(t, "small") and {"small", "small_c1", "small_c4", "small_many"} & wanted:
                try:
                    scenarios.wrk(t, "/small", s["wrk_threads"], s["small_connections"],
                                  s["warmup_seconds"], self.raw(t, "warmup"), len(SMALL_BODY))
                except BenchError as e:
                    self.log(f"  warm-up of {t.name} failed: {e}")

        def lat(r):
            return f"p50 {r['latency_us']['p50']:,} us, p99 {r['latency_us']['p99']:,} us"

        c = s["small_connections"]
        self.scenario(
            f"(a) small keep-alive requests: wrk -t{s['wrk_threads']} -c{c} "
            f"-d{s['small_seconds']}s", "small", targets,
            lambda t, rnd: scenarios.wrk(t, "/small", s["wrk_threads"], c, s["small_seconds"],
                                         self.raw(t, "small", rnd), len(SMALL_BODY)),
            aggregate_wrk,
            lambda r: f"{r['requests_per_second']:>9,.0f} req/s, {lat(r)}, "
                      f"{r['cpu_us_per_request']} us CPU/req")
        plain = [t for t in targets if t.name != "airlock_audit"]
        self.scenario(
            f"(a') unloaded latency: wrk -t1 -c1 -d{s['small_c1_seconds']}s", "small_c1", plain,
            lambda t, rnd: scenarios.wrk(t, "/small", 1, 1, s["small_c1_seconds"],
                                         self.raw(t, "small_c1", rnd), len(SMALL_BODY)),
            aggregate_wrk,
            lambda r: f"{r['requests_per_second']:>9,.0f} req/s, {lat(r)}")
        self.scenario(
            f"(a2) 4 connections: wrk -t{s['wrk_threads']} -c4 -d{s['small_c4_seconds']}s",
            "small_c4", plain,
            lambda t, rnd: scenarios.wrk(t, "/small", s["wrk_threads"], 4, s["small_c4_seconds"],
                                         self.raw(t, "small_c4", rnd), len(SMALL_BODY)),
            aggregate_wrk,
            lambda r: f"{r['requests_per_second']:>9,.0f} req/s, {lat(r)}, "
                      f"{r['cpu_us_per_request']} us CPU/req")
        self.run_many(plain, lat)
        self.scenario(
            f"(b) 1 MiB responses: wrk -t{s['wrk_threads']} -c{s['large_connections']} "
            f"-d{s['large_seconds']}s", "large", plain,
            lambda t, rnd: scenarios.wrk(t, "/1m", s["wrk_threads"], s["large_connections"],
                                         s["large_seconds"], self.raw(t, "large", rnd), MIB),
            aggregate_wrk,
            lambda r: f"{r['megabytes_per_second']:>9,.0f} MB/s, "
                      f"{r['cpu_seconds_per_gib']} CPU-s/GiB")
        self.scenario(
            f"(c) CONNECT bulk: one tunnel, {BIG_SIZE // MIB} MiB fetches for "
            f"{s['connect_seconds']}s", "connect", plain,
            lambda t, rnd: scenarios.connect_throughput(t, "/big", BIG_SIZE,
                                                        s["connect_seconds"]),
            aggregate_connect,
            lambda r: f"{r['megabytes_per_second']:>9,.0f} MB/s, "
                      f"{r['cpu_seconds_per_gib']} CPU-s/GiB")
        self.scenario(
            f"(e) {s['idle_connections']} idle keep-alive connections", "idle", plain,
            lambda t, rnd: scenarios.idle_connections(t, s["idle_connections"]),
            lambda rs: rs[0],
            lambda r: f"RSS {r['rss_idle_mib']:>6} MiB (before "
                      f"{r['rss_before_bytes'] / MIB:.1f} MiB), {r['threads']} threads",
            rounds=1)

    def run_many(self, targets, lat):
        """(a3) the small keep-alive load on --connections N connections (256 by default).
        Each target first gets a warm-up at N connections, so that a proxy's upstream pool has
        grown to N and the run measures the steady state, not N connection set-ups."""
        s = self.s
        n = s["many_connections"]
        key = "small_many"
        if key not in self.wanted:
            return
        # A proxy holds N client and N upstream sockets; wrk and the origin N each. Every
        # process we start inherits this process's limit (raised in main()).
        need = 2 * n + 128
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < need:
            for t in targets:
                self.fail(t, key, f"{n} connections need about {need} file descriptors per "
                          f"process, the limit is {soft} (raise the hard limit, ulimit -Hn)")
            return
        for t in targets:
            if self.ok(t, key):
                try:
                    scenarios.wrk(t, "/small", s["wrk_threads"], n, s["warmup_seconds"],
                                  self.raw(t, "warmup-many"), len(SMALL_BODY))
                except BenchError as e:
                    self.log(f"  warm-up of {t.name} at {n} connections failed: {e}")
        self.scenario(
            f"(a3) many connections: wrk -t{s['wrk_threads']} -c{n} -d{s['many_seconds']}s",
            key, targets,
            lambda t, rnd: scenarios.wrk(t, "/small", s["wrk_threads"], n, s["many_seconds"],
                                         self.raw(t, key, rnd), len(SMALL_BODY)),
            aggregate_wrk,
            lambda r: f"{r['requests_per_second']:>9,.0f} req/s, {lat(r)}, "
                      f"{r['cpu_us_per_request']} us CPU/req")

    def run_controls(self, proxy, origin):
        """(f) the same small-request load through a rule with no controls and a rule with
        rate limits, quotas and validation, on one Airlock, alternating round by round."""
        s = self.s
        bare, ctrl = targets = controls.targets(origin, proxy)
        self.log("== (f) verify: the controls rule refuses each kind of bad request, the bare "
                 "rule lets it through")
        try:
            checks = controls.verify(proxy, origin, len(SMALL_BODY))
        except BenchError as e:
            for t in targets:
                self.fail(t, "verify", e)
            return
        for c in checks:
            self.log(f"  {c['check']:<34} bare {c['bare']}, ctrl {c['ctrl']}"
                     + (f" {c['reason']} ({c['details']})" if "reason" in c else ""))
        for t in targets:
            self.results.setdefault(t.name, {})["verify"] = "ok"
        self.results.setdefault(ctrl.name, {})["controls_checks"] = checks
        self.run_pair("controls", "(f) request controls", proxy, (("bare", bare), ("ctrl", ctrl)),
                      controls.PATH, len(SMALL_BODY), s["controls_rounds"],
                      s["controls_seconds"])

    def run_pair(self, key, title, proxy, agents, path, size, rounds, seconds):
        """The same small-request load through two agents' rules of one Airlock, alternating
        round by round; `agents` is ((agent name, target), (agent name, target)). Afterwards
        the proxy's own count says that every response was an allowed one of that agent."""
        s = self.s
        targets = [t for _, t in agents]
        c = s["small_connections"]
        for t in targets:
            try:
                scenarios.wrk(t, path, s["wrk_threads"], c, s["warmup_seconds"],
                              self.raw(t, f"warmup-{key}"), size)
            except BenchError as e:
                self.fail(t, key, f"warm-up: {e}")
        broken = [t.name for t in targets if not self.ok(t, key)]
        if broken:
            # One rule alone compares with nothing.
            for t in targets:
                if self.ok(t, key):
                    self.fail(t, key, f"not measured: {', '.join(broken)} is broken")
            return
        before = controls.request_counts(proxy)
        self.scenario(
            f"{title}: wrk -t{s['wrk_threads']} -c{c} -d{seconds}s GET {path}, {rounds} rounds, "
            "the two rules alternating", key, targets,
            lambda t, rnd: scenarios.wrk(t, path, s["wrk_threads"], c, seconds,
                                         self.raw(t, key, rnd), size),
            aggregate_wrk,
            lambda r: f"{r['requests_per_second']:>9,.0f} req/s, p50 "
                      f"{r['latency_us']['p50']:,} us, p99 {r['latency_us']['p99']:,} us, "
                      f"{r['cpu_us_per_request']} us CPU/req",
            rounds=rounds)
        # wrk counts a status >= 400 as an error, which already breaks a run; the proxy's own
        # count says the same from the other side, and that every response was an allowed one.
        try:
            allowed, refused = controls.growth(before, controls.request_counts(proxy))
        except BenchError as e:
            allowed, refused = {}, {("?", "?", str(e)): 1}
        for agent, t in agents:
            r = self.results.get(t.name, {}).get(key)
            if not self.ok(t, key) or not r:
                continue
            mine = {k: n for k, n in refused.items() if k[0] in (agent, "?")}
            if mine:
                what = ", ".join(f"{d}/{why}: {n:.0f}" for (_, d, why), n in mine.items())
                self.fail(t, key, f"not allowed while measuring: {what}")
            elif allowed.get(agent, 0) < r["requests"]:
                self.fail(t, key, f"airlock counted {allowed.get(agent, 0):.0f} allowed "
                          f"requests for {r['requests']} responses")
            else:
                r["airlock_allowed"] = int(allowed[agent])

    def run_dlp(self, proxy, origin):
        """(h) the same small-request load through a rule without and a rule with outbound DLP
        on one Airlock, alternating round by round."""
        s = self.s
        bare, scanned = targets = dlp.targets(origin, proxy)
        self.log("== (h) verify: the DLP rule refuses a key and a token, the bare rule lets "
                 "them through")
        try:
            checks = dlp.verify(proxy, origin)
        except BenchError as e:
            for t in targets:
                self.fail(t, "verify", e)
            return
        for c in checks:
            self.log(f"  {c['check']:<40} bare {c['bare']}, dlp {c['dlp']}"
                     + (f" {c['reason']} ({c['details']})" if "reason" in c else ""))
        for t in targets:
            self.results.setdefault(t.name, {})["verify"] = "ok"
        self.results.setdefault(scanned.name, {})["dlp_checks"] = checks
        self.run_pair("dlp", "(h) content inspection", proxy,
                      (("bare", bare), ("dlp", scanned)), dlp.PATH, len(dlp.article()),
                      s["dlp_rounds"], s["dlp_seconds"])

    def run_dlp_throughput(self, binary):
        """(h') the scanners alone: MB/s per core of response and request scanning."""
        s = self.s
        name, key = "airlock_dlp_scanners", "dlp_throughput"
        self.log(f"== (h') scanner throughput: {s['dlp_mib']} MiB of generated text, one "
                 f"thread, {s['dlp_repeat']} passes")
        try:
            r = dlp.run_tool(binary, s["dlp_mib"], s["dlp_repeat"],
                             os.path.join(self.raw_dir, f"{name}.txt"))
        except BenchError as e:
            self.log(f"  BROKEN {name}/{key}: {e}")
            self.broken.append({"target": name, "scenario": key, "error": str(e)})
            self.results.setdefault(name, {})[key] = {"broken": str(e)}
            return
        self.results.setdefault(name, {})[key] = r
        self.log(f"  responses {r['response_mb_per_s_per_core']:>7,.0f} MB/s per core, requests "
                 f"{r['request_mb_per_s_per_core']:>7,.0f} MB/s per core, others used "
                 f"{r['other_processes_machine_share']:.0%} of the machine")

    def run_credentials(self, proxy, origin):
        """(g) the same small-request load through a rule that neither injects nor redacts and
        one that does both, on one Airlock, alternating round by round; first a small binary
        body (injection and header redaction), then a small JSON body (also body redaction)."""
        s = self.s
        bare, cred = targets = credentials.targets(origin, proxy)
        # Its second body is a results key of its own, wanted whenever the scenario is.
        self.wanted.add("credentials_json")
        self.log("== (g) verify: the origin gets the injected Authorization via cred.test only, "
                 "a leaked secret comes back redacted")
        try:
            checks = credentials.verify(proxy, origin, len(SMALL_BODY))
        except BenchError as e:
            for t in targets:
                self.fail(t, "verify", e)
            return
        for c in checks:
            self.log(f"  {c['check']:<44} bare: {c['bare']}; cred: {c['cred']}")
        for t in targets:
            self.results.setdefault(t.name, {})["verify"] = "ok"
        self.results.setdefault(cred.name, {})["credentials_checks"] = checks
        c = s["small_connections"]
        loads = (("credentials", credentials.SMALL_PATH, len(SMALL_BODY)),
                 ("credentials_json", credentials.JSON_PATH, len(credentials.JSON_BODY)))
        for t in targets:
            for key, path, size in loads:
                try:
                    scenarios.wrk(t, path, s["wrk_threads"], c, s["warmup_seconds"],
                                  self.raw(t, f"warmup-{key}"), size)
                except BenchError as e:
                    self.fail(t, key, f"warm-up: {e}")
        for key, path, size in loads:
            broken = [t.name for t in targets if not self.ok(t, key)]
            if broken:
                # One rule alone compares with nothing.
                for t in targets:
                    if self.ok(t, key):
                        self.fail(t, key, f"not measured: {', '.join(broken)} is broken")
                continue
            before = credentials.request_counts(proxy)
            self.scenario(
                f"(g) credentials: wrk -t{s['wrk_threads']} -c{c} -d{s['credentials_seconds']}s "
                f"GET {path} ({size} bytes), {s['credentials_rounds']} rounds, the two rules "
                "alternating", key, targets,
                lambda t, rnd, key=key, path=path, size=size: scenarios.wrk(
                    t, path, s["wrk_threads"], c, s["credentials_seconds"],
                    self.raw(t, key, rnd), size),
                aggregate_wrk,
                lambda r: f"{r['requests_per_second']:>9,.0f} req/s, p50 "
                          f"{r['latency_us']['p50']:,} us, p99 {r['latency_us']['p99']:,} us, "
                          f"{r['cpu_us_per_request']} us CPU/req",
                rounds=s["credentials_rounds"])
            # As in (f): the proxy's own count says every response was an allowed one.
            try:
                allowed, refused = credentials.growth(before, credentials.request_counts(proxy))
            except BenchError as e:
                allowed, refused = {}, {("?", "?", str(e)): 1}
            for t, rule in ((bare, "bare"), (cred, "cred")):
                r = self.results.get(t.name, {}).get(key)
                if not self.ok(t, key) or not r:
                    continue
                mine = {k: n for k, n in refused.items() if k[0] in (rule, "?")}
                if mine:
                    what = ", ".join(f"{d}/{why}: {n:.0f}" for (_, d, why), n in mine.items())
                    self.fail(t, key, f"not allowed while measuring: {what}")
                elif allowed.get(rule, 0) < r["requests"]:
                    self.fail(t, key, f"airlock counted {allowed.get(rule, 0):.0f} allowed "
                              f"requests for {r['requests']} responses")
                else:
                    r["airlock_allowed"] = int(allowed[rule])

    def run_shared_state(self, proxies, redis, origin):
        """(s) the same small-request load through a rate-limited rule on two instances, one
        with `state: local`, one with `state: redis`, alternating round by round."""
        s = self.s
        key = "shared_state"
        targets = shared_state.targets(origin, proxies)
        c = s["small_connections"]
        for t in targets:
            try:
                scenarios.wrk(t, "/small", s["wrk_threads"], c, s["warmup_seconds"],
                              self.raw(t, "warmup"), len(SMALL_BODY))
            except BenchError as e:
                self.fail(t, key, f"warm-up: {e}")
        self.log("== (s) verify: the redis instance keeps its limit in Redis")
        try:
            for check in shared_state.verify(proxies, redis):
                self.log(f"  {check['check']:<44} {check['value']}")
        except BenchError as e:
            for t in targets:
                self.fail(t, "verify", e)
            return
        broken = [t.name for t in targets if not self.ok(t, key)]
        if broken:
            for t in targets:  # one instance alone compares with nothing
                if self.ok(t, key):
                    self.fail(t, key, f"not measured: {', '.join(broken)} is broken")
            return
        before = {p.name: controls.request_counts(p) for p in proxies}
        redis0 = shared_state.redis_usage(redis)
        self.scenario(
            f"(s) shared state: wrk -t{s['wrk_threads']} -c{c} -d{s['shared_state_seconds']}s "
            f"GET /small, {s['shared_state_rounds']} rounds, state: local and state: redis "
            "alternating", key, targets,
            lambda t, rnd: scenarios.wrk(t, "/small", s["wrk_threads"], c,
                                         s["shared_state_seconds"], self.raw(t, key, rnd),
                                         len(SMALL_BODY)),
            aggregate_wrk,
            lambda r: f"{r['requests_per_second']:>9,.0f} req/s, p50 "
                      f"{r['latency_us']['p50']:,} us, p99 {r['latency_us']['p99']:,} us, "
                      f"{r['cpu_us_per_request']} us CPU/req",
            rounds=s["shared_state_rounds"])
        redis1 = shared_state.redis_usage(redis)
        # As in (f): the proxy's own count says every response was an allowed one.
        for t in targets:
            r = self.results.get(t.name, {}).get(key)
            if not self.ok(t, key) or not r:
                continue
            try:
                allowed, refused = controls.growth(before[t.name],
                                                   controls.request_counts(t.proxy))
            except BenchError as e:
                allowed, refused = {}, {("?", "?", str(e)): 1}
            if refused:
                what = ", ".join(f"{d}/{why}: {n:.0f}" for (_, d, why), n in refused.items())
                self.fail(t, key, f"not allowed while measuring: {what}")
            elif sum(allowed.values()) < r["requests"]:
                self.fail(t, key, f"airlock counted {sum(allowed.values()):.0f} allowed "
                          f"requests for {r['requests']} responses")
            else:
                r["airlock_allowed"] = int(sum(allowed.values()))
            if t.proxy.backend == "redis":
                r["redis_cpu_seconds"] = round(redis1[0] - redis0[0], 3)
                r["evalsha_calls"] = redis1[1] - redis0[1]

    def run_redaction(self, binary):
        """(r) the redaction engine alone: MB/s per core on a generated JSON body, one thread
        (bench/redaction), a realistic body and a dense one."""
        s = self.s
        name = "airlock_redaction"
        self.log(f"== (r) redaction throughput: {s['redaction_mib']} MiB JSON body, full "
                 f"built-in library, 64 KiB chunks, one thread, {s['redaction_repeat']} passes")
        for key, dense, label in redaction.LOADS:
            try:
                r = redaction.run(binary, s["redaction_mib"], s["redaction_repeat"], dense,
                                  os.path.join(self.raw_dir, f"{name}-{key}.txt"))
            except BenchError as e:
                self.log(f"  BROKEN {name}/{key}: {e}")
                self.broken.append({"target": name, "scenario": key, "error": str(e)})
                self.results.setdefault(name, {})[key] = {"broken": str(e)}
                continue
            self.results.setdefault(name, {})[key] = r
            passes = ", ".join(f"{p['mb_per_s_per_core']:,.0f}" for p in r["passes"])
            self.log(f"  {label:<40} {r['mb_per_s_per_core']:>7,.0f} MB/s per core (passes: "
                     f"{passes}), {r['redactions']:,} redactions, "
                     f"others used {r['other_processes_machine_share']:.0%} of the machine")

    def run_tunnels(self, targets, client):
        """(c2) new opaque CONNECT tunnels per second (lib/connect_newconn.py)."""
        connect_newconn.run(self, targets, client, len(SMALL_BODY), aggregate_tls)

    def run_tls(self, targets, client, mint_names):
        """The HTTPS-inspection scenarios (those of --scenarios)."""
        s = self.s
        body = len(SMALL_BODY)
        self.log("== HTTPS verify: GET /small over TLS, trusting only the target's CA "
                 "(airlock: and a path outside its rule is refused with 403)")
        for t in targets:
            try:
                tls_scenarios.verify(t, body, "/1m" if t.name == "airlock_tls" else None)
                self.results.setdefault(t.name, {})["tls_verify"] = "ok"
                self.log(f"  {t.name:<14} ok")
            except BenchError as e:
                self.fail(t, "tls_verify", e)

        def describe(r):
            return (f"{r['requests_per_second']:>9,.0f} req/s, p50 {r['latency_us']['p50']:,} us, "
                    f"p99 {r['latency_us']['p99']:,} us, {r['cpu_us_per_request']} us CPU/req, "
                    f"client {r['client_cpu_share']:.0%} of a core")

        ck, cn = s["tls_keepalive_connections"], s["tls_newconn_connections"]
        secs, warm = s["tls_seconds"], s["tls_warmup_seconds"]
        self.scenario(
            f"(t1) HTTPS keep-alive through an inspected rule: {ck} connections, {secs}s "
            f"after {warm}s warm-up", "tls_keepalive", targets,
            lambda t, rnd: tls_scenarios.load(t, client, "keepalive", ck, secs, warm,
                                              self.raw(t, "tls_keepalive", rnd), body),
            aggregate_tls, describe)
        self.scenario(
            f"(t2) HTTPS, a new connection per request (leaf cache hot): {cn} at a time, "
            f"{secs}s after {warm}s warm-up", "tls_newconn", targets,
            lambda t, rnd: tls_scenarios.load(t, client, "newconn", cn, secs, warm,
                                              self.raw(t, "tls_newconn", rnd), body),
            aggregate_tls, describe)
        self.scenario(
            f"(t3) leaf mint vs cache: {len(mint_names)} new names, one connection at a time, "
            "two in a row per name", "tls_handshake", targets,
            lambda t, rnd: tls_scenarios.handshakes(t, client, mint_names,
                                                    self.raw(t, "tls_handshake"), body),
            lambda rs: rs[0],
            lambda r: f"handshake median: new name {r['new_name']['handshake_us']:,.0f} us, "
                      f"same name again {r['cached_name']['handshake_us']:,.0f} us, "
                      f"median difference {r['mint_us']:,.0f} us",
            rounds=1)

    def check_audit(self, target):
        """After the audit instance has stopped (and flushed): one line per response."""
        r = self.results.get(target.name, {}).get("small")
        if not r or "broken" in r:
            return
        try:
            with open(target.proxy.audit_path, "rb") as f:
                lines = sum(1 for _ in f)
        except OSError:
            lines = 0
        r["audit_lines"] = lines
        if lines < r["requests"]:
            self.fail(target, "audit", f"{lines} audit lines for {r['requests']} responses")


def _own_cpu_seconds():
    """CPU seconds of this process and its waited-for children. run.sh execs bench.py, so the
    count starts with the build's compilers: only differences are meaningful."""
    return sum(getattr(resource.getrusage(who), f) for who in
               (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))


def _raise_fd_limit(want=16384):
    """Raises this process's soft RLIMIT_NOFILE towards `want` (at most the hard limit) before
    any server starts: nginx, Squid, Airlock and wrk inherit it (setrlimit(2)), and 1,000 idle
    connections or --connections 256 need more than the usual 1,024 in a proxy (one client
    and one upstream socket per connection). bench/run.sh raises it as well."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main():
    args, targets, wanted = cli.parse_args(__doc__, os.path.join(HERE, "results"))
    plain_wanted, tls_wanted, tunnel_wanted = wanted.plain, wanted.tls, wanted.tunnel
    controls_wanted, credentials_wanted = wanted.controls, wanted.credentials
    shared_state_wanted, dlp_wanted = wanted.shared_state, wanted.dlp
    redaction_wanted, dlp_tool_wanted = wanted.redaction, wanted.dlp_tool
    servers_wanted = wanted.servers

    # A proxy from the environment would put curl (and only curl) behind it.
    for k in list(os.environ):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            del os.environ[k]
    # SIGTERM unwinds like Ctrl-C so that every process we started is stopped.
    signal.signal(signal.SIGTERM, _interrupt)
    _raise_fd_limit()

    run = Run(args)
    started = time.monotonic()
    busy0 = procfs.machine_busy_seconds()
    ours0 = _own_cpu_seconds()
    workdir = tempfile.mkdtemp(prefix="airlock-bench-")
    os.chmod(workdir, 0o755)
    procs = []
    audit_target = None
    controls_proxy = None
    credentials_proxy = None
    dlp_proxy = None
    state_proxies = []
    # (g)'s secret: made afresh, handed to that airlock's environment only.
    secret = credentials.new_secret() if credentials_wanted else None
    live, tls_live, tunnel_live = [], [], []
    try:
        # First, while no server of ours runs: it needs a core to itself more than anything.
        if redaction_wanted:
            run.run_redaction(args.redaction_bench)
        if dlp_tool_wanted:
            run.run_dlp_throughput(args.dlp_bench)
        files = {"small": write_small}
        if plain_wanted or controls_wanted or tunnel_wanted:
            files["1m"] = write_random(MIB)
        if "connect" in plain_wanted:
            files["big"] = write_random(BIG_SIZE)
        if credentials_wanted:
            files.update(credentials.origin_files(secret))
        if dlp_wanted:
            files.update(dlp.origin_files())
        tls = None
        if tls_wanted or tunnel_wanted:
            tls = TlsFiles(workdir, args.airlock if "airlock" in targets else None)
        if servers_wanted:
            origin = Origin(workdir, files,
                            tls=(tls.origin_cert, tls.origin_key) if tls else None,
                            echo=credentials_wanted)
            procs.append(origin)
            origin.start()
            run.log(f"origin: nginx on 127.0.0.1:{origin.port}"
                    + (f", TLS on 127.0.0.1:{origin.tls_port}" if tls else "")
                    + f"; work dir {workdir}")
        # One name per new leaf in the handshake scenario, plus the name the load runs use.
        mint_names = [f"mint{i}.{DOMAIN}" for i in range(run.s["tls_mint_names"])]
        wanted = []
        if plain_wanted:
            wanted += [t for t in targets if t != "mitmproxy"]
            if "airlock" in targets and not args.no_audit and "small" in plain_wanted:
                wanted.append("airlock_audit")
        if tls_wanted:
            wanted += [{"squid": "squid_bump", "airlock": "airlock_tls"}.get(t, t)
                       for t in targets if t != "direct"]
            if "direct" in targets:
                tls_live.append(tls_scenarios.TlsTarget("direct", origin, None, tls.origin_ca))
        if tunnel_wanted:
            wanted += [f"{t}_tunnel" for t in targets if t in ("squid", "airlock")]
            if "direct" in targets:
                tunnel_live.append(connect_newconn.target("direct", origin, None, tls))
        if controls_wanted:
            wanted.append("airlock_controls")
        if credentials_wanted:
            wanted.append("airlock_credentials")
        if dlp_wanted:
            wanted.append("airlock_inspection")
        if shared_state_wanted:
            wanted += ["redis", "airlock_state_local", "airlock_state_redis"]
        redis = None
        for name in wanted:
            proxy = None
            try:
                if name == "squid":
                    proxy = Squid(workdir)
                elif name == "airlock":
                    proxy = Airlock(workdir, args.airlock, origin.port, args.threads)
                elif name == "airlock_audit":
                    proxy = Airlock(workdir, args.airlock, origin.port, args.threads,
                                    audit_path=os.path.join(workdir, "audit.jsonl"),
                                    name="airlock_audit")
                elif name == "squid_bump":
                    proxy = SquidBump(workdir, tls, [tls_scenarios.HOST] + mint_names)
                elif name == "mitmproxy":
                    proxy = Mitmproxy(workdir, tls)
                elif name == "airlock_tls":
                    proxy = Airlock(workdir, args.airlock, origin.tls_port, args.threads,
                                    name="airlock_tls", tls=tls)
                elif name in connect_newconn.PROXIES:
                    proxy = connect_newconn.make_proxy(name, workdir, args.airlock, origin,
                                                       args.threads)
                elif name == "airlock_controls":
                    proxy = controls.AirlockControls(workdir, args.airlock, origin.port,
                                                     args.threads)
                elif name == "airlock_credentials":
                    proxy = credentials.AirlockCredentials(workdir, args.airlock, origin.port,
                                                           args.threads, secret)
                elif name == "airlock_inspection":
                    proxy = dlp.AirlockDlp(workdir, args.airlock, origin.port, args.threads)
                elif name == "redis":
                    proxy = redis = shared_state.Redis(workdir)
                elif name.startswith("airlock_state_") and redis:
                    proxy = shared_state.AirlockState(workdir, args.airlock, origin.port,
                                                      args.threads, name.split("_")[-1], redis)
                if proxy:
                    procs.append(proxy)
                    proxy.start()
                    run.log(f"{name}: {'server' if name == 'redis' else 'proxy'} on 127.0.0.1:"
                            f"{proxy.port} (pid {proxy.pid})")
            except BenchError as e:
                run.log(f"{name}: BROKEN: cannot start: {e}")
                run.broken.append({"target": name, "scenario": "start", "error": str(e)})
                continue
            if name in ("squid_bump", "mitmproxy", "airlock_tls"):
                tls_live.append(tls_scenarios.TlsTarget(name, origin, proxy, tls.ca_cert))
                continue
            if name in connect_newconn.PROXIES:
                tunnel_live.append(connect_newconn.target(name, origin, proxy, tls))
                continue
            if name == "airlock_controls":
                controls_proxy = proxy
                continue
            if name == "airlock_credentials":
                credentials_proxy = proxy
                continue
            if name == "airlock_inspection":
                dlp_proxy = proxy
                continue
            if name == "redis":
                continue
            if name.startswith("airlock_state_"):
                if proxy:  # none without a Redis
                    state_proxies.append(proxy)
                continue
            target = scenarios.Target(name, origin, proxy)
            live.append(target)
            if name == "airlock_audit":
                audit_target = target
        if "controls" in args.scenarios and not controls_wanted:
            run.log("(f) request controls: skipped, airlock is not among --targets")
        if "credentials" in args.scenarios and not credentials_wanted:
            run.log("(g) credentials: skipped, airlock is not among --targets")
        if "shared_state" in args.scenarios and not shared_state_wanted:
            run.log("(s) shared state: skipped, airlock is not among --targets")
        if "dlp" in args.scenarios and not dlp_wanted:
            run.log("(h) content inspection: skipped, airlock is not among --targets")
        if "redaction" in args.scenarios and not redaction_wanted:
            run.log("(r) redaction throughput: skipped, airlock is not among --targets")
        if live:
            run.run(live)
        if controls_proxy:
            run.run_controls(controls_proxy, origin)
        if credentials_proxy:
            run.run_credentials(credentials_proxy, origin)
        if dlp_proxy:
            run.run_dlp(dlp_proxy, origin)
        if len(state_proxies) == 2:
            run.run_shared_state(state_proxies, redis, origin)
        if tunnel_live:
            run.run_tunnels(tunnel_live, args.tls_client)
        if tls_live:
            run.run_tls(tls_live, args.tls_client, mint_names)
        if audit_target:
            audit_target.proxy.stop()  # flushes the audit log
            run.check_audit(audit_target)
        for t in live + tls_live + tunnel_live + state_proxies + \
                [p for p in (controls_proxy, credentials_proxy, dlp_proxy) if p]:
            proxy = t if isinstance(t, Airlock) else t.proxy
            if isinstance(proxy, Airlock):
                proxy.stop()
                count, samples = proxy.log_problems()
                run.results.setdefault(t.name, {})["log_problems"] = {
                    "count": count, "samples": samples}
                if count:
                    run.log(f"{t.name} logged {count} warning/error lines, e.g.:")
                    for line in samples:
                        run.log(f"  {line}")
        if credentials_proxy:
            # Stopped above: all it will ever log is on disk. Not one line may hold the secret.
            try:
                credentials.check_logs(credentials_proxy)
            except BenchError as e:
                run.log(f"BROKEN: {e}")
                run.broken.append({"target": credentials_proxy.name, "scenario": "credentials",
                                   "error": str(e)})
    except KeyboardInterrupt:
        run.log("interrupted")
        run.broken.append({"target": "-", "scenario": "-", "error": "interrupted"})
    except BenchError as e:
        run.log(f"BROKEN: {e}")
        run.broken.append({"target": "-", "scenario": "setup", "error": str(e)})
    finally:
        for proc in reversed(procs):
            proc.stop()
        if os.environ.get("BENCH_KEEP_WORKDIR"):
            run.log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    # Everything we started has been waited for, so RUSAGE_CHILDREN now holds its CPU time.
    ours = _own_cpu_seconds() - ours0
    wall = time.monotonic() - started
    foreign = max(0.0, procfs.machine_busy_seconds() - busy0 - ours)
    foreign_share = foreign / (wall * os.cpu_count())
    return printout.finish(run, args, len(SMALL_BODY), wall, foreign, foreign_share)


if __name__ == "__main__":
    sys.exit(main())
