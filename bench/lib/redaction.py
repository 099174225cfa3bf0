"""Scenario (r): response-redaction throughput (issue 5: "MB/s per core with the full redactor
library on a 100 MiB JSON body", goal >= 300 MB/s per core).

No proxy and no network: bench/redaction (airlock_redaction_bench, built in Release with airlock)
generates the body in memory and streams it through the engine the proxy uses
(filters/redaction: every built-in redactor plus one literal secret) in 64 KiB chunks on one
thread, timing each pass with that thread's CPU clock. Two bodies, one after the other:

- `redaction`: an API listing (ids, UUIDs, timestamps, prices, prose, URLs, hashes) with about
  one secret per MB, each of a kind the library redacts. The goal is judged here.
- `redaction_dense`: the same with an e-mail address and a phone number in every record (a user
  directory: nearly every record is redacted). Reported, no goal.

A run is broken when the tool fails, when it finds a planted secret still in the output of a
further (untimed) pass, or when it counts fewer redactions than secrets it planted. Per core
means per second of the thread's CPU time: on a busy machine the wall clock also counts time
spent waiting for a core, so it is reported too but not judged.
"""

import json
import os
import subprocess
import time

from . import procfs
from .servers import BenchError

GOAL_MB_PER_S = 300  # issue 5, per core, on the 100 MiB JSON body
LOADS = (("redaction", False, "JSON API listing, ~1 secret/MB"),
         ("redaction_dense", True, "dense: e-mail + phone in every record"))
TIMEOUT_SECONDS = 600


def run(binary, mib, repeat, dense, raw_path):
    """Runs the tool once (it times `repeat` passes over one body) and returns its JSON, plus
    how busy the rest of the machine was meanwhile."""
    cmd = [binary, "--mib", str(mib), "--repeat", str(repeat), "--json"]
    if dense:
        cmd.append("--dense")
    busy0, ours0, t0 = procfs.machine_busy_seconds(), procfs.children_cpu_seconds(), time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{' '.join(cmd)}: no answer in {TIMEOUT_SECONDS} s")
    except OSError as e:
        raise BenchError(f"cannot run {binary}: {e}")
    wall = time.monotonic() - t0
    ours = procfs.children_cpu_seconds() - ours0
    foreign = max(0.0, procfs.machine_busy_seconds() - busy0 - ours)
    with open(raw_path, "w") as f:
        f.write(f"$ {' '.join(cmd)}\nexit {p.returncode}\n{p.stdout}{p.stderr}")
    try:
        r = json.loads(p.stdout)
    except ValueError:
        raise BenchError(f"exit {p.returncode}, no JSON on stdout: {(p.stderr or p.stdout)[-300:]}")
    if r.get("leaked"):
        raise BenchError(f"planted secrets left in the output: {len(r['leaked'])} kinds "
                         f"(see {raw_path})")
    if p.returncode != 0:
        raise BenchError(f"exit {p.returncode}: {p.stderr[-300:]}")
    if r["body_bytes"] < mib << 20 or r["output_bytes"] == 0:
        raise BenchError(f"body of {r['body_bytes']} bytes, output {r['output_bytes']} bytes")
    if r["redactions"] < r["secrets_planted"]:
        raise BenchError(f"{r['redactions']} redactions for {r['secrets_planted']} planted "
                         "secrets")
    r["command"] = cmd
    r["run_wall_seconds"] = round(wall, 2)
    r["other_processes_machine_share"] = round(foreign / (wall * os.cpu_count()), 3)
    return r


def summary(results, settings):
    """One entry per body that was measured; None when none was."""
    res = results.get("airlock_redaction", {})
    out = {}
    for key, dense, label in LOADS:
        r = res.get(key)
        if not r or "broken" in r:
            continue
        per_core = [p["mb_per_s_per_core"] for p in r["passes"]]
        m = {
            "body": label,
            "body_mib": round(r["body_bytes"] / (1 << 20), 1),
            "mb_per_s_per_core": round(r["mb_per_s_per_core"], 1),
            "mb_per_s_per_core_passes": [round(x, 1) for x in per_core],
            "cpu_seconds_per_pass": round(sorted(p["cpu_seconds"] for p in r["passes"])
                                          [len(per_core) // 2], 3),
            "mb_per_s_wall": round(r["mb_per_s_wall"], 1),
            "redactions": r["redactions"],
            "secrets_planted": r["secrets_planted"],
            "patterns": r["patterns"],
            "max_retained_bytes": r["max_retained_bytes"],
            "set_fallbacks": r["set_fallbacks"],
            "other_processes_machine_share": r["other_processes_machine_share"],
        }
        if not dense:
            m["goal"] = f">= {GOAL_MB_PER_S} MB/s per core"
            m["met"] = m["mb_per_s_per_core"] >= GOAL_MB_PER_S
        out[key] = m
    if not out:
        return None
    out["passes"] = settings["redaction_repeat"]
    out["chunk_kib"] = 64
    return out


def table(s):
    rows = []
    for key, _, _ in LOADS:
        m = s.get(key)
        if not m:
            continue
        p = m["mb_per_s_per_core_passes"]
        rows.append((
            m["body"], f"{m['body_mib']:.0f}", f"{m['mb_per_s_per_core']:,.0f}",
            f"{min(p):,.0f}-{max(p):,.0f}" if len(p) > 1 else "-",
            f"{m['cpu_seconds_per_pass']:.3f}", f"{m['mb_per_s_wall']:,.0f}",
            f"{m['redactions']:,}", f"{m['other_processes_machine_share']:.0%}",
            m.get("goal", ""), {True: "yes", False: "NO", None: ""}[m.get("met")]))
    head = ("body", "MiB", "MB/s/core", "passes", "CPU s", "wall MB/s", "redactions",
            "others", "goal", "met")
    widths = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]

    def line(cells):
        return "  ".join(c.ljust(widths[i]) if i in (0, 8, 9) else c.rjust(widths[i])
                         for i, c in enumerate(cells)).rstrip()

    out = [line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
    out.append("")
    out.append("  MB/s/core: body bytes / CPU seconds of the redacting thread, median over "
               "passes (CPU s: one pass);")
    out.append("  wall MB/s also counts time spent waiting for a core; others: share of the "
               "machine other processes used meanwhile")
    fallbacks = [k for k, _, _ in LOADS if s.get(k, {}).get("set_fallbacks")]
    for k in fallbacks:
        out.append(f"  {k}: the RE2::Set ran out of memory {s[k]['set_fallbacks']} times "
                   "(slower, still correct)")
    return "\n".join(out)
