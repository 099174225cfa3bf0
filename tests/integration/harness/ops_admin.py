"""Operations helpers: the admin port, the Prometheus text format, and policy files laid out
the way operators and Kubernetes lay them out, so each reload trigger can be fired on its own.

OpsAirlock keeps the policy in a folder of its own (DIR/etc/) with nothing else in it: the
proxy watches the policy's folder, and the harness's audit and stderr files (which the proxy
writes to all the time) would otherwise be changes in that folder too. Layouts:

- "plain":     DIR/etc/policy.yaml is a regular file (rewrite in place, write-and-rename);
- "linked":    DIR/etc/policy.yaml -> ../store/policy-N.yaml. Writing the store file in place
               changes what the path reads without any event in the watched folder, so a
               SIGHUP or POST /reload is the only trigger (no second, file-triggered reload
               races it); swapping the link ("relink") is a file change the watcher sees;
- "configmap": DIR/etc/policy.yaml -> ..data/policy.yaml, ..data -> ..2026_v1 (a Kubernetes
               ConfigMap volume); "swap" writes ..2026_vN and renames a new ..data link over
               the old one, then removes the old folder, as the kubelet does.
"""

import glob
import hashlib
import http.client
import json
import os
import re
import time

import yaml

from . import env
from .clients import header_value
from .proxy import Airlock, make_policy

ADMIN_LISTEN = {"proxy": "127.0.0.1:0", "admin": "127.0.0.1:0"}


def ops_policy(rules, **kw):
    """make_policy() with the admin listener on an ephemeral loopback port."""
    kw.setdefault("listen", dict(ADMIN_LISTEN))
    return make_policy(rules, **kw)


# -- HTTP to the admin port ----------------------------------------------------------------------


class AdminResponse:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # list of (name, value)
        self.body = body

    def header(self, name, default=None):
        return header_value(self.headers, name, default)

    @property
    def content_type(self):
        return self.header("Content-Type")

    def text(self):
        return self.body.decode("utf-8")

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<AdminResponse %s headers=%r body=%r>" % (self.status, self.headers,
                                                          self.body[:300])


def admin_call(address, method, path, body=None, timeout=None):
    """One request to the admin listener at "host:port" on a fresh connection."""
    host, _, port = address.rpartition(":")
    conn = http.client.HTTPConnection(host.strip("[]"), int(port),
                                      timeout=env.t(10) if timeout is None else timeout)
    try:
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        data = resp.read()
        return AdminResponse(resp.status, resp.getheaders(), data)
    finally:
        conn.close()


# -- Prometheus text format (0.0.4) --------------------------------------------------------------

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


class Sample:
    def __init__(self, name, labels, value):
        self.name = name
        self.labels = labels
        self.value = value

    def __repr__(self):
        return "%s%r %s" % (self.name, self.labels, self.value)


def _parse_labels(text, pos):
    """Parses `{a="x",b="y"}` from text[pos] == '{'. Returns (labels, position after '}')."""
    labels = {}
    pos += 1
    while True:
        while pos < len(text) and text[pos] in " ,":
            pos += 1
        if text[pos] == "}":
            return labels, pos + 1
        m = _NAME.match(text, pos)
        if not m:
            raise ValueError("bad label name at %d in %r" % (pos, text))
        name = m.group(0)
        pos = m.end()
        if text[pos] != "=" or text[pos + 1] != '"':
            raise ValueError("bad label %r in %r" % (name, text))
        pos += 2
        value = []
        while text[pos] != '"':
            if text[pos] == "\\":
                nxt = text[pos + 1]
                value.append({"n": "\n", "\\": "\\", '"': '"'}.get(nxt, "\\" + nxt))
                pos += 2
            else:
                value.append(text[pos])
                pos += 1
        labels[name] = "".join(value)
        pos += 1


