"""The processes the benchmark starts: the nginx origin, Squid and Airlock.

Every process is started by us, in the foreground, with its own configuration, pid file and
logs under the run's temporary directory, on a loopback port; stop() ends exactly that PID.
No system service is used or touched.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request

from . import procfs

LOOPBACK = "127.0.0.1"


class BenchError(Exception):
    """A scenario or a server is broken: the run must exit non-zero."""


def free_port():
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_listening(port, proc, name, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"{name} exited with status {proc.returncode} while starting")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise BenchError(f"{name} did not listen on {LOOPBACK}:{port} within {timeout:.0f}s")


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


class Process:
    """A child process we own; stop() signals only its PID."""

    name = "process"
    log_path = None

    def __init__(self):
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self):
        if not self.alive():
            raise BenchError(f"{self.name} died (status {self.proc.returncode}); "
                             f"last log lines:\n{tail(self.log_path)}")

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


class Origin(Process):
    """nginx serving static files from memory/page cache: one worker, no master, no logs.

    One worker keeps the origin's share of the two cores the same in every scenario. Keep-alive
    is effectively unlimited so neither wrk nor a proxy's upstream pool is forced to reconnect.
    """

    name = "nginx origin"

    def __init__(self, workdir, files):
        super().__init__()
        self.dir = os.path.join(workdir, "origin")
        self.www = os.path.join(self.dir, "www")
        os.makedirs(self.www)
        for name, writer in files.items():
            writer(os.path.join(self.www, name))
        self.port = free_port()
        self.log_path = os.path.join(self.dir, "error.log")

    def start(self):
        d = self.dir
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 16384;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  client_body_temp_path {d}/tmp-body;
  proxy_temp_path {d}/tmp-proxy;
  fastcgi_temp_path {d}/tmp-fastcgi;
  uwsgi_temp_path {d}/tmp-uwsgi;
  scgi_temp_path {d}/tmp-scgi;
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 1000000000;
  keepalive_timeout 300s;
  server {{
    listen {LOOPBACK}:{self.port} backlog=4096;
    root {self.www};
    location = /__status {{ stub_status; }}
  }}
}}
""")
        self.proc = subprocess.Popen(["nginx", "-p", d, "-c", conf],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log_path, "a"))
        wait_listening(self.port, self.proc, self.name)

    def url(self, path):
        return f"http://{LOOPBACK}:{self.port}{path}"

    def hits(self):
        """Requests the origin has served so far (nginx stub_status), this query included."""
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                self.url("/__status"), timeout=5) as r:
            text = r.read().decode()
        m = re.search(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s*$", text, re.M)
        if not m:
            raise BenchError(f"cannot parse nginx stub_status: {text!r}")
        return int(m.group(3))


class Squid(Process):
    """Squid 5 as a plain forward proxy: no cache, no access log, CONNECT allowed to any port.

    Run with -N (no daemon, one process) and its own pid file and logs; every request goes to
    the origin because `cache deny all`. Otherwise Squid's defaults are kept.
    """

    name = "squid"

    def __init__(self, workdir):
        super().__init__()
        self.dir = os.path.join(workdir, "squid")
        os.makedirs(self.dir)
        self.port = free_port()
        self.log_path = os.path.join(self.dir, "cache.log")

    def start(self):
        d = self.dir
        conf = os.path.join(d, "squid.conf")
        with open(conf, "w") as f:
            f.write(f"""
http_port {LOOPBACK}:{self.port}
workers 1
pid_filename {d}/squid.pid
cache_log {d}/cache.log
access_log none
cache_store_log none
netdb_filename none
coredump_dir {d}
cache deny all
icp_port 0
htcp_port 0
pinger_enable off
max_filedescriptors 16384
shutdown_lifetime 0 seconds
acl bench_clients src 127.0.0.0/8
http_access allow bench_clients
http_access deny all
""")
        if os.geteuid() == 0:
            # Squid refuses to keep running as root and switches to its user, which must be
            # able to write the logs and pid file.
            shutil.chown(d, user="proxy", group="proxy")
        self.proc = subprocess.Popen(["squid", "-N", "-f", conf],
                                     stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(d, "stderr.log"), "a"))
        wait_listening(self.port, self.proc, self.name, timeout=30)

    @property
    def proxy_url(self):
        return f"http://{LOOPBACK}:{self.port}"


class Airlock(Process):
    """`airlock proxy` with a policy that allows exactly the loopback origin."""

    def __init__(self, workdir, binary, origin_port, threads, audit_path="off", name="airlock"):
        super().__init__()
        self.name = name
        self.binary = binary
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir)
        self.origin_port = origin_port
        self.threads = threads
        self.audit_path = audit_path
        self.port = None
        self.log_path = os.path.join(self.dir, "stderr.log")
        self.config_path = os.path.join(self.dir, "policy.yaml")

    def start(self):
        with open(self.config_path, "w") as f:
            f.write(f"""\
listen: {{proxy: '{LOOPBACK}:0', admin: 'off'}}
audit: {{path: '{self.audit_path}'}}
# All benchmark clients share one source address; (e) alone holds 1,000 connections.
limits: {{max_connections_per_client: 4096}}
agents: {{default: {{rules: [origin]}}}}
rules:
  - name: origin
    hosts: [{LOOPBACK}, origin.test]
    addresses: [{LOOPBACK}]
    allow_cidrs: [{LOOPBACK}/32]
    ports: [{self.origin_port}]
""")
        self.proc = subprocess.Popen(
            [self.binary, "proxy", "--config", self.config_path, "--threads", str(self.threads)],
            stdout=subprocess.PIPE, stderr=open(self.log_path, "a"), text=True)
        found = {}

        def read_stdout():
            with open(os.path.join(self.dir, "stdout.log"), "a") as out:
                for line in self.proc.stdout:
                    if "port" not in found:
                        m = re.search(r"listening proxy=([0-9.]+):(\d+)", line)
                        if m:
                            found["port"] = int(m.group(2))
                    out.write(line)
                    out.flush()

        # Keep draining stdout for the whole run: a full pipe would stall the proxy.
        threading.Thread(target=read_stdout, daemon=True).start()
        deadline = time.monotonic() + 15
        while "port" not in found:
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited with status {self.proc.returncode} "
                                 f"before listening:\n{tail(self.log_path)}")
            if time.monotonic() > deadline:
                raise BenchError(f"{self.name} printed no 'listening proxy=' line within 15s")
            time.sleep(0.02)
        self.port = found["port"]
        wait_listening(self.port, self.proc, self.name)

    @property
    def proxy_url(self):
        return f"http://{LOOPBACK}:{self.port}"

    def log_problems(self, limit=5):
        """Warning and error lines airlock logged (count, first few distinct messages)."""
        count, samples = 0, []
        try:
            with open(self.log_path, errors="replace") as f:
                for line in f:
                    m = re.match(r"\S+ (warn|error) (.*)", line.strip())
                    if not m:
                        continue
                    count += 1
                    # Ports and numbers differ between otherwise equal messages.
                    text = re.sub(r"\d+", "N", m.group(2))[:200]
                    if text not in samples and len(samples) < limit:
                        samples.append(text)
        except OSError:
            pass
        return count, samples


def cpu_seconds(proc):
    return procfs.cpu_seconds(proc.pid)


def rss_bytes(proc):
    return procfs.rss_bytes(proc.pid)
