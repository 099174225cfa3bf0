#!/usr/bin/python3
"""Checks dashboards/airlock-dashboard.json and dashboards/alerts.yml against the metrics the
code exports.

The exported names and labels come from the exposition printed by airlock_telemetry_dump_metrics
(a metrics object on which every member function was called once), so a panel or an alert that
names a metric, a label or a label value the proxy does not export fails here, not silently in
Grafana. When promtool is installed every dashboard expression is also parsed by Prometheus
itself (as recording rules in a temporary file).

Exit status: 0 ok, 1 problems found (listed on stderr), 3 the check itself failed.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Labels Prometheus attaches at scrape time, and the histogram bucket label.
TARGET_LABELS = {"job", "instance"}
# Labels whose values form a closed set in the code: a matcher must use one of the values seen
# in the exposition (all of them are pre-created or produced by the dump).
CLOSED_LABELS = {"decision", "direction", "result"}
# Metrics Prometheus itself provides for every target.
PROMETHEUS_METRICS = {"up"}

PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                   "and", "or", "unless", "offset", "inf", "nan", "atan2"}
PROMQL_FUNCTIONS = {
    # aggregations
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile",
    # functions
    "abs", "absent", "absent_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min",
    "day_of_month", "day_of_week", "day_of_year", "days_in_month", "delta", "deriv", "exp",
    "floor", "histogram_quantile", "holt_winters", "hour", "idelta", "increase", "irate",
    "label_join", "label_replace", "ln", "log2", "log10", "minute", "month", "predict_linear",
    "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc", "sqrt", "time",
    "timestamp", "vector", "year", "avg_over_time", "min_over_time", "max_over_time",
    "sum_over_time", "count_over_time", "quantile_over_time", "stddev_over_time",
    "stdvar_over_time", "last_over_time", "present_over_time",
    # Grafana variable query helpers (templating only)
    "label_values", "label_names", "metrics", "query_result",
}

GRAFANA_INTERVALS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


class Exported:
    """Metric names and labels parsed from a text exposition."""

    def __init__(self, text):
        self.types = {}    # family name -> type
        self.labels = {}   # series name -> set of label names
        self.values = {}   # label name -> set of values
        for line in text.splitlines():
            m = re.match(r"# TYPE (\S+) (\S+)$", line)
            if m:
                self.types[m.group(1)] = m.group(2)
                continue
            if not line or line.startswith("#"):
                continue
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ", line)
            if not m:
                raise ValueError(f"cannot parse exposition line: {line!r}")
            names = self.labels.setdefault(m.group(1), set())
            for name, value in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""):
                names.add(name)
                self.values.setdefault(name, set()).add(value)
        if not self.types:
            raise ValueError("the exposition has no # TYPE lines")
        # A family with no series is not exported at all (prometheus-cpp omits it).
        for family, kind in self.types.items():
            expected = ([family + s for s in ("_bucket", "_sum", "_count")]
                        if kind == "histogram" else [family])
            for name in expected:
                if name not in self.labels:
                    raise ValueError(f"family {family} has no series {name} in the dump")

    def all_labels(self):
        out = set(TARGET_LABELS)
        for names in self.labels.values():
            out |= names
        return out


def strip_strings(expr):
    return re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)


def substitute_variables(expr):
    for var, value in GRAFANA_INTERVALS.items():
        expr = expr.replace(var, value)
    # Other template variables only appear inside label matcher strings ("$instance").
    return re.sub(r"\$\{\w+(?::\w+)?\}|\$\w+", ".*", expr)


def check_expr(expr, exported, where, errors, extra_metrics=frozenset()):
    """Appends to `errors` every metric, label or closed label value in `expr` that is not
    exported. Returns the set of metric names used."""
    known_metrics = set(exported.labels) | set(extra_metrics)
    all_labels = exported.all_labels()
    used = set()
    expr = substitute_variables(expr)

    # Selectors with label matchers: check each label against that metric's labels.
    for m in re.finditer(r'([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}',
                         expr):
        metric = m.group(1)
        allowed = all_labels
        if metric and metric in exported.labels:
            allowed = exported.labels[metric] | TARGET_LABELS
        elif metric and metric in extra_metrics:
            allowed = TARGET_LABELS
        for label, op, value in re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"',
                                           m.group(2)):
            if label not in allowed:
                errors.append(f"{where}: label '{label}' is not exported"
                              + (f" by {metric}" if metric else "") + f": {expr}")
            if label in CLOSED_LABELS and op in ("=", "=~"):
                alternatives = value.split("|") if op == "=~" else [value]
                for alt in alternatives:
                    if re.fullmatch(r"\w+", alt) and alt not in exported.values.get(label, ()):
                        errors.append(f"{where}: {label}=\"{alt}\" is never exported "
                                      f"(known: {sorted(exported.values.get(label, ()))})")

    bare = strip_strings(expr)
    bare = re.sub(r"\{[^{}]*\}", " ", bare)            # matchers (checked above)
    bare = re.sub(r"\[[^\]]*\]", " ", bare)            # range / subquery durations
    for m in re.finditer(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)",
                         bare):
        for label in re.findall(r"[a-zA-Z_]\w*", m.group(2)):
            if label not in all_labels:
                errors.append(f"{where}: grouping label '{label}' is not exported: {expr}")
    bare = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", bare)

    for m in re.finditer(r"(?<![\w.:])([a-zA-Z_:][a-zA-Z0-9_:]*)", bare):
        name = m.group(1)
        rest = bare[m.end():].lstrip()
        if name in PROMQL_KEYWORDS:
            continue
        if rest.startswith("("):
            if name not in PROMQL_FUNCTIONS:
                errors.append(f"{where}: unknown function '{name}': {expr}")
            continue
        if name in known_metrics:
            used.add(name)
            continue
        errors.append(f"{where}: unknown metric '{name}' (not exported): {expr}")
    return used


def walk_panels(panels):
    for p in panels:
        yield p
        yield from walk_panels(p.get("panels", []))


def check_dashboard(path, exported, errors):
    with open(path, encoding="utf-8") as f:
        dash = json.load(f)
    exprs = []  # (where, expr) for the promtool syntax check

    inputs = [i for i in dash.get("__inputs", []) if i.get("pluginId") == "prometheus"]
    if not inputs:
        errors.append(f"{path}: __inputs has no prometheus data source input")
    variables = dash.get("templating", {}).get("list", [])
    ds_vars = [v for v in variables if v.get("name") == "datasource"]
    if not ds_vars or ds_vars[0].get("type") != "datasource" or \
            ds_vars[0].get("query") != "prometheus":
        errors.append(f"{path}: templating needs a variable 'datasource' of type datasource "
                      "with query prometheus")

    def check_ds(obj, where):
        ds = obj.get("datasource")
        if not isinstance(ds, dict) or ds.get("uid") != "${datasource}":
            errors.append(f"{where}: datasource must be {{\"uid\": \"${{datasource}}\"}}, "
                          f"got {ds!r}")

    for v in variables:
        if v.get("type") != "query":
            continue
        where = f"{path}: variable {v.get('name')}"
        check_ds(v, where)
        query = v.get("query")
        query = query.get("query") if isinstance(query, dict) else query
        if not query:
            errors.append(f"{where}: empty query")
            continue
        # Grafana's label_values(selector, label): a selector plus a label name.
        m = re.fullmatch(r"\s*label_values\((.*),\s*([a-zA-Z_]\w*)\s*\)\s*", query)
        if not m:
            errors.append(f"{where}: expected label_values(selector, label): {query}")
            continue
        used = check_expr(m.group(1), exported, where, errors)
        if not any(u.startswith("airlock_") for u in used):
            errors.append(f"{where}: query names no airlock metric: {query}")
        label = m.group(2)
        if not any(label in exported.labels.get(u, set()) | TARGET_LABELS for u in used):
            errors.append(f"{where}: label '{label}' is not exported by {sorted(used)}")

    ids = set()
    count = 0
    for p in walk_panels(dash.get("panels", [])):
        pid = p.get("id")
        where = f"{path}: panel {pid} '{p.get('title')}'"
        if pid in ids:
            errors.append(f"{where}: duplicate panel id")
        ids.add(pid)
        gp = p.get("gridPos", {})
        if not all(k in gp for k in ("h", "w", "x", "y")) or gp["x"] + gp["w"] > 24:
            errors.append(f"{where}: bad gridPos {gp}")
        if p.get("type") in ("row", "text"):
            continue
        count += 1
        check_ds(p, where)
        targets = p.get("targets") or []
        if not targets:
            errors.append(f"{where}: no targets")
        for t in targets:
            twhere = f"{where} target {t.get('refId')}"
            check_ds(t, twhere)
            expr = (t.get("expr") or "").strip()
            if not expr:
                errors.append(f"{twhere}: empty expr")
                continue
            used = check_expr(expr, exported, twhere, errors)
            if not any(u.startswith("airlock_") for u in used):
                errors.append(f"{twhere}: names no airlock metric: {expr}")
            exprs.append((f"panel {pid} {t.get('refId')}", substitute_variables(expr)))
    if count == 0:
        errors.append(f"{path}: no panels")
    return exprs


def check_rules(path, exported, errors):
    try:
        import yaml  # Debian python3-yaml, for /usr/bin/python3
    except ImportError:
        print("note: python3-yaml missing, alert rules not checked", file=sys.stderr)
        return
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    n = 0
    for group in doc.get("groups", []):
        for rule in group.get("rules", []):
            n += 1
            name = rule.get("alert") or rule.get("record")
            where = f"{path}: {name}"
            used = check_expr(rule.get("expr", ""), exported, where, errors, PROMETHEUS_METRICS)
            if not used:
                errors.append(f"{where}: names no metric")
            if "alert" in rule:
                for key in ("for",):
                    if key not in rule:
                        errors.append(f"{where}: missing '{key}'")
                if "severity" not in rule.get("labels", {}):
                    errors.append(f"{where}: missing labels.severity")
                ann = rule.get("annotations", {})
                for key in ("summary", "description"):
                    if key not in ann:
                        errors.append(f"{where}: missing annotations.{key}")
    if n == 0:
        errors.append(f"{path}: no rules")


def promtool_syntax(exprs, errors):
    promtool = shutil.which("promtool") or (
        "/usr/bin/promtool" if os.access("/usr/bin/promtool", os.X_OK) else None)
    if not promtool:
        print("note: promtool not found, dashboard PromQL syntax not checked", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "dashboard-rules.yml")
        with open(rules, "w", encoding="utf-8") as f:
            f.write("groups:\n  - name: dashboard\n    rules:\n")
            for i, (where, expr) in enumerate(exprs):
                f.write(f"      - record: airlock_dashboard:expr_{i}\n")
                f.write(f"        expr: {json.dumps(expr)}\n")
        r = subprocess.run([promtool, "check", "rules", rules], capture_output=True, text=True)
        if r.returncode != 0:
            listing = "\n".join(f"  expr_{i} = {w}" for i, (w, _) in enumerate(exprs))
            errors.append(f"promtool rejects a dashboard expression:\n{r.stdout}{r.stderr}"
                          f"{listing}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", required=True, help="airlock_telemetry_dump_metrics binary")
    ap.add_argument("--dashboard", action="append", default=[])
    ap.add_argument("--rules", action="append", default=[])
    args = ap.parse_args()

    text = subprocess.run([args.dump], check=True, capture_output=True, text=True).stdout
    exported = Exported(text)
    errors = []
    exprs = []
    for d in args.dashboard:
        exprs += check_dashboard(d, exported, errors)
    for r in args.rules:
        check_rules(r, exported, errors)
    if exprs:
        promtool_syntax(exprs, errors)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if errors:
        print(f"{len(errors)} problem(s)", file=sys.stderr)
        return 1
    print(f"ok: {len(exprs)} dashboard expressions and {len(args.rules)} rule file(s) use only "
          f"the {len(exported.types)} exported families")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except Exception as e:  # the check itself broke: say so, do not look like a finding
        print(f"check_dashboard.py failed: {e!r}", file=sys.stderr)
        sys.exit(3)
