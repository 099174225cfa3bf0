"""A real Prometheus server (Debian's /usr/bin/prometheus) on loopback for the dashboard and
alert tests: a generated configuration scraping one target every second, a temporary TSDB,
the HTTP API for queries, and a stop by PID.

Prometheus cannot listen on port 0 and report the port, so a free port is chosen here (bound,
released, then passed with --web.listen-address); a start that fails because the port was
taken meanwhile is retried on another one.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

from . import env

PROMETHEUS = "/usr/bin/prometheus"


from .clients import closed_port as free_port  # noqa: E402  (bound, then released)


def prometheus_binary():
    if os.access(PROMETHEUS, os.X_OK):
        return PROMETHEUS
    return shutil.which("prometheus")


class PrometheusError(AssertionError):
    pass


class Prometheus:
    def __init__(self, target, job="airlock", rule_files=(), interval="1s"):
        self.tmp = tempfile.TemporaryDirectory(prefix="airlock-itest-prometheus-")
        self.dir = self.tmp.name
        self.config_path = os.path.join(self.dir, "prometheus.yml")
        self.log_path = os.path.join(self.dir, "prometheus.log")
        config = {
            "global": {"scrape_interval": interval, "evaluation_interval": interval,
                       "scrape_timeout": interval},
            "rule_files": [os.path.abspath(f) for f in rule_files],
            "scrape_configs": [{
                "job_name": job,
                "metrics_path": "/metrics",
                "scheme": "http",
                "static_configs": [{"targets": [target]}],
            }],
        }
        with open(self.config_path, "w") as f:
            yaml.safe_dump(config, f, sort_keys=False)
        self.proc = None
        self.port = None
        self._log = None
        # Queries go straight to loopback, never through a proxy from the environment.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, timeout=None):
        binary = prometheus_binary()
        if binary is None:
            raise PrometheusError("prometheus is not installed (Debian package prometheus)")
        timeout = env.t(20) if timeout is None else timeout
        last = ""
        for _ in range(3):
            self.port = free_port()
            storage = tempfile.mkdtemp(prefix="tsdb-", dir=self.dir)
            self._log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(
                [binary, "--config.file=" + self.config_path,
                 "--storage.tsdb.path=" + storage,
                 "--web.listen-address=127.0.0.1:%d" % self.port,
                 "--storage.tsdb.retention.time=1h", "--log.level=info"],
                stdout=self._log, stderr=self._log, stdin=subprocess.DEVNULL)
            if self._wait_ready(timeout):
                return self
            last = self.log()[-3000:]
            self.stop()
            if "address already in use" not in last:
                break
        raise PrometheusError("prometheus did not become ready:\n%s" % last)

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with self._opener.open(self.url("/-/ready"), timeout=2) as r:
                    if r.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def stop(self, timeout=10):
        """SIGTERM to our own process (by PID), then SIGKILL if it lingers."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None

    def cleanup(self):
        self.stop()
        self.tmp.cleanup()

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    # -- HTTP API -----------------------------------------------------------------------------

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def api(self, path, **params):
        """GET /api/v1/PATH; returns the decoded JSON (errors included: a 400/422 answer
        carries {"status": "error", "errorType": ..., "error": ...})."""
        url = self.url("/api/v1/" + path)
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        try:
            with self._opener.open(url, timeout=env.t(10)) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                return json.loads(body)
            except ValueError:
                return {"status": "error", "error": "HTTP %d: %r" % (e.code, body[:300])}

    def query(self, expr):
        return self.api("query", query=expr)

    def scalar(self, expr, default=0.0):
        """The first sample of an instant query as a float (default when empty)."""
        r = self.query(expr)
        if r.get("status") != "success":
            raise PrometheusError("query %s failed: %r" % (expr, r))
        result = r["data"]["result"]
        if not result:
            return default
        return float(result[0]["value"][1])


# -- Grafana expressions -------------------------------------------------------------------------

_GRAFANA_INTERVAL = re.compile(r"\$\{?__(rate_interval|interval|range)\}?")
_GRAFANA_VAR = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)\]\]")


def grafana_to_promql(expr, interval="1m"):
    """Replaces Grafana's built-in interval variables by `interval` and template variables
    (used with =~ in this dashboard) by `.*`."""
    out = _GRAFANA_INTERVAL.sub(interval, expr)
    out = _GRAFANA_VAR.sub(".*", out)
    if "$" in out:
        raise PrometheusError("unreplaced Grafana variable in %r -> %r" % (expr, out))
    return out


def dashboard_targets(dashboard):
    """Every (panel title, panel, target) of a dashboard, rows and nested panels included."""
    out = []

    def walk(panels):
        for p in panels or []:
            walk(p.get("panels"))
            for t in p.get("targets") or []:
                if t.get("expr"):
                    out.append((p.get("title", ""), p, t))

    walk(dashboard.get("panels"))
    return out


def alert_rules(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    return [(g["name"], r) for g in doc.get("groups", []) for r in g.get("rules", [])]
