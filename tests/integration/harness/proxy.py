"""Starts the real `airlock proxy` with a generated policy and watches it.

Airlock(policy).start() writes policy.yaml (and the audit file) into a fresh temp dir, runs
`$AIRLOCK_BIN proxy --config policy.yaml`, waits for the one `listening proxy=HOST:PORT
admin=...` line on stdout, and keeps stderr in a file for assertions. stop() sends SIGTERM
and waits; a proxy that does not exit in time is killed and the stop reports it.
"""

import copy
import hashlib
import json
import os
import re
import select
import signal
import subprocess
import tempfile
import time

import yaml

from . import env

LISTENING = re.compile(r"^listening proxy=(\S+):(\d+) admin=(\S+)$")

# Every reason name the proxy may answer with: (HTTP status, RFC 9209 Proxy-Status token).
# This is the contract (src/core/errc.cpp); the tests check answers against it.
REASONS = {
    "host_denied": (403, "http_request_denied"),
    "port_denied": (403, "http_request_denied"),
    "scheme_denied": (403, "http_request_denied"),
    "method_denied": (403, "http_request_denied"),
    "path_denied": (403, "http_request_denied"),
    "upgrade_denied": (403, "http_request_denied"),
    "needs_inspection": (403, "http_request_denied"),
    "sni_mismatch": (403, "http_request_denied"),
    "not_tls": (403, "http_request_denied"),
    "binary_denied": (403, "http_request_denied"),
    "destination_ip_prohibited": (403, "destination_ip_prohibited"),
    "auth_required": (407, "http_request_denied"),
    "query_denied": (403, "http_request_denied"),
    "header_denied": (403, "http_request_denied"),
    "body_denied": (403, "http_request_denied"),
    "rate_limited": (429, "http_request_denied"),
    "quota_exceeded": (429, "http_request_denied"),
    "concurrency_limited": (429, "connection_limit_reached"),
    "agent_suspended": (429, "http_request_denied"),
    "agent_stopped": (403, "http_request_denied"),
    "placeholder_refused": (403, "http_request_denied"),
    "placeholder_misplaced": (403, "http_request_denied"),
    "placeholder_required": (403, "http_request_denied"),
    "secret_not_bound": (403, "http_request_denied"),
    "dlp_blocked": (403, "http_request_denied"),
    "hostname_exfiltration": (403, "http_request_denied"),
    "host_blocklisted": (403, "http_request_denied"),
    "injection_blocked": (403, "http_request_denied"),
    "mcp_method_denied": (403, "http_request_denied"),
    "mcp_tool_denied": (403, "http_request_denied"),
    "mcp_params_denied": (403, "http_request_denied"),
    "mcp_invalid": (400, "http_request_error"),
    "approval_refused": (403, "http_request_denied"),
    "approval_timeout": (403, "http_request_denied"),
    "approval_limit": (429, "http_request_denied"),
    "proxy_endpoint": (400, "http_request_error"),
    "bad_request": (400, "http_request_error"),
    "unsupported_scheme": (400, "http_request_error"),
    "origin_form": (400, "http_request_error"),
    "bad_port": (400, "http_request_error"),
    "header_too_large": (431, "http_request_error"),
    "body_too_large": (413, "http_request_error"),
    "head_timeout": (408, "http_request_error"),
    "too_many_connections": (503, "connection_limit_reached"),
    "dns_error": (502, "dns_error"),
    "dns_timeout": (504, "dns_timeout"),
    "connect_refused": (502, "connection_refused"),
    "connect_timeout": (504, "connection_timeout"),
    "upstream_error": (502, "http_response_incomplete"),
    "upstream_timeout": (504, "http_response_timeout"),
    "upstream_tls_failed": (502, "tls_certificate_error"),
    "response_too_large": (502, "http_response_body_size"),
    "unredactable_response": (502, "proxy_internal_response"),
    "audit_unavailable": (503, "proxy_internal_response"),
    "internal_error": (500, "proxy_internal_error"),
    "shutting_down": (503, "proxy_internal_response"),
}

ORIGIN_PATHS = r"^/(echo|bytes|chunked|slow|status|conn-id)(/.*)?$"

DEFAULT_LIMITS = {
    "header_bytes": "64KiB",
    "header_count": 100,
    "head_timeout": "10s",
    "body_bytes": "10MiB",
    "response_bytes": "1GiB",
    "connect_timeout": "5s",
    "idle_timeout": "60s",
    "max_connections": 10000,
    "max_connections_per_client": 1000,
}


