"""The benchmark's command line: the targets and scenarios it knows, what a run was asked
for, and the checks that it can be done here (tools installed, binaries given)."""

import argparse
import os
import shutil
from types import SimpleNamespace

from . import connect_newconn

PLAIN_SCENARIOS = ("small", "small_c1", "small_c4", "small_many", "large", "connect", "idle")
CONTROLS_SCENARIOS = ("controls",)
CREDENTIALS_SCENARIOS = ("credentials",)
SHARED_STATE_SCENARIOS = ("shared_state",)
REDACTION_SCENARIOS = ("redaction",)
DLP_SCENARIOS = ("dlp", "dlp_throughput")
TLS_SCENARIOS = ("tls_keepalive", "tls_newconn", "tls_handshake")
# New opaque CONNECT tunnels (TLS with the origin through them): part of `plain`, like connect.
TUNNEL_SCENARIOS = (connect_newconn.KEY,)
TARGETS = ("direct", "squid", "mitmproxy", "airlock")


def parse_scenarios(p, text):
    """--scenarios: names of PLAIN_SCENARIOS, connect_newconn, `plain` (those and
    connect_newconn), `controls`, `credentials`, `shared_state`, `redaction`, `dlp`,
    `dlp_throughput`, `tls` (its three parts), tls_keepalive, tls_newconn, tls_handshake, or
    `all`."""
    out = []
    for name in (n.strip() for n in text.split(",") if n.strip()):
        if name == "all":
            out += list(PLAIN_SCENARIOS) + list(CONTROLS_SCENARIOS) + \
                list(CREDENTIALS_SCENARIOS) + list(SHARED_STATE_SCENARIOS) + \
                list(REDACTION_SCENARIOS) + list(DLP_SCENARIOS) + list(TLS_SCENARIOS) + \
                list(TUNNEL_SCENARIOS)
        elif name == "plain":
            out += list(PLAIN_SCENARIOS) + list(TUNNEL_SCENARIOS)
        elif name == "tls":
            out += list(TLS_SCENARIOS)
        elif name in PLAIN_SCENARIOS + CONTROLS_SCENARIOS + CREDENTIALS_SCENARIOS + \
                SHARED_STATE_SCENARIOS + REDACTION_SCENARIOS + DLP_SCENARIOS + TLS_SCENARIOS + \
                TUNNEL_SCENARIOS:
            out.append(name)
        else:
            p.error(f"unknown scenario {name!r} (known: all, plain, "
                    f"{', '.join(PLAIN_SCENARIOS + TUNNEL_SCENARIOS)}, controls, credentials, "
                    f"shared_state, redaction, dlp, dlp_throughput, tls, "
                    f"{', '.join(TLS_SCENARIOS)})")
    if not out:
        p.error("--scenarios names no scenario")
    return list(dict.fromkeys(out))


