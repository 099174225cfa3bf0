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

    def __init__(self, workdir, files, tls=None, echo=False):
        super().__init__()
        self.dir = os.path.join(workdir, "origin")
        self.www = os.path.join(self.dir, "www")
        os.makedirs(self.www)
        for name, writer in files.items():
            writer(os.path.join(self.www, name))
        self.port = free_port()
        self.log_path = os.path.join(self.dir, "error.log")
        # (certificate, key): the same files also served over TLS 1.2/1.3 on tls_port.
        self.tls = tls
        self.tls_port = free_port() if tls else None
        # The credentials scenario's extras (see _echo_locations); off otherwise, so the other
        # scenarios' origin configuration is unchanged.
        self.echo = echo
        self.echo_log = os.path.join(self.dir, "echo.log")

    def _echo_log_format(self):
        if not self.echo:
            return ""
        return "\n  log_format airlock_echo '$http_host|$http_authorization';"

    def _echo_locations(self):
        """For the credentials scenario: /__echo answers with the Authorization field it
        received and also logs it (with the Host) to echo.log, which the benchmark reads: the
        response goes back through redaction, the log line does not."""
        if not self.echo:
            return ""
        return f"""
    location = /__echo {{
      default_type text/plain;
      access_log {self.echo_log} airlock_echo;
      return 200 "authorization: $http_authorization\\n";
    }}"""

    def _typed_locations(self):
        """The .json files are served as application/json and the .txt files as text/plain
        (for the credentials and content-inspection scenarios, whose filters read only such
        bodies); everything else stays application/octet-stream. Exact-match locations only,
        so no other request pays for a regex."""
        types = {".json": "application/json", ".txt": "text/plain"}
        return "".join(
            f"\n    location = /{n} {{ default_type {types[os.path.splitext(n)[1]]}; }}"
            for n in sorted(os.listdir(self.www)) if os.path.splitext(n)[1] in types)

    def echo_lines(self):
        """echo.log as a list of (host, authorization) ("-" when the field was absent)."""
        try:
            with open(self.echo_log, errors="replace") as f:
                return [tuple(line.rstrip("\n").split("|", 1)) for line in f if "|" in line]
        except OSError:
            return []

    def _tls_server(self):
        if not self.tls:
            return ""
        cert, key = self.tls
        return f"""
  server {{
    listen {LOOPBACK}:{self.tls_port} ssl backlog=4096;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.2 TLSv1.3;
    root {self.www};
  }}"""

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
  keepalive_timeout 300s;{self._echo_log_format()}
  server {{
    listen {LOOPBACK}:{self.port} backlog=4096;
    root {self.www};
    location = /__status {{ stub_status; }}{self._echo_locations()}{self._typed_locations()}
  }}{self._tls_server()}
}}
""")
        self.proc = subprocess.Popen(["nginx", "-p", d, "-c", conf],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log_path, "a"))
        wait_listening(self.port, self.proc, self.name)
        if self.tls_port:
            wait_listening(self.tls_port, self.proc, self.name)

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

    def __init__(self, workdir, name="squid", hosts=()):
        super().__init__()
        self.name = name
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir)
        self.port = free_port()
        self.log_path = os.path.join(self.dir, "cache.log")
        # Names pinned to the loopback origin through a hosts_file, so no DNS is used (the TLS
        # scenarios' *.bench.test).
        self.hosts = list(hosts)

    def http_port_line(self):
        return f"http_port {LOOPBACK}:{self.port}"

    def extra_conf(self):
        return ""

    def prepare(self):
        """Anything to create before Squid starts (SquidBump: its certificate database)."""

    def start(self):
        d = self.dir
        self.prepare()
        hosts_line = ""
        if self.hosts:
            with open(os.path.join(d, "hosts"), "w") as f:
                f.write("".join(f"{LOOPBACK} {n}\n" for n in self.hosts))
            hosts_line = f"hosts_file {d}/hosts"
        conf = os.path.join(d, "squid.conf")
        with open(conf, "w") as f:
            f.write(f"""
{self.http_port_line()}
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
{hosts_line}
{self.extra_conf()}""")
        if os.geteuid() == 0:
            # Squid refuses to keep running as root and switches to its user, which must be
            # able to write the logs and pid file (and read SquidBump's CA and database).
            for root, dirs, files in os.walk(d):
                for n in [root] + [os.path.join(root, x) for x in dirs + files]:
                    shutil.chown(n, user="proxy", group="proxy")
        self.proc = subprocess.Popen(["squid", "-N", "-f", conf],
                                     stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(d, "stderr.log"), "a"))
        wait_listening(self.port, self.proc, self.name, timeout=30)

    @property
    def proxy_url(self):
        return f"http://{LOOPBACK}:{self.port}"


SQUID_CERTGEN = "/usr/lib/squid/security_file_certgen"


class SquidBump(Squid):
    """Squid 5 (Debian's squid-openssl) intercepting every CONNECT with ssl-bump: peek at the
    ClientHello (step 1), then bump, minting leaves with `security_file_certgen` (an on-disk
    database plus Squid's in-memory cache). The origin is verified against its CA, and the
    bench names (*.bench.test) resolve through a hosts_file to the loopback origin, so no DNS
    is used. Otherwise the plain Squid's settings: one process, no cache, no access log."""

    def __init__(self, workdir, tls, names, name="squid_bump"):
        super().__init__(workdir, name=name, hosts=names)
        self.tls = tls
        self.ca_cert = os.path.join(self.dir, "ca.crt")
        self.ca_key = os.path.join(self.dir, "ca.key")
        self.ssl_db = os.path.join(self.dir, "ssl_db")

    def http_port_line(self):
        return (f"http_port {LOOPBACK}:{self.port} ssl-bump tls-cert={self.ca_cert} "
                f"tls-key={self.ca_key} generate-host-certificates=on "
                "dynamic_cert_mem_cache_size=16MB")

    def extra_conf(self):
        return f"""
sslcrtd_program {SQUID_CERTGEN} -s {self.ssl_db} -M 16MB
sslcrtd_children 4 startup=1 idle=1
acl step1 at_step SslBump1
ssl_bump peek step1
ssl_bump bump all
tls_outgoing_options cafile={self.tls.origin_ca} min-version=1.2
"""

    def prepare(self):
        if not os.path.exists(SQUID_CERTGEN):
            raise BenchError(f"{SQUID_CERTGEN} is missing: install squid-openssl")
        shutil.copyfile(self.tls.ca_cert, self.ca_cert)
        shutil.copyfile(self.tls.ca_key, self.ca_key)
        os.chmod(self.ca_key, 0o600)
        shutil.copyfile(self.tls.origin_ca, os.path.join(self.dir, "origin-ca.crt"))
        run = subprocess.run([SQUID_CERTGEN, "-c", "-s", self.ssl_db, "-M", "16MB"],
                             capture_output=True, text=True, timeout=30)
        if run.returncode != 0:
            raise BenchError(f"security_file_certgen -c failed: {run.stderr.strip()}")


MITM_PIN_ADDON = '''\
"""Pins *.bench.test to the loopback origin, as Squid's hosts_file and Airlock's `addresses`
do, so no DNS is used. mitmproxy still names the host in SNI and verifies it."""


class Pin:
    def server_connect(self, data):
        host, port = data.server.address
        if host == "bench.test" or host.endswith(".bench.test"):
            data.server.address = ("127.0.0.1", port)


addons = [Pin()]
'''


class Mitmproxy(Process):
    """mitmdump (Debian's mitmproxy) as a regular forward proxy: it intercepts every CONNECT,
    minting leaves with the bench CA (mitmproxy signs them with the CA's own key), verifying
    the origin against its CA. Quiet (-q): no per-flow output."""

    name = "mitmproxy"

    def __init__(self, workdir, tls, http2=False):
        super().__init__()
        self.dir = os.path.join(workdir, "mitmproxy")
        os.makedirs(self.dir)
        self.tls = tls
        self.http2 = http2  # the HTTP/2 scenario (bench/h2.py) has it speak h2 both ways
        self.port = free_port()
        self.log_path = os.path.join(self.dir, "output.log")

    def start(self):
        confdir = os.path.join(self.dir, "conf")
        os.makedirs(confdir)
        ca = os.path.join(confdir, "mitmproxy-ca.pem")
        with open(ca, "w") as f:
            f.write(self.tls.ca_key_and_cert_pem())
        os.chmod(ca, 0o600)
        addon = os.path.join(self.dir, "pin.py")
        with open(addon, "w") as f:
            f.write(MITM_PIN_ADDON)
        cmd = ["mitmdump", "-q", "--listen-host", LOOPBACK, "--listen-port", str(self.port),
               "--set", f"confdir={confdir}",
               "--set", f"ssl_verify_upstream_trusted_ca={self.tls.origin_ca}",
               "--set", "http2=%s" % ("true" if self.http2 else "false"), "-s", addon]
        env = dict(os.environ, HOME=self.dir)
        self.proc = subprocess.Popen(cmd, stdout=open(self.log_path, "a"),
                                     stderr=subprocess.STDOUT, env=env)
        wait_listening(self.port, self.proc, self.name, timeout=60)

    @property
    def proxy_url(self):
        return f"http://{LOOPBACK}:{self.port}"


class Airlock(Process):
    """`airlock proxy` with a policy that allows exactly the loopback origin.

    With `tls` (a tls_certs.TlsFiles), the policy instead has one inspected rule for the
    origin's TLS port: `*.bench.test` pinned to loopback, GET /small only, the bench CA to
    mint with and the origin CA to verify with; the admin port is then on, for the leaf
    cache's metrics."""

    def __init__(self, workdir, binary, origin_port, threads, audit_path="off", name="airlock",
                 tls=None):
        super().__init__()
        self.name = name
        self.binary = binary
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir)
        self.origin_port = origin_port
        self.threads = threads
        self.audit_path = audit_path
        self.tls = tls
        self.port = None
        self.admin_port = None
        self.log_path = os.path.join(self.dir, "stderr.log")
        self.config_path = os.path.join(self.dir, "policy.yaml")
        # The proxy's environment (None: the benchmark's own). The credentials scenario puts
        # its secret here, so only the proxy process holds it.
        self.env = None

    def policy(self):
        if not self.tls:
            return f"""\
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
"""
        t = self.tls
        return f"""\
listen: {{proxy: '{LOOPBACK}:0', admin: '{LOOPBACK}:0'}}
audit: {{path: '{self.audit_path}'}}
limits: {{max_connections_per_client: 4096}}
tls: {{ca_cert: '{t.ca_cert}', ca_key: '{t.ca_key}', upstream_ca: '{t.origin_ca}'}}
agents: {{default: {{rules: [inspected]}}}}
rules:
  - name: inspected
    hosts: ['*.bench.test']
    addresses: [{LOOPBACK}]
    allow_cidrs: [{LOOPBACK}/32]
    ports: [{self.origin_port}]
    inspect: true
    methods: [GET]
    paths: ['^/small$']
"""

    def start(self):
        with open(self.config_path, "w") as f:
            f.write(self.policy())
        self.proc = subprocess.Popen(
            [self.binary, "proxy", "--config", self.config_path, "--threads", str(self.threads)],
            stdout=subprocess.PIPE, stderr=open(self.log_path, "a"), text=True, env=self.env)
        found = {}

        def read_stdout():
            with open(os.path.join(self.dir, "stdout.log"), "a") as out:
                for line in self.proc.stdout:
                    if "port" not in found:
                        m = re.search(r"listening proxy=([0-9.]+):(\d+) admin=(\S+)", line)
                        if m:
                            admin = re.search(r":(\d+)$", m.group(3))
                            found["admin"] = int(admin.group(1)) if admin else None
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
        self.admin_port = found.get("admin")
        wait_listening(self.port, self.proc, self.name)

    def metrics(self):
        """The admin port's Prometheus text as {series: value} (unlabelled series only)."""
        if not self.admin_port:
            return {}
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                f"http://{LOOPBACK}:{self.admin_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*) ([0-9.eE+-]+)$", line)
            if m:
                out[m.group(1)] = float(m.group(2))
        return out

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
