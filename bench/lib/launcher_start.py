#!/usr/bin/python3
"""Start cost of `airlock run -- true` next to unshare-only and bubblewrap doing the same.

Usually started by bench/launcher.sh, which installs bubblewrap and builds airlock. Each
command runs --warmup times unmeasured, then --runs times measured. The commands take turns
(airlock, unshare, bwrap, plain, airlock, ...), so a burst of background load hits all of
them alike. The wall time of one run is spawn to reap, measured in this process, so the
fork/exec/wait overhead of Python is in every row; the `plain true` row shows how much.

Goals (issue 7), reported and never asserted: airlock's median < 20 ms, and airlock's median
at most 2x bwrap's.

Exit status: 0 when every command ran and exited 0 every time (goals met or not), 1 when a
command is broken (non-zero exit, timeout, missing), 2 on bad usage.
"""

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

GOAL_MS = 20.0
GOAL_RATIO = 2.0
RUN_TIMEOUT_S = 10.0
# The whole measurement stops taking samples after this, so a pathological launcher cannot
# hold the run past a minute; a row with fewer samples says so.
BUDGET_S = 40.0


# Rows whose command runs with a pseudo-terminal as stdin and stdout (see run_once).
TTY_ROWS = {"airlock-pty"}


def commands(airlock, ca=None):
    """Name -> argv. Each starts `true` in new user, net, mount, PID, IPC and UTS namespaces."""
    cmds = {
        "airlock": [airlock, "run", "--", "true"],
        # -r maps the caller to root inside, -f forks so `true` is PID 1 of the new PID
        # namespace, --mount-proc mounts that namespace's /proc, as airlock and bwrap do.
        "unshare": ["unshare", "-Urnmpiuf", "--mount-proc", "true"],
        # --unshare-all adds a cgroup namespace; bwrap keeps the network shared only with
        # --share-net, so the network namespace is new as well.
        "bwrap": ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev",
                  "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"],
        # No namespaces at all: the cost of spawning and reaping a process from here.
        "plain": ["true"],
    }
    if ca:
        # Issue 18's extra work: a pty made in the jail and relayed (stdin and stdout are a
        # terminal), the CA bundle bound over the system bundles and the cached Java store
        # over the JVM's cacerts (--ca). The store is made in the warm-up, then reused.
        cmds["airlock-pty"] = [airlock, "run", "--ca", ca, "--", "true"]
    return cmds


def run_once(argv, cwd, tty=False):
    """Returns (wall seconds, None) or (None, reason)."""
    master = slave = None
    io = subprocess.DEVNULL
    if tty:
        # A terminal, though not the command's controlling one (that would need a preexec
        # function, which makes Python fork more slowly than the other rows).
        master, slave = os.openpty()
        io = slave
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=cwd, stdin=io, stdout=io, stderr=subprocess.PIPE,
                              timeout=RUN_TIMEOUT_S, check=False)
    except FileNotFoundError:
        return None, f"{argv[0]}: not found"
    except subprocess.TimeoutExpired:
        return None, f"timed out after {RUN_TIMEOUT_S:g} s"
    finally:
        if tty:
            os.close(master)
            os.close(slave)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        tail = err[-1] if err else "no stderr"
        return None, f"exit {proc.returncode}: {tail}"
    return wall, None


def percentile(sorted_values, p):
    """Nearest-rank percentile (p in 0..100) of an ascending list."""
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


def version(argv):
    try:
        out = subprocess.run(argv, capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).decode("utf-8", "replace").strip().splitlines()
    return text[0] if text else None


def measure(cmds, runs, warmup, cwd):
    samples = {name: [] for name in cmds}
    broken = {}
    # Warm-up: page cache, dynamic loader, the kernel's namespace caches. A failure here
    # already marks the command broken (it is not measured further).
    for name, argv in cmds.items():
        for _ in range(warmup):
            _, err = run_once(argv, cwd, name in TTY_ROWS)
            if err:
                broken[name] = f"warm-up: {err}"
                break
    deadline = time.monotonic() + BUDGET_S
    truncated = False
    for i in range(runs):
        if time.monotonic() > deadline:
            truncated = True
            break
        names = [n for n in cmds if n not in broken]
        # Rotate the order each round so no command always runs right after another.
        shift = i % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            if name in broken:
                continue
            wall, err = run_once(cmds[name], cwd, name in TTY_ROWS)
            if err:
                broken[name] = f"run {i + 1}: {err}"
            else:
                samples[name].append(wall * 1000.0)
    return samples, broken, truncated


def summarize(samples):
    out = {}
    for name, ms in samples.items():
        if not ms:
            continue
        s = sorted(ms)
        out[name] = {"n": len(s), "median_ms": statistics.median(s), "p90_ms": percentile(s, 90),
                     "min_ms": s[0], "max_ms": s[-1]}
    return out