def parse_args(description, results_dir):
    """Parses and checks the command line. Returns (args, targets, wanted): `wanted` says
    which groups of scenarios run (`plain` and `tls` are lists of scenario names, the rest
    booleans; `servers`: whether an origin is needed at all)."""
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--airlock", help="airlock binary (required unless --targets omits it)")
    p.add_argument("--targets", default=",".join(TARGETS),
                   help="comma-separated subset of direct,squid,mitmproxy,airlock (default: "
                        "all). In the HTTPS scenario squid is Squid ssl-bump and airlock an "
                        "inspecting rule; mitmproxy takes part in the HTTPS scenario only")
    p.add_argument("--scenarios", default="all",
                   help="comma-separated: small,small_c1,small_c4,small_many,large,connect,"
                        "connect_newconn,idle (or plain), "
                        "controls, credentials, shared_state, dlp, dlp_throughput and "
                        "redaction (airlock only), tls (or "
                        "tls_keepalive,"
                        "tls_newconn,"
                        "tls_handshake); default all")
    p.add_argument("--tls-client", help="airlock_bench_tls_client binary (for the tls "
                                        "scenarios; bench/run.sh builds it)")
    p.add_argument("--redaction-bench", help="airlock_redaction_bench binary (for the "
                                             "redaction scenario; bench/run.sh builds it)")
    p.add_argument("--dlp-bench", help="airlock_dlp_bench binary (for the dlp_throughput "
                                       "scenario; bench/run.sh builds it)")
    p.add_argument("--no-dlp-bench", action="store_true",
                   help="leave the dlp_throughput scenario out of `all` (bench/run.sh passes it "
                        "when it has no tool)")
    p.add_argument("--no-redaction", action="store_true",
                   help="leave the redaction scenario out of `all` (bench/run.sh passes it when "
                        "it has no tool)")
    p.add_argument("--threads", type=int, default=int(os.environ.get("AIRLOCK_THREADS", "1")),
                   help="airlock --threads (default 1: Squid is one process, too)")
    p.add_argument("--no-audit", action="store_true", help="skip the audit-cost run")
    p.add_argument("--connections", type=int, default=None, metavar="N",
                   help="client connections of scenario small_many (default 256); naming it "
                        "adds small_many and its reference small_c4 to --scenarios")
    p.add_argument("--quick", action="store_true", help="2 s per scenario: a smoke test")
    p.add_argument("--rounds", type=int, default=2,
                   help="rounds per scenario, targets interleaved (default 2)")
    p.add_argument("--results-dir", default=results_dir)
    args = p.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    if not set(targets) <= set(TARGETS) or not targets:
        p.error(f"bad --targets {args.targets!r}")
    named = {n.strip() for n in args.scenarios.split(",")}
    args.scenarios = parse_scenarios(p, args.scenarios)
    if args.connections is not None:
        if not 1 <= args.connections <= 4096:
            p.error("--connections N: 1 to 4096 (Airlock's per-client limit in the bench policy)")
        for name in ("small_c4", "small_many"):
            if name not in args.scenarios:
                args.scenarios.append(name)
    else:
        args.connections = 256
    if args.no_redaction and "airlock" in targets:
        if "redaction" in named:
            p.error("--scenarios names redaction, but there is no redaction tool "
                    "(--redaction-bench, or REDACTION_BENCH_BIN for bench/run.sh)")
        args.scenarios = [n for n in args.scenarios if n != "redaction"]
    if args.no_dlp_bench and "airlock" in targets:
        if "dlp_throughput" in named:
            p.error("--scenarios names dlp_throughput, but there is no DLP tool "
                    "(--dlp-bench, or DLP_BENCH_BIN for bench/run.sh)")
        args.scenarios = [n for n in args.scenarios if n != "dlp_throughput"]
    plain_wanted = [n for n in args.scenarios if n in PLAIN_SCENARIOS]
    tls_wanted = [n for n in args.scenarios if n in TLS_SCENARIOS]
    tunnel_wanted = connect_newconn.KEY in args.scenarios and \
        bool({"direct", "squid", "airlock"} & set(targets))
    # Airlock against itself: only when airlock is a target.
    controls_wanted = "controls" in args.scenarios and "airlock" in targets
    credentials_wanted = "credentials" in args.scenarios and "airlock" in targets
    shared_state_wanted = "shared_state" in args.scenarios and "airlock" in targets
    redaction_wanted = "redaction" in args.scenarios and "airlock" in targets
    dlp_wanted = "dlp" in args.scenarios and "airlock" in targets
    dlp_tool_wanted = "dlp_throughput" in args.scenarios and "airlock" in targets
    if dlp_tool_wanted and (not args.dlp_bench or not os.access(args.dlp_bench, os.X_OK)):
        p.error("--dlp-bench BIN is required for the dlp_throughput scenario (bench/run.sh "
                "builds it)")
    if redaction_wanted and (not args.redaction_bench or
                             not os.access(args.redaction_bench, os.X_OK)):
        p.error("--redaction-bench BIN is required for the redaction scenario (bench/run.sh "
                "builds it)")
    # The redaction scenario needs no server: with it alone, none is started.
    servers_wanted = bool(plain_wanted or tls_wanted or tunnel_wanted or controls_wanted
                          or credentials_wanted or shared_state_wanted or dlp_wanted)
    if "airlock" in targets and not args.airlock:
        p.error("--airlock BIN is required to benchmark airlock")
    tools = ["curl", "nginx"] if servers_wanted else []
    if plain_wanted or controls_wanted or credentials_wanted or shared_state_wanted or dlp_wanted:
        tools.append("wrk")
    if shared_state_wanted:
        tools.append("redis-server")
    if "squid" in targets:
        tools.append("squid")
    if tls_wanted or tunnel_wanted:
        tools.append("openssl")
        if "mitmproxy" in targets and tls_wanted:
            tools.append("mitmdump")
        if not args.tls_client or not os.access(args.tls_client, os.X_OK):
            p.error("--tls-client BIN is required for the tls and connect_newconn scenarios "
                    "(bench/run.sh builds it)")
    for tool in tools:
        if not shutil.which(tool):
            p.error(f"{tool} not found (bench/run.sh installs it)")
    wanted = SimpleNamespace(
        plain=plain_wanted, tls=tls_wanted, tunnel=tunnel_wanted, controls=controls_wanted,
        credentials=credentials_wanted, shared_state=shared_state_wanted,
        redaction=redaction_wanted, dlp=dlp_wanted, dlp_tool=dlp_tool_wanted,
        servers=servers_wanted)
    return args, targets, wanted
