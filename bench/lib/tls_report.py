"""The HTTPS-inspection table: direct, Squid ssl-bump, mitmproxy and Airlock side by side,
Airlock's ratios to each, and the goals (reported, never asserted): issue 21's for Squid
ssl-bump and CPU, issue 3's for mitmproxy."""

import os

from .report import _fmt, _get, _ratio


def _fmt_signed(v, unit):
    if v is None or v >= 0:
        return _fmt(v, unit)
    return "-" + _fmt(-v, unit)

# Result keys of the TLS targets, in the table's column order.
COLUMNS = (("direct", "direct"), ("squid_bump", "squid-bump"), ("mitmproxy", "mitmproxy"),
           ("airlock_tls", "airlock"))


def rows(results, s):
    out = []

    def add(metric, unit, keys, goal="", met=lambda v: None, note="", ratios=True):
        vals = {t: _get(results, t, *keys) for t, _ in COLUMNS}
        a = vals["airlock_tls"] if ratios else None
        out.append({
            "metric": metric,
            "unit": unit,
            **vals,
            "airlock_over_squid_bump": _ratio(a, vals["squid_bump"]),
            "airlock_over_mitmproxy": _ratio(a, vals["mitmproxy"]),
            "airlock_over_direct": _ratio(a, vals["direct"]),
            "goal": goal,
            "met": met(vals) if vals["airlock_tls"] is not None else None,
            "note": note,
        })

    def have(*vs):
        return all(v is not None for v in vs)

    ck, cn = s["tls_keepalive_connections"], s["tls_newconn_connections"]
    add(f"HTTPS keep-alive: requests/s (c{ck})", "req/s",
        ("tls_keepalive", "requests_per_second"), ">= 2.5x squid-bump, >= 10x mitmproxy",
        lambda v: (v["airlock_tls"] >= 2.5 * v["squid_bump"] and
                   v["airlock_tls"] >= 10 * v["mitmproxy"])
        if have(v["squid_bump"], v["mitmproxy"]) else None)
    add("HTTPS keep-alive: p50 latency", "us", ("tls_keepalive", "latency_us", "p50"))
    add("HTTPS keep-alive: p99 latency", "us", ("tls_keepalive", "latency_us", "p99"))
    add("HTTPS keep-alive: CPU per request", "us", ("tls_keepalive", "cpu_us_per_request"),
        "<= 40 us", lambda v: v["airlock_tls"] <= 40,
        note="direct column: the origin (nginx) itself")
    add(f"HTTPS new connection per request: req/s (c{cn})", "req/s",
        ("tls_newconn", "requests_per_second"), ">= 4x squid-bump (leaf cache hot)",
        lambda v: v["airlock_tls"] >= 4 * v["squid_bump"] if have(v["squid_bump"]) else None,
        note="TCP + CONNECT + full TLS handshake (no resumption) + one request, per request")
    add("HTTPS new connection: p50 latency", "us", ("tls_newconn", "latency_us", "p50"))
    add("HTTPS new connection: p99 latency", "us", ("tls_newconn", "latency_us", "p99"))
    add("HTTPS new connection: CPU per connection", "us", ("tls_newconn", "cpu_us_per_request"),
        "<= 500 us", lambda v: v["airlock_tls"] <= 500,
        note="direct column: the origin (nginx) itself")
    add("handshake, new name (leaf minted): median", "us",
        ("tls_handshake", "new_name", "handshake_us"),
        note="ClientHello to Finished after the CONNECT reply, one connection at a time; "
             "direct column: the origin's own handshake, for scale")
    add("handshake, same name again (cached): median", "us",
        ("tls_handshake", "cached_name", "handshake_us"))
    add("leaf mint cost: median of (new - cached)", "us", ("tls_handshake", "mint_us"),
        ratios=False, note="per name, its first handshake minus its second, made right after")
    return out


def _saturation_notes(results):
    """How busy the machine was during Airlock's runs: when client, origin and proxy together
    kept every core busy, the rate follows the sum of their CPU per request, not the proxy's."""
    notes = []
    cores = os.cpu_count() or 1
    for key, label in (("tls_keepalive", "keep-alive"), ("tls_newconn", "new connection")):
        a = _get(results, "airlock_tls", key)
        if not a or not a.get("seconds") or "origin_cpu_seconds" not in a:
            continue
        secs = a["seconds"]
        shares = [a["cpu_seconds"] / secs, a["origin_cpu_seconds"] / secs,
                  a["client_cpu_seconds"] / secs]
        busy = sum(shares)
        notes.append(f"  the machine during airlock's {label} run: proxy {shares[0]:.0%} + origin "
                     f"{shares[1]:.0%} + client {shares[2]:.0%} of a core = {busy:.2f} of "
                     f"{cores} cores" + (" -- saturated: the rate follows the three's CPU per "
                                         "request together" if busy > 0.9 * cores else ""))
    return notes


def table(rows_, results):
    head = ("metric", *(label for _, label in COLUMNS), "A/squid-bump", "A/mitmproxy",
            "A/direct", "goal", "met")
    data = []

    def ratio(x):
        return "-" if x is None else f"{x:.2f}x"

    for r in rows_:
        unit = r["unit"]
        data.append((
            f"{r['metric']} [{unit}]", *(_fmt_signed(r[t], unit) for t, _ in COLUMNS),
            ratio(r["airlock_over_squid_bump"]), ratio(r["airlock_over_mitmproxy"]),
            ratio(r["airlock_over_direct"]), r["goal"] or "",
            {True: "yes", False: "NO", None: ""}[r["met"]]))
    widths = [max(len(str(x[i])) for x in data + [head]) for i in range(len(head))]
    left = (0, len(head) - 2, len(head) - 1)

    def line(cells):
        return "  ".join(str(c).ljust(widths[i]) if i in left else str(c).rjust(widths[i])
                         for i, c in enumerate(cells)).rstrip()

    lines = [line(head), "  ".join("-" * w for w in widths)]
    lines.extend(line(d) for d in data)
    notes = [f"  {r['metric']}: {r['note']}" for r in rows_ if r["note"]]
    direct_ka = _get(results, "direct", "tls_keepalive")
    direct_nc = _get(results, "direct", "tls_newconn")
    for label, d in (("keep-alive", direct_ka), ("new connection", direct_nc)):
        if d and "client_cpu_share" in d:
            share = d["client_cpu_share"]
            notes.append(f"  the client's own ceiling, direct {label}: it used {share:.0%} of a "
                         "core" + (" -- the client is the bottleneck, direct is a floor"
                                   if share > 0.9 else ""))
    notes.extend(_saturation_notes(results))
    for key, label, issue in (("tls_keepalive", "keep-alive", 0.24),
                              ("tls_newconn", "new connection", 0.12)):
        sq, d = _get(results, "squid_bump", key, "requests_per_second"), \
            _get(results, "direct", key, "requests_per_second")
        if sq and d:
            notes.append(f"  squid-bump / direct, {label}: {sq / d:.2f}x (the issue saw about "
                         f"{issue}x)")
    minted = _get(results, "airlock_tls", "tls_handshake", "leaves_minted")
    if minted is not None:
        hs = _get(results, "airlock_tls", "tls_handshake")
        notes.append(f"  airlock's leaf cache over the handshake run: {minted:.0f} minted for "
                     f"{hs['names']} new names, {hs.get('leaf_cache_hits', 0):.0f} cache hits")
    if notes:
        lines += ["", "notes:", *notes]
    return "\n".join(lines)