def verdict(ok):
    if ok is None:
        return "unknown"
    return "met" if ok else "not met"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--airlock", required=True, help="the airlock binary")
    ap.add_argument("--runs", type=int, default=50, help="measured runs per command (50)")
    ap.add_argument("--warmup", type=int, default=5, help="unmeasured runs first (5)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--ca", help="a CA certificate: adds the airlock-pty row (--ca, a pty)")
    args = ap.parse_args()
    if args.runs < 1 or args.warmup < 0:
        ap.error("--runs must be >= 1 and --warmup >= 0")
    if not os.access(args.airlock, os.X_OK):
        print(f"launcher_start: {args.airlock} is not executable", file=sys.stderr)
        return 2

    cmds = commands(os.path.abspath(args.airlock), args.ca)
    load_before = os.getloadavg()[0]
    # A fresh, empty work directory: airlock binds the current directory writable, and the
    # repository (or a build directory) would make its start cost depend on where it runs.
    with tempfile.TemporaryDirectory(prefix="airlock-bench-launcher.") as cwd:
        samples, broken, truncated = measure(cmds, args.runs, args.warmup, cwd)
    stats = summarize(samples)
    load_after = os.getloadavg()[0]

    uid = os.getuid()
    print(f"launcher start cost: {args.runs} runs each after {args.warmup} warm-ups, "
          f"uid {uid}{' (root)' if uid == 0 else ''}, kernel {platform.release()}")
    # The launcher hands off between three processes and a thread, so it suffers more than
    # the others from a busy machine: say how busy it was.
    cores = os.cpu_count() or 1
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after, "
          f"{cores} cores")
    if max(load_before, load_after) > cores / 2:
        print("warning: the machine is busy; the numbers (and the ratio) are inflated")
    print(f"{'command':<9} {'median ms':>10} {'p90 ms':>8} {'min ms':>8} {'max ms':>8} {'n':>4}"
          "  argv")
    for name, argv in cmds.items():
        shown = (" ".join(["airlock"] + argv[1:]) if name.startswith("airlock")
                 else " ".join(argv)) + (" (stdin, stdout: a pty)" if name in TTY_ROWS else "")
        if name in stats:
            st = stats[name]
            print(f"{name:<9} {st['median_ms']:>10.2f} {st['p90_ms']:>8.2f} {st['min_ms']:>8.2f} "
                  f"{st['max_ms']:>8.2f} {st['n']:>4}  {shown}")
        else:
            print(f"{name:<9} {'-':>10} {'-':>8} {'-':>8} {'-':>8} {0:>4}  {shown}")

    a = stats.get("airlock") if "airlock" not in broken else None
    b = stats.get("bwrap") if "bwrap" not in broken else None
    ratio = a["median_ms"] / b["median_ms"] if a and b else None
    goal_abs = a["median_ms"] < GOAL_MS if a else None
    goal_rel = ratio <= GOAL_RATIO if ratio is not None else None
    print()
    print(f"airlock/bwrap (median): {ratio:.2f}x" if ratio is not None
          else "airlock/bwrap (median): -")
    t = stats.get("airlock-pty") if "airlock-pty" not in broken else None
    if t and b:
        print(f"airlock-pty/bwrap (median): {t['median_ms'] / b['median_ms']:.2f}x")
    print(f"goal: airlock median < {GOAL_MS:g} ms: "
          f"{verdict(goal_abs)}" + (f" ({a['median_ms']:.2f} ms)" if a else ""))
    print(f"goal: airlock median <= {GOAL_RATIO:g}x bwrap: "
          f"{verdict(goal_rel)}" + (f" ({ratio:.2f}x)" if ratio is not None else ""))
    if truncated:
        print(f"note: stopped after the {BUDGET_S:g} s budget; n shows the runs taken")
    sys.stdout.flush()
    for name, why in broken.items():
        print(f"BROKEN: {name}: {why}", file=sys.stderr)

    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        doc = {
            "runs": args.runs, "warmup": args.warmup, "uid": uid,
            "kernel": platform.release(), "truncated": truncated,
            "loadavg_1min": [load_before, load_after],
            "commands": dict(cmds),
            "stats": stats, "samples_ms": samples, "broken": broken,
            "airlock_over_bwrap": ratio,
            "goals": {"median_under_20ms": verdict(goal_abs),
                      "within_2x_bwrap": verdict(goal_rel)},
            "versions": {"bwrap": version(["bwrap", "--version"]) if shutil.which("bwrap")
                         else None,
                         "unshare": version(["unshare", "--version"])},
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