def parse_metrics(text):
    """Returns (samples, types): every sample line, and metric family -> TYPE."""
    samples, types = [], {}
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 4 and parts[1] == "TYPE":
                types[parts[2]] = parts[3].strip()
            continue
        m = _NAME.match(line)
        if not m:
            raise ValueError("bad sample line %r" % line)
        name, pos = m.group(0), m.end()
        labels = {}
        if pos < len(line) and line[pos] == "{":
            labels, pos = _parse_labels(line, pos)
        fields = line[pos:].split()
        samples.append(Sample(name, labels, float(fields[0])))
    return samples, types


class Metrics:
    """A parsed /metrics snapshot."""

    def __init__(self, text):
        self.text = text
        self.samples, self.types = parse_metrics(text)

    def series(self, name, **labels):
        return [s for s in self.samples
                if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]

    def value(self, name, **labels):
        """Sum of the samples of `name` whose labels include `labels` (0 when none)."""
        return sum(s.value for s in self.series(name, **labels))

    def has(self, name, **labels):
        return bool(self.series(name, **labels))


# -- a proxy with an admin port and a policy in a folder of its own ------------------------------


def _atomic_symlink(target, link):
    tmp = link + ".tmp-link"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.rename(tmp, link)


class OpsAirlock(Airlock):
    LAYOUTS = ("plain", "linked", "configmap")

    def __init__(self, policy, layout="plain", audit_beside_policy=False, **kw):
        """audit_beside_policy puts the audit file into the policy's folder (as a deployment
        that keeps everything in one working folder would)."""
        if layout not in self.LAYOUTS:
            raise ValueError(layout)
        super().__init__(policy, **kw)
        self.layout = layout
        self.generation = 0
        self.etc = os.path.join(self.dir, "etc")
        self.store = os.path.join(self.dir, "store")
        os.makedirs(self.etc)
        os.makedirs(self.store)
        os.unlink(self.config_path)  # Airlock wrote it beside the audit file
        self.config_path = os.path.join(self.etc, "policy.yaml")
        if audit_beside_policy and self.policy is not None:
            self.audit_path = os.path.join(self.etc, "audit.jsonl")
            self.policy["audit"] = {"path": self.audit_path}
            self.policy_text = yaml.safe_dump(self.policy, sort_keys=False)
        self._store_file = None
        self._data_dir = None
        self._place(self.policy_text.encode(), how="initial")
        self.versions = [self.policy_version()]

    # -- writing policies ---------------------------------------------------------------------

    def policy_bytes(self, policy, comment=None):
        """YAML bytes for a dict (the audit path of the first policy kept), a string or bytes
        (as they are: e.g. not UTF-8), with a unique comment line so that no two generations
        have the same bytes (the proxy only reloads on a file change when the bytes differ, and
        the version is their digest)."""
        self.generation += 1
        if isinstance(policy, dict):
            policy = dict(policy)
            policy.setdefault("audit", {"path": self.audit_path})
            text = yaml.safe_dump(policy, sort_keys=False)
        else:
            text = policy
        head = "# generation %d%s\n" % (self.generation, (" " + comment) if comment else "")
        return head.encode() + (text if isinstance(text, bytes) else text.encode())

    def write_policy(self, policy, how, comment=None):
        """Writes a new policy (dict or YAML text) to the policy path. how:
        "inplace" (truncate and write the file the path resolves to), "rename" (plain layout:
        write a temp file in the same folder and rename it over the path), "relink" (linked
        layout: a new store file, then a new link renamed over the path), "swap" (configmap
        layout: a new ..2026_vN folder and ..data renamed). Returns (bytes, sha256 hex)."""
        data = self.policy_bytes(policy, comment)
        self._place(data, how)
        return data, hashlib.sha256(data).hexdigest()

    def _place(self, data, how):
        if how == "initial":
            if self.layout == "plain":
                with open(self.config_path, "wb") as f:
                    f.write(data)
            elif self.layout == "linked":
                self._new_store_file(data)
                os.symlink(os.path.join("..", "store", os.path.basename(self._store_file)),
                           self.config_path)
            else:
                self._new_data_dir(data)
                os.symlink(os.path.basename(self._data_dir), os.path.join(self.etc, "..data"))
                os.symlink(os.path.join("..data", "policy.yaml"), self.config_path)
            return
        if how == "inplace":
            target = os.path.realpath(self.config_path)
            with open(target, "r+b") as f:
                f.truncate(0)
                f.write(data)
        elif how == "rename":
            assert self.layout == "plain", how
            tmp = os.path.join(self.etc, ".policy.yaml.swp")
            with open(tmp, "wb") as f:
                f.write(data)
            os.rename(tmp, self.config_path)
        elif how == "relink":
            assert self.layout == "linked", how
            self._new_store_file(data)
            _atomic_symlink(os.path.join("..", "store", os.path.basename(self._store_file)),
                            self.config_path)
        elif how == "swap":
            assert self.layout == "configmap", how
            old = self._data_dir
            self._new_data_dir(data)
            _atomic_symlink(os.path.basename(self._data_dir), os.path.join(self.etc, "..data"))
            os.unlink(os.path.join(old, "policy.yaml"))
            os.rmdir(old)
        else:
            raise ValueError(how)

    def _new_store_file(self, data):
        self._store_file = os.path.join(self.store, "policy-%d.yaml" % self.generation)
        with open(self._store_file, "wb") as f:
            f.write(data)

    def _new_data_dir(self, data):
        self._data_dir = os.path.join(self.etc, "..2026_v%d" % (self.generation + 1))
        os.makedirs(self._data_dir)
        with open(os.path.join(self._data_dir, "policy.yaml"), "wb") as f:
            f.write(data)

    def write_bad_policy(self, policy, how):
        """Writes `policy` with an invalid regex (see bad_policy_text). Returns (bytes,
        sha256, line of the bad value in the file, key path the loader must name)."""
        policy = dict(policy)
        policy.setdefault("audit", {"path": self.audit_path})
        text, line, key = bad_policy_text(policy)
        data, version = self.write_policy(text, how)
        return data, version, line + 1, key  # + the generation comment line

    def policy_version(self):
        with open(self.config_path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    # -- start --------------------------------------------------------------------------------

    def start(self, timeout=None, wait_watch=True):
        """Starts the proxy; with wait_watch, also waits until its policy watcher is in place.
        The proxy prints its listening line before it sets up the watch (and reads the bytes
        the watch compares against then), so a change made in between is never picked up by
        the watcher: see test_operations.WatcherStartupTest. Tests of other things wait."""
        super().start(timeout)
        if wait_watch:
            self.wait_watching()
        return self

    def inotify_watches(self):
        """Number of inotify watches the proxy holds (from /proc/PID/fdinfo)."""
        n = 0
        fd_dir = "/proc/%d/fd" % self.pid
        for fd in os.listdir(fd_dir):
            try:
                if os.readlink(os.path.join(fd_dir, fd)) != "anon_inode:inotify":
                    continue
                with open("/proc/%d/fdinfo/%s" % (self.pid, fd)) as f:
                    n += sum(1 for line in f if line.startswith("inotify wd:"))
            except OSError:
                continue
        return n

    def wait_watching(self, timeout=None):
        if not self.wait_for(self.inotify_watches, timeout):
            raise AssertionError("the proxy set up no inotify watch within %.1fs; stderr:\n%s"
                                 % (env.t(5) if timeout is None else timeout,
                                    self.stderr()[-2000:]))
        # The watch is added just before the watcher reads the file's bytes to compare with.
        time.sleep(0.05)

    # -- the admin port -----------------------------------------------------------------------

    def admin_call(self, method, path, body=None, timeout=None):
        assert self.admin and self.admin != "off", "this proxy has no admin listener"
        return admin_call(self.admin, method, path, body, timeout)

    @property
    def admin_port(self):
        return int(self.admin.rsplit(":", 1)[1])

    def metrics(self):
        r = self.admin_call("GET", "/metrics")
        if r.status != 200:
            raise AssertionError("GET /metrics: %r" % r)
        return Metrics(r.text())

    def policy_status(self):
        r = self.admin_call("GET", "/policy")
        if r.status != 200:
            raise AssertionError("GET /policy: %r" % r)
        return r.json()

    def reload_count(self, result, trigger=None):
        labels = {"result": result}
        if trigger is not None:
            labels["trigger"] = trigger
        return self.metrics().value("airlock_policy_reloads_total", **labels)

    def wait_for(self, predicate, timeout=None, interval=0.02):
        """Polls predicate() until it returns something true; returns it, or the last false
        value after `timeout` seconds."""
        deadline = time.monotonic() + (env.t(5) if timeout is None else timeout)
        while True:
            value = predicate()
            if value or time.monotonic() >= deadline:
                return value
            time.sleep(interval)

    def wait_version(self, version, timeout=None):
        """Waits until /policy reports `version` in force; returns the /policy object."""
        status = self.wait_for(lambda: (lambda s: s if s.get("version") == version else None)(
            self.policy_status()), timeout)
        if not status:
            raise AssertionError("policy %s not in force after %.1fs; /policy: %r\nstderr:\n%s"
                                 % (version[:12], env.t(5) if timeout is None else timeout,
                                    self.policy_status(), self.stderr()[-3000:]))
        return status

    def wait_reload_count(self, result, trigger, at_least, timeout=None):
        count = self.wait_for(lambda: (lambda n: n if n >= at_least else 0)(
            self.reload_count(result, trigger)), timeout)
        if not count:
            raise AssertionError("airlock_policy_reloads_total{result=%s,trigger=%s} did not "
                                 "reach %d (is %s)\nstderr:\n%s"
                                 % (result, trigger, at_least, self.reload_count(result, trigger),
                                    self.stderr()[-3000:]))
        return count


def bad_policy_text(policy):
    """YAML of `policy` with an invalid regex in the first path of its last rule. Returns
    (text, line, key): the 1-based line of the bad value (before any generation comment is
    prepended) and the key path the loader must name."""
    policy = json.loads(json.dumps(policy))
    index = len(policy["rules"]) - 1
    policy["rules"][index]["paths"] = ["^/(unclosed-group$"]
    text = yaml.safe_dump(policy, sort_keys=False)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "unclosed-group" in l)
    return text, line, "rules[%d].paths[0]" % index