def origin_rule(port, name="origin", hosts=("origin.test",), **extra):
    """The usual rule for an OriginServer: a pinned name on loopback, allowed by a per-rule
    CIDR exception, with the test endpoints' paths."""
    rule = {
        "name": name,
        "hosts": list(hosts) if hosts is not None else None,
        "addresses": ["127.0.0.1"],
        "allow_cidrs": ["127.0.0.1/32"],
        "ports": [port] if isinstance(port, int) else list(port),
        "methods": ["GET", "POST", "PUT", "HEAD"],
        "paths": [ORIGIN_PATHS],
        "mode": "enforce",
        "upgrades": [],
    }
    rule.update(extra)
    return {k: v for k, v in rule.items() if v is not None}


def tunnel_rule(port, name="origin-tls", hosts=("origin.test",), **extra):
    """A rule for opaque CONNECT tunnels: no methods or paths (those need inspection)."""
    rule = {
        "name": name,
        "hosts": list(hosts) if hosts is not None else None,
        "addresses": ["127.0.0.1"],
        "allow_cidrs": ["127.0.0.1/32"],
        "ports": [port] if isinstance(port, int) else list(port),
    }
    rule.update(extra)
    return {k: v for k, v in rule.items() if v is not None}


def make_policy(rules, agents=None, limits=None, mode="enforce", network=None, **extra):
    policy = {
        "mode": mode,
        "listen": {"proxy": "127.0.0.1:0", "admin": "off"},
        "limits": dict(DEFAULT_LIMITS, **(limits or {})),
        "network": network or {"block_private": True, "allow_cidrs": []},
        "agents": agents or {"default": {"rules": [r["name"] for r in rules]}},
        "rules": rules,
    }
    policy.update(extra)
    return policy


def sha256_hex(text):
    return hashlib.sha256(text.encode()).hexdigest()


