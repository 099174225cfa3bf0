"""Turns the per-target results into rows with ratios and goals, a text table and JSON.

The goals are issue 21's (the hot path), where it names one, and the older issues' otherwise
(1 MiB responses, idle memory). They are reported, never asserted: a missed goal is
information, only a broken scenario fails the run.
"""


def round_rates(r):
    """Requests per second of each round of an alternating scenario (one when not in rounds)."""
    if "rounds" in r:
        return [x["requests_per_second"] for x in r["rounds"]]
    return [r["requests_per_second"]]


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def _get(results, target, *keys):
    node = results.get(target)
    for k in keys:
        if not isinstance(node, dict) or k not in node:
            return None
        node = node[k]
    return node


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def rows(results):
    """One dict per reported metric: the three values, the ratios, the goal and whether met."""
    out = []

    def add(metric, unit, keys, goal, met, note=""):
        vals = {t: _get(results, t, *keys) for t in ("direct", "squid", "airlock")}
        out.append({
            "metric": metric,
            "unit": unit,
            **vals,
            "airlock_over_squid": _ratio(vals["airlock"], vals["squid"]),
            "airlock_over_direct": _ratio(vals["airlock"], vals["direct"]),
            "goal": goal,
            "met": met(vals) if vals["airlock"] is not None else None,
            "note": note,
        })

    def need(*vs):
        return all(v is not None for v in vs)

    # The goals are issue 21's ("Hot path to the limit"), reported only.
    add("small: requests/s (c32)", "req/s", ("small", "requests_per_second"),
        ">= 0.45x direct (~3x Squid)",
        lambda v: v["airlock"] >= 0.45 * v["direct"] if need(v["direct"]) else None)
    add("small: p50 latency (c32)", "us", ("small", "latency_us", "p50"), "", lambda v: None)
    add("small: p99 latency (c32)", "us", ("small", "latency_us", "p99"), "", lambda v: None)
    add("CPU per small request (c32)", "us", ("small", "cpu_us_per_request"), "<= 25 us",
        lambda v: v["airlock"] <= 25, note="direct column: the origin (nginx) itself")
    add("small: p50 latency (c1)", "us", ("small_c1", "latency_us", "p50"), "", lambda v: None)
    add("small: p99 latency (c1)", "us", ("small_c1", "latency_us", "p99"), "", lambda v: None)
    add("small: requests/s (c4)", "req/s", ("small_c4", "requests_per_second"), "",
        lambda v: None)
    add("small: p99 latency (c4)", "us", ("small_c4", "latency_us", "p99"),
        "<= direct + 500 us",
        lambda v: v["airlock"] - v["direct"] <= 500 if need(v["direct"]) else None)
    add("CPU per small request (c4)", "us", ("small_c4", "cpu_us_per_request"), "",
        lambda v: None, note="direct column: the origin (nginx) itself")
    many = next((_get(results, t, "small_many", "connections") for t in results
                 if _get(results, t, "small_many", "connections")), None)
    c4_cpu = _get(results, "airlock", "small_c4", "cpu_us_per_request")
    if many is not None:
        add(f"small: requests/s (c{many})", "req/s", ("small_many", "requests_per_second"),
            ">= 2x Squid",
            lambda v: v["airlock"] >= 2 * v["squid"] if need(v["squid"]) else None)
        add(f"small: p99 latency (c{many})", "us", ("small_many", "latency_us", "p99"),
            "<= 2x direct",
            lambda v: v["airlock"] <= 2 * v["direct"] if need(v["direct"]) else None)
        add(f"CPU per small request (c{many})", "us", ("small_many", "cpu_us_per_request"),
            "<= airlock's at c4",
            lambda v: v["airlock"] <= c4_cpu if c4_cpu is not None else None,
            note="direct column: the origin (nginx) itself")
    add("1 MiB responses (c8)", "MB/s", ("large", "megabytes_per_second"), ">= 0.5x direct",
        lambda v: v["airlock"] >= 0.5 * v["direct"] if need(v["direct"]) else None)
    add("CPU per GiB of 1 MiB responses", "s", ("large", "cpu_seconds_per_gib"), "",
        lambda v: None, note="direct column: the origin (nginx) itself")
    squid_connect_cpu = _get(results, "squid", "connect", "cpu_seconds_per_gib")
    airlock_connect_cpu = _get(results, "airlock", "connect", "cpu_seconds_per_gib")
    add("CONNECT bulk (1 tunnel)", "MB/s", ("connect", "megabytes_per_second"),
        ">= Squid, at less CPU",
        lambda v: (v["airlock"] >= v["squid"] and airlock_connect_cpu < squid_connect_cpu)
        if need(v["squid"], squid_connect_cpu, airlock_connect_cpu) else None,
        note="direct column: same fetch without a proxy")
    add("CPU per GiB through the tunnel", "s", ("connect", "cpu_seconds_per_gib"), "",
        lambda v: None, note="direct column: the origin (nginx) itself")
    idle_n = next((_get(results, t, "idle", "connections") for t in results
                   if _get(results, t, "idle", "connections")), 1000)
    add(f"RSS, {idle_n} idle keep-alive conns", "MiB", ("idle", "rss_idle_mib"), "<= 64 MiB",
        lambda v: v["airlock"] <= 64, note="direct column: the origin (nginx) itself")
    return out


def _fmt(v, unit):
    if v is None:
        return "-"
    if unit in ("req/s", "conn/s"):
        return f"{v:,.0f}"
    if unit == "s":
        return f"{v:.2f}"
    if unit == "us":
        return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"
    return f"{v:,.1f}"


def table(rows_, extra_lines=()):
    head = ("metric", "direct", "squid", "airlock", "A/squid", "A/direct", "goal", "met")
    lines = []
    data = []
    for r in rows_:
        unit = r["unit"]
        data.append((
            f"{r['metric']} [{unit}]",
            _fmt(r["direct"], unit), _fmt(r["squid"], unit), _fmt(r["airlock"], unit),
            "-" if r["airlock_over_squid"] is None else f"{r['airlock_over_squid']:.2f}x",
            "-" if r["airlock_over_direct"] is None else f"{r['airlock_over_direct']:.2f}x",
            r["goal"] or "",
            {True: "yes", False: "NO", None: ""}[r["met"]],
        ))
    widths = [max(len(str(x[i])) for x in data + [head]) for i in range(len(head))]

    def line(cells):
        parts = []
        for i, c in enumerate(cells):
            parts.append(str(c).ljust(widths[i]) if i in (0, 6, 7) else str(c).rjust(widths[i]))
        return "  ".join(parts).rstrip()

    lines.append(line(head))
    lines.append("  ".join("-" * w for w in widths))
    lines.extend(line(d) for d in data)
    notes = [f"  {r['metric']}: {r['note']}" for r in rows_ if r["note"]]
    if notes:
        lines.append("")
        lines.append("notes:")
        lines.extend(notes)
    lines.extend(extra_lines)
    return "\n".join(lines)
