"""The end of a run: its tables printed, and everything it measured written to latest.json
with the versions of the tools it ran."""

import datetime
import json
import os
import platform
import shutil
import subprocess

from . import connect_newconn, controls, credentials, dlp, redaction, report, shared_state
from . import tls_report

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def versions(airlock_bin):
    def first_line(cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            text = (r.stdout or r.stderr).strip().splitlines()
            return text[0] if text else ""
        except (OSError, subprocess.TimeoutExpired):
            return None
    git = first_line(["git", "-C", os.path.dirname(HERE), "rev-parse", "--short", "HEAD"])
    return {
        "airlock": first_line([airlock_bin, "--version"]) if airlock_bin else None,
        "airlock_git": git,
        "squid": first_line(["squid", "-v"]),
        "squid_ssl_bump": squid_has_openssl(),
        "mitmproxy": first_line(["mitmdump", "--version"]) if shutil.which("mitmdump") else None,
        "openssl": first_line(["openssl", "version"]),
        "nginx": first_line(["nginx", "-v"]),
        "wrk": first_line(["wrk", "-v"]),
        "curl": first_line(["curl", "--version"]),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
    }


def squid_has_openssl():
    """Whether the installed Squid can ssl-bump (Debian's squid-openssl build)."""
    try:
        out = subprocess.run(["squid", "-v"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return "--with-openssl" in out


def _section(title, table):
    print()
    print(title)
    print(table)


def _wrk_runs(s, connections, rounds, seconds, each="each"):
    """How an alternating comparison was loaded: wrk's threads and connections, the rounds."""
    return (f"wrk -t{s['wrk_threads']} -c{connections}, {rounds} rounds x {seconds} s {each}, "
            "alternating")


def finish(run, args, small_body_size, wall, foreign, foreign_share):
    """Prints the tables of what ran and writes latest.json; returns the exit status (1 when
    a scenario broke). `foreign`: CPU-seconds other processes used during the run."""
    # Rows of scenarios that were not run (or broke everywhere) are left out.
    rows = [r for r in report.rows(run.results)
            if any(r[t] is not None for t in ("direct", "squid", "airlock"))]
    tls_rows = [r for r in tls_report.rows(run.results, run.s)
                if any(r[t] is not None for t, _ in tls_report.COLUMNS)]
    tunnel_rows = connect_newconn.rows(run.results, run.s)
    controls_summary = controls.summary(run.results, run.s)
    credentials_summary = credentials.summary(run.results, run.s)
    shared_state_summary = shared_state.summary(run.results, run.s)
    redaction_summary = redaction.summary(run.results, run.s)
    dlp_summary = dlp.summary(run.results, run.s)
    extra = []
    audit = run.results.get("airlock_audit", {}).get("small")
    plain = run.results.get("airlock", {}).get("small")
    if audit and "broken" not in audit and plain and "broken" not in plain:
        extra.append(
            f"  audit to a file: {audit['requests_per_second']:,.0f} req/s "
            f"({audit['requests_per_second'] / plain['requests_per_second']:.2f}x of no audit), "
            f"{audit['cpu_us_per_request']} us CPU/req "
            f"({audit['cpu_us_per_request'] - plain['cpu_us_per_request']:+.1f} us), "
            f"{audit.get('audit_lines', '?')} lines for {audit['requests']} responses")
    s = run.s
    threads = s["airlock_threads"]
    if rows:
        _section(f"Airlock benchmark, loopback, {os.cpu_count()} CPUs shared by client, proxy and "
                 f"origin; wrk -t{s['wrk_threads']}, airlock --threads {threads}, squid 1 "
                 f"process, nginx 1 worker",
                 report.table(rows, extra))
    if controls_summary:
        cs = controls_summary
        _section(f"Request controls (issue 4), one airlock --threads {threads}: agent bare (a rule "
                 f"with no controls) vs agent ctrl (rate limits, quotas, byte throttles, "
                 f"concurrency cap, breaker; method, path, query and header checks); "
                 + _wrk_runs(s, cs["connections"], cs["rounds"], cs["seconds_per_run"]),
                 controls.table(cs))
    if credentials_summary:
        cs = credentials_summary
        _section(f"Credential injection and response redaction (issue 5), one airlock --threads "
                 f"{threads}: rule bare (bare.test: no inject, no redact) vs rule cred "
                 f"(cred.test: inject Authorization: Bearer "
                 f"${{secrets.{credentials.SECRET_NAME}}}, "
                 f"redact {', '.join(credentials.REDACTORS)}); "
                 + _wrk_runs(s, cs["connections"], cs["rounds"], cs["seconds_per_run"],
                             "each per body"),
                 credentials.table(cs))
    if shared_state_summary:
        ss = shared_state_summary
        _section(f"Shared state (issue 19), one airlock --threads {threads} each: a rule with a "
                 f"request rate limit and an hourly quota (never reached), state: local vs "
                 f"state: redis (redis-server on loopback); "
                 + _wrk_runs(s, ss["connections"], ss["rounds"], ss["seconds_per_run"]),
                 shared_state.table(ss))
    if dlp_summary:
        _section(f"Content inspection (issue 16), one airlock --threads {threads}: agent bare (a "
                 f"rule without scanning) vs agent dlp (the same rule with dlp: "
                 f"{{action: block, entropy: true}}); GET {dlp.PATH}, "
                 f"{len(dlp.article())} B text/plain; "
                 + _wrk_runs(s, s["small_connections"], s["dlp_rounds"], s["dlp_seconds"]),
                 dlp.table(dlp_summary))
    if redaction_summary:
        rs = redaction_summary
        m = rs.get("redaction") or rs.get("redaction_dense")
        _section(f"Response redaction throughput (issue 5), bench/redaction: the full built-in "
                 f"library + 1 literal secret ({m['patterns']} patterns), one thread, "
                 f"{rs['chunk_kib']} KiB chunks, {rs['passes']} timed passes per body",
                 redaction.table(rs))
    if tls_rows:
        _section(f"HTTPS inspection, loopback, {os.cpu_count()} CPUs; one-thread client, airlock "
                 f"--threads {threads}, squid ssl-bump 1 process (+ certgen helper), mitmproxy 1 "
                 f"process, nginx 1 worker; GET /small ({small_body_size} bytes)",
                 tls_report.table(tls_rows, run.results))
    if tunnel_rows:
        _section(f"New opaque CONNECT tunnels (connect_newconn), loopback, {os.cpu_count()} "
                 f"CPUs; one-thread client doing TLS with the origin through the tunnel, airlock "
                 f"--threads {threads} (a rule without inspect), squid 1 process (no bump), nginx "
                 f"1 worker; GET /small ({small_body_size} bytes)",
                 connect_newconn.table(tunnel_rows, run.results))
    print(f"\nother processes used {foreign:.1f} CPU-seconds ({foreign_share:.0%} of the machine) "
          f"during the {wall:.0f} s run")
    if foreign_share > 0.05:
        print("WARNING: the machine was not idle; numbers are noisy. Run again on a quiet machine.")
    if run.broken:
        print("\nBROKEN scenarios (their numbers are missing above):")
        for b in run.broken:
            print(f"  {b['target']}/{b['scenario']}: {b['error']}")
    doc = {
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "elapsed_seconds": round(wall, 1),
        "other_processes_cpu_seconds": round(foreign, 1),
        "other_processes_machine_share": round(foreign_share, 3),
        "versions": versions(args.airlock),
        "settings": s,
        "scenarios": args.scenarios,
        "summary": rows,
        "controls_summary": controls_summary,
        "credentials_summary": credentials_summary,
        "shared_state_summary": shared_state_summary,
        "redaction_summary": redaction_summary,
        "dlp_summary": dlp_summary,
        "tls_summary": tls_rows,
        "connect_newconn_summary": tunnel_rows,
        "results": run.results,
        "broken": run.broken,
    }
    out = os.path.join(args.results_dir, "latest.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"\nresults: {out} (raw client output in {run.raw_dir})")
    return 1 if run.broken else 0
