"""The dashboards against a live system: a real Prometheus scrapes the proxy's admin port every
second and loads dashboards/alerts.yml while traffic flows (allowed, denied, an upstream error);
then every expression of every panel of dashboards/airlock-dashboard.json, every template
variable and every alert rule is evaluated through the HTTP API. No expression may error, and
the panels about requests, latency, bytes, connections and denies must have data."""

import json
import os
import re
import threading
import time
import unittest

from harness import capabilities, clients, env
from harness.ops_admin import OpsAirlock, ops_policy
from harness.ops_prometheus import (Prometheus, alert_rules, dashboard_targets,
                                    grafana_to_promql)
from harness.ops_origin import FastOriginServer
from harness.proxy import origin_rule

DASHBOARDS = os.path.join(env.REPO_ROOT, "dashboards")
DASHBOARD = os.path.join(DASHBOARDS, "airlock-dashboard.json")
ALERTS = os.path.join(DASHBOARDS, "alerts.yml")

# A panel is traffic-driven (and must show data after the traffic below) when one of its
# expressions reads one of these families.
TRAFFIC_METRICS = ("airlock_requests_total", "airlock_request_duration_seconds",
                   "airlock_request_bytes_total", "airlock_connections_active",
                   "airlock_connections_total", "airlock_upstream_errors_total")
MIN_SCRAPES = 3


refused_port = clients.closed_port


class LivePrometheusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        capabilities.require(cls, "prometheus")
        cls.started = time.monotonic()
        cls.origin = FastOriginServer().start()
        cls.addClassCleanup(cls.origin.stop)
        cls.dead_port = refused_port()
        policy = ops_policy(
            [origin_rule(cls.origin.port),
             origin_rule(cls.dead_port, name="dead", hosts=["dead.test"])],
            agents={"default": {"rules": ["origin", "dead"]}})
        cls.proxy = OpsAirlock(policy, name="prometheus")
        cls.addClassCleanup(cls.proxy.cleanup)
        cls.proxy.start()
        cls.prom = Prometheus(cls.proxy.admin, rule_files=[ALERTS])
        cls.addClassCleanup(cls.prom.cleanup)
        cls.prom.start()
        cls.traffic = {"allowed": 0, "denied": 0, "upstream_error": 0, "other": []}
        stop = threading.Event()
        worker = threading.Thread(target=cls._traffic, args=(stop,), daemon=True)
        worker.start()
        try:
            cls.scrapes = cls._wait_scrapes(MIN_SCRAPES + 1, env.t(25))
        finally:
            stop.set()
            worker.join(env.t(10))
        # One more scrape after the traffic so the last counters are in the TSDB too, and the
        # alert rules evaluated at least once more.
        cls._wait_scrapes(cls.scrapes + 1, env.t(5))

    @classmethod
    def tearDownClass(cls):
        # Prometheus first (by PID), so that the proxy's exit is not a scrape target going away
        # under it; then the proxy must exit cleanly with no sanitizer report.
        cls.prom.stop()
        rc = cls.proxy.stop()
        reports = cls.proxy.sanitizer_reports()
        if rc != 0 or reports:
            raise AssertionError("proxy exit %s; sanitizer reports: %s\n%s" % (
                rc, reports[:10], cls.proxy.stderr()[-4000:]))

    @classmethod
    def _traffic(cls, stop):
        """Bounded: at most 3000 requests and 30 s."""
        o = cls.origin.port
        deadline = time.monotonic() + env.t(30)
        keep = None
        n = 0
        while not stop.is_set() and n < 3000 and time.monotonic() < deadline:
            n += 1
            try:
                if keep is None:
                    keep = clients.RawClient(cls.proxy.port)
                keep.send(("GET http://origin.test:%d/bytes/%d HTTP/1.1\r\nHost: origin.test:%d"
                           "\r\n\r\n" % (o, 1000 + n % 7, o)).encode())
                r = keep.read_response()
                if r is not None and r.status == 200:
                    cls.traffic["allowed"] += 1
                else:
                    cls.traffic["other"].append(r)
                    keep.close()
                    keep = None
                for url, key, status in (
                        ("http://denied.test:%d/echo" % o, "denied", 403),
                        ("http://origin.test:%d/not-a-path" % o, "denied", 403),
                        ("http://dead.test:%d/echo" % cls.dead_port, "upstream_error", 502)):
                    if n % 3 and key == "upstream_error":
                        continue
                    [resp], c = clients.exchange(cls.proxy.port, (
                        "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                        % (url, url.split("/")[2])).encode())
                    c.close()
                    if resp.status == status:
                        cls.traffic[key] += 1
                    else:
                        cls.traffic["other"].append(resp)
            except (OSError, ValueError) as e:
                cls.traffic["other"].append(repr(e))
                keep = None
            stop.wait(0.02)
        if keep is not None:
            keep.close()

    @classmethod
    def _wait_scrapes(cls, count, timeout):
        deadline = time.monotonic() + timeout
        got = 0
        while time.monotonic() < deadline:
            got = cls.prom.scalar('count_over_time(up{job="airlock"}[5m])')
            if got >= count:
                return int(got)
            time.sleep(0.2)
        raise AssertionError("Prometheus scraped %d times in %.0fs (wanted %d)\nprometheus "
                             "log:\n%s" % (got, timeout, count, cls.prom.log()[-3000:]))

    # -- the set-up itself --------------------------------------------------------------------

    def test_setup_was_real(self):
        self.assertGreaterEqual(self.scrapes, MIN_SCRAPES)
        self.assertEqual(self.prom.scalar('min_over_time(up{job="airlock"}[5m])'), 1.0,
                         "a scrape of the admin port failed")
        self.assertGreater(self.traffic["allowed"], 10, self.traffic)
        self.assertGreater(self.traffic["denied"], 10, self.traffic)
        self.assertGreater(self.traffic["upstream_error"], 3, self.traffic)
        self.assertEqual(self.traffic["other"], [], "unexpected answers during the traffic")
        targets = self.prom.api("targets")
        [active] = targets["data"]["activeTargets"]
        self.assertEqual(active["health"], "up", active)
        self.assertEqual(active["lastError"], "", active)
        self.assertLess(time.monotonic() - self.started, env.t(60))

    # -- the dashboard ------------------------------------------------------------------------

    def test_every_panel_expression(self):
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        targets = dashboard_targets(dashboard)
        self.assertGreater(len(targets), 10, "found too few panel expressions")
        empty_ok = []
        for title, panel, target in targets:
            expr = grafana_to_promql(target["expr"])
            with self.subTest(panel=title, ref=target.get("refId"), expr=expr):
                r = self.prom.query(expr)
                self.assertEqual(r.get("status"), "success",
                                 "panel %r: %s\n-> %r" % (title, expr, r))
                result = r["data"]["result"]
                traffic = any(m in t["expr"] for t in panel.get("targets", [])
                              for m in TRAFFIC_METRICS)
                if traffic:
                    self.assertTrue(result, "traffic-driven panel %r has no data: %s"
                                    % (title, expr))
                    if "histogram_quantile" in expr and "request_duration" in expr:
                        values = [float(s["value"][1]) for s in result]
                        self.assertTrue(any(v == v for v in values),  # not all NaN
                                        "latency panel %r is NaN: %r" % (title, result))
                elif not result:
                    empty_ok.append(title)
        # Panels without data are only the ones for what this traffic does not do (tunnels,
        # TLS interception).
        for title in empty_ok:
            self.assertRegex(title, r"(?i)tunnel|tls|leaf", "unexpectedly empty: %r" % empty_ok)

    def test_template_variables(self):
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        variables = [v for v in dashboard.get("templating", {}).get("list", [])
                     if v.get("type") == "query"]
        self.assertTrue(variables)
        for v in variables:
            query = v.get("query")
            query = query.get("query") if isinstance(query, dict) else query
            with self.subTest(variable=v["name"], query=query):
                m = re.match(r"^\s*label_values\((.*),\s*(\w+)\s*\)\s*$", query, re.S)
                self.assertIsNotNone(m, "not a label_values() query: %r" % query)
                selector, label = grafana_to_promql(m.group(1)), m.group(2)
                r = self.prom.query(selector)
                self.assertEqual(r.get("status"), "success", "%s -> %r" % (selector, r))
                values = {s["metric"].get(label) for s in r["data"]["result"]}
                values.discard(None)
                self.assertTrue(values, "variable %s has no values: %s" % (v["name"], selector))

    # -- the alert rules ----------------------------------------------------------------------

    def test_every_alert_expression(self):
        rules = alert_rules(ALERTS)
        self.assertTrue(rules)
        for group, rule in rules:
            with self.subTest(alert=rule.get("alert") or rule.get("record")):
                r = self.prom.query(rule["expr"])
                self.assertEqual(r.get("status"), "success", "%s: %r" % (rule["expr"], r))
        # The server loaded the same file and evaluates every rule without error.
        loaded = self.prom.api("rules")
        self.assertEqual(loaded.get("status"), "success", loaded)
        seen = {}
        for g in loaded["data"]["groups"]:
            for r in g["rules"]:
                seen[r["name"]] = r
        self.assertEqual(set(seen), {r.get("alert") or r.get("record") for _, r in rules})
        for name, r in seen.items():
            with self.subTest(loaded=name):
                self.assertEqual(r.get("health"), "ok", r)
                self.assertFalse(r.get("lastError"), r)
        # Nothing about this healthy proxy is down.
        self.assertEqual(seen["AirlockDown"]["state"], "inactive", seen["AirlockDown"])

    def test_reload_failure_alert_goes_pending(self):
        """AirlockReloadFailing: a refused reload shows up in the series the alert reads."""
        before = self.prom.scalar('airlock_policy_reload_failures_total{job="airlock"}')
        path = os.path.realpath(self.proxy.config_path)
        with open(path) as f:
            good = f.read()
        try:
            with open(path, "w") as f:
                f.write(good + "\nnot_a_key: 1\n")
            r = self.proxy.admin_call("POST", "/reload")
            self.assertEqual(r.status, 422, r)
        finally:
            with open(path, "w") as f:
                f.write(good)
        expr = 'increase(airlock_policy_reload_failures_total{job="airlock"}[15m]) > 0'
        deadline = time.monotonic() + env.t(8)
        result = []
        while time.monotonic() < deadline and not result:
            result = self.prom.query(expr)["data"]["result"]
            time.sleep(0.25)
        self.assertTrue(result, "the failure never reached %s (before: %s)" % (expr, before))
        deadline = time.monotonic() + env.t(8)
        state = None
        while time.monotonic() < deadline:
            for g in self.prom.api("rules")["data"]["groups"]:
                for rule in g["rules"]:
                    if rule["name"] == "AirlockReloadFailing":
                        state = rule["state"]
            if state in ("pending", "firing"):
                break
            time.sleep(0.25)
        self.assertIn(state, ("pending", "firing"))


if __name__ == "__main__":
    unittest.main()