def read_audit(path):
    """Every complete JSON line of an audit file (an unparsable one as {"_unparsable": text}).
    A last line without its newline is a write still in progress (a read(2) of a regular file
    may see part of a concurrent write(2)), so it is left for the next read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return []
    records = []
    for line in data.split(b"\n")[:-1]:
        line = line.strip()
        if line:
            try:
                records.append(json.loads(line))
            except ValueError:
                records.append({"_unparsable": line.decode("utf-8", "replace")})
    return records


class ProxyStartError(AssertionError):
    pass


class Airlock:
    """One airlock proxy process. `policy` is a dict (dumped as YAML; audit.path is filled in
    unless given) or a YAML string used verbatim."""

    def __init__(self, policy, threads=2, args=(), log_level="info", env_extra=None,
                 name="airlock"):
        self.tmp = tempfile.TemporaryDirectory(prefix="airlock-itest-%s-" % name)
        self.dir = self.tmp.name
        self.config_path = os.path.join(self.dir, "policy.yaml")
        self.audit_path = os.path.join(self.dir, "audit.jsonl")
        self.stderr_path = os.path.join(self.dir, "stderr.log")
        if isinstance(policy, dict):
            policy = copy.deepcopy(policy)
            policy.setdefault("audit", {}).setdefault("path", self.audit_path)
            self.policy = policy
            self.policy_text = yaml.safe_dump(policy, sort_keys=False)
        else:
            self.policy = None
            self.policy_text = policy
        with open(self.config_path, "w") as f:
            f.write(self.policy_text)
        self.threads = threads
        self.args = list(args)
        self.log_level = log_level
        self.env_extra = env_extra or {}
        self.proc = None
        self.port = None
        self.admin = None
        self.listening_line = None
        self.returncode = None
        self._stderr_file = None

    # -- lifecycle ----------------------------------------------------------------------------

    def command(self):
        cmd = [env.airlock_bin(), "proxy", "--config", self.config_path]
        if self.threads:
            cmd += ["--threads", str(self.threads)]
        if self.log_level:
            cmd += ["--log-level", self.log_level]
        return cmd + self.args

    def start(self, timeout=None):
        timeout = env.t(10) if timeout is None else timeout
        child_env = env.sanitizer_env(dict(os.environ))
        child_env.update(self.env_extra)
        self._stderr_file = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE,
                                     stderr=self._stderr_file, stdin=subprocess.DEVNULL,
                                     env=child_env)
        line = self._read_stdout_line(timeout)
        if line is None:
            self.kill()
            raise ProxyStartError("airlock did not print its listening line within %.0fs "
                                  "(exit code %s)\ncommand: %s\nstderr:\n%s"
                                  % (timeout, self.returncode, " ".join(self.command()),
                                     self.stderr()[-4000:]))
        m = LISTENING.match(line)
        if not m:
            self.kill()
            raise ProxyStartError("unexpected first stdout line %r\nstderr:\n%s"
                                  % (line, self.stderr()[-4000:]))
        self.listening_line = line
        self.port = int(m.group(2))
        self.admin = m.group(3)
        return self

    def _read_stdout_line(self, timeout):
        deadline = time.monotonic() + timeout
        buf = b""
        fd = self.proc.stdout.fileno()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                self.returncode = self.proc.wait(5)
                return None
            buf += chunk
            if b"\n" in buf:
                return buf.split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")
        return None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=None):
        """Signals the proxy and waits for it. Returns the exit code; raises AssertionError if
        it had to be killed."""
        if self.proc is None:
            return self.returncode
        timeout = env.t(15) if timeout is None else timeout
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError("airlock did not exit within %.0fs of %s; killed. "
                                     "stderr tail:\n%s" % (timeout, sig.name,
                                                           self.stderr()[-3000:]))
        self.returncode = self.proc.returncode
        self._close_files()
        return self.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            self.returncode = self.proc.returncode
        self._close_files()

    def _close_files(self):
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None

    def cleanup(self):
        self.kill()
        self.tmp.cleanup()

    # -- observations -------------------------------------------------------------------------

    @property
    def pid(self):
        return self.proc.pid

    def stderr(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def sanitizer_reports(self):
        """Lines of stderr where ASan/UBSan/LSan reported an error."""
        text = self.stderr()
        marks = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                 "WARNING: ThreadSanitizer", "SUMMARY: UndefinedBehaviorSanitizer")
        return [line for line in text.splitlines() if any(m in line for m in marks)]

    def policy_version(self):
        with open(self.config_path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    def audit(self):
        """Every audit record written so far (complete lines only)."""
        return read_audit(self.audit_path)

    def wait_audit(self, timeout=None, after=0, **match):
        """Polls the audit file for a record whose fields equal every `match` item (a callable
        value is used as a predicate), among the records after the first `after` ones (see
        audit_mark). Returns it, or None after `timeout` seconds."""
        timeout = env.t(5) if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            for rec in self.audit()[after:]:
                if all((v(rec.get(k)) if callable(v) else rec.get(k) == v)
                       for k, v in match.items()):
                    return rec
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def audit_mark(self):
        """How many audit records there are now: pass it as wait_audit(after=...) to look only
        at records written since (they belong to exchanges that ended after this point)."""
        return len(self.audit())

    def _status_kib(self, key):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        raise AssertionError("no %s in /proc/%d/status" % (key, self.proc.pid))

    def rss_kib(self):
        return self._status_kib("VmRSS")

    def hwm_kib(self):
        return self._status_kib("VmHWM")

    def open_fds(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    def holds_connection_from(self, client_port):
        """Whether the proxy process has accepted the TCP connection from 127.0.0.1:
        client_port: one of its descriptors is a socket whose peer is that port (proc(5):
        /proc/PID/net/tcp, /proc/PID/fd)."""
        inodes = set()
        fd_dir = "/proc/%d/fd" % self.proc.pid
        for fd in os.listdir(fd_dir):
            try:
                link = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        with open("/proc/%d/net/tcp" % self.proc.pid) as f:
            next(f)
            for line in f:
                cols = line.split()
                local_port = int(cols[1].split(":")[1], 16)
                remote_port = int(cols[2].split(":")[1], 16)
                if (local_port, remote_port) == (self.port, client_port) and cols[9] in inodes:
                    return True
        return False

    def url(self):
        return "http://127.0.0.1:%d" % self.port


class RssSampler:
    """Samples the proxy's VmRSS every `interval` seconds while in the `with` block; `peak`
    is the largest sample in KiB (VmHWM cannot be reset portably between tests)."""

    def __init__(self, proxy, interval=0.02):
        import threading
        self.proxy = proxy
        self.interval = interval
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.proxy.rss_kib())
                self.samples += 1
            except (OSError, AssertionError):
                return
            self._stop.wait(self.interval)

    def __enter__(self):
        self.peak = self.proxy.rss_kib()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
        try:
            self.peak = max(self.peak, self.proxy.rss_kib())
        except (OSError, AssertionError):
            pass


def run_airlock(args, timeout=None, input=None):
    """Runs `airlock ARGS` (check, explain, ...) to completion. Returns CompletedProcess(text)."""
    timeout = env.t(20) if timeout is None else timeout
    return subprocess.run([env.airlock_bin(), *args], capture_output=True, text=True,
                          timeout=timeout, input=input)