def admin_router_source():
    """The admin port's router, as text: admin_routes.cpp and admin_server.cpp (the listener)."""
    source = ""
    for name in ("admin_server.cpp", "admin_routes.cpp"):
        path = os.path.join(env.REPO_ROOT, "src", "telemetry", name)
        if os.path.exists(path):
            with open(path) as f:
                source += f.read()
    return source


def admin_paths():
    """The exact paths the admin port answers. Never empty: a router moved elsewhere is an error
    here, not an empty set that every membership test would fail on obscurely."""
    paths = set(re.findall(r'path == "(/[a-z]*)"', admin_router_source()))
    if not paths:
        raise AssertionError("no admin routes found in src/telemetry/admin_{server,routes}.cpp")
    return paths


def exported_metric_names():
    """The metric names the proxy defines (`.Name("airlock_...")` in src/telemetry/metrics*.cpp,
    wherever the families are registered). Never empty, for the same reason as admin_paths."""
    names = set()
    for path in glob.glob(os.path.join(env.REPO_ROOT, "src", "telemetry", "metrics*.cpp")):
        with open(path) as f:
            names |= set(re.findall(r'\.Name\("(airlock_[a-z0-9_]+)"\)', f.read()))
    if not names:
        raise AssertionError("no metric families found in src/telemetry/metrics*.cpp")
    return names
