#!/usr/bin/python3
"""`airlock run` hardening of issue 18, end to end: the terminal (TIOCSTI under a real pty),
personality(), the CA bound over the system paths, the tmpfs and rlimit limits, the writable
home (npm and pip installing local packages), and --self-test.

Usage: /usr/bin/python3 test_hardening.py /path/to/airlock [unittest args...]
Like test_launcher.py (whose helpers it uses), every test runs as the caller and, when that is
root, as the unprivileged user airlock-test; nothing of a jail may be left behind.
"""

import base64
import ctypes
import fcntl
import hashlib
import io
import os
import select
import shutil
import subprocess
import sys
import tarfile
import termios
import time
import unittest
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_launcher as base  # noqa: E402

RUN_TIMEOUT = base.RUN_TIMEOUT

# Run in the jail with HOME set to a home that has none of the credential paths: waits for the
# host to create them, then tries to read them and to move their directories away.
LATE_CREDENTIALS_PROBE = r"""
import os, time
h = os.environ["HOME"]
open("started", "w").close()
for _ in range(800):
    if os.path.exists("created"):
        break
    time.sleep(0.025)
print("created seen" if os.path.exists("created") else "never created", flush=True)
for rel in (".aws/credentials", ".config/gh/hosts.yml", ".netrc", ".cargo/credentials.toml"):
    try:
        print("READ", rel, open(os.path.join(h, rel)).read().strip())
    except OSError as e:
        print("refused", rel, e.errno)
for name in (".config", ".aws", ".netrc", ".cargo"):
    try:
        os.rename(os.path.join(h, name), os.path.join(h, name + "-moved"))
        print("MOVED", name)
    except OSError as e:
        print("not moved", name, e.errno)
os.makedirs(os.path.join(h, ".config", "tool"), exist_ok=True)
with open(os.path.join(h, ".config", "tool", "x"), "w") as f:
    f.write("ok")
print("config writable")
"""

# A jailed probe of the terminal: is stdin a terminal of the jail's own, does TIOCSTI work on
# it (also with junk in the request's high half, CVE-2019-10063), and can it still be read.
TTY_PROBE = r"""
import ctypes, errno, fcntl, os, sys, termios
libc = ctypes.CDLL(None, use_errno=True)
def sti(fd, request):
    c = ctypes.c_char(b"X")
    rc = libc.syscall(16, fd, ctypes.c_ulong(request), ctypes.byref(c))  # SYS_ioctl, x86_64
    return "ok" if rc == 0 else errno.errorcode[ctypes.get_errno()]
print("isatty", os.isatty(0), os.isatty(1), flush=True)
print("ttyname", os.ttyname(0), flush=True)
print("fg", os.tcgetpgrp(0) == os.getpgrp(), os.getsid(0) == 1, flush=True)
print("sti", sti(0, termios.TIOCSTI), sti(0, termios.TIOCSTI | (1 << 32)),
      sti(1, termios.TIOCSTI), flush=True)
fd = os.open("/dev/tty", os.O_RDWR)
print("devtty", sti(fd, termios.TIOCSTI), flush=True)
print("READY", flush=True)
line = sys.stdin.readline()
print("got:" + line.strip(), flush=True)
"""


def make_wheel(directory, name, version, module_source):
    """A pure-Python wheel (PEP 427) built by hand: no build backend, no index."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": module_source.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: airlock-test\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = os.path.join(directory, f"{name}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for name_in, data in files.items():
            z.writestr(name_in, data)
    os.chmod(path, 0o644)
    return path


def make_npm_tarball(directory, name, version, index_js):
    """An npm package tarball (what `npm pack` writes: package/ at the top)."""
    path = os.path.join(directory, f"{name}-{version}.tgz")
    with tarfile.open(path, "w:gz") as t:
        for member, text in (("package/package.json",
                              '{"name": "%s", "version": "%s", "main": "index.js"}' % (name, version)),
                             ("package/index.js", index_js)):
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    os.chmod(path, 0o644)
    return path


class HardeningTestBase(base.LauncherTestBase):
    """The tests of issue 18; mixed into one TestCase per user variant."""

    # The base class's own tests run in test_launcher.py, not again here.
    for _name in [n for n in vars(base.LauncherTestBase) if n.startswith("test_")]:
        locals()[_name] = None
    del _name

    def fake_home(self):
        """A home for the launcher's caller, with a dotfile and a secret in it."""
        home = os.path.join(self.tmp, "home")
        os.makedirs(os.path.join(home, ".ssh"))
        with open(os.path.join(home, ".bashrc"), "w") as f:
            f.write("# the caller's bashrc\n")
        with open(os.path.join(home, ".ssh", "id_ed25519"), "w") as f:
            f.write("PRIVATE KEY MATERIAL\n")
        if self.user is not None:
            for root, dirs, files in os.walk(home):
                for n in [root] + [os.path.join(root, x) for x in dirs + files]:
                    os.chown(n, self.user.pw_uid, self.user.pw_gid)
        return home

    def jail_with_home(self, script, home, *opts, timeout=RUN_TIMEOUT):
        cmd = self._command(script, opts)
        kwargs = self._popen_kwargs()
        kwargs["env"]["HOME"] = home
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout, **kwargs)
        self._record_ns()
        return p

    @staticmethod
    def tree(path):
        found = []
        for root, dirs, files in os.walk(path):
            for n in dirs + files:
                found.append(os.path.relpath(os.path.join(root, n), path))
        return sorted(found)

    # ---- 1. the terminal ------------------------------------------------------------------

    def test_tiocsti_refused_and_the_terminal_still_works_under_a_real_pty(self):
        probe = os.path.join(self.work, "tty_probe.py")
        with open(probe, "w") as f:
            f.write(TTY_PROBE)
        os.chmod(probe, 0o644)
        master, slave = os.openpty()
        before = termios.tcgetattr(slave)
        kwargs = self._popen_kwargs()
        cmd = self._command(f"exec /usr/bin/python3 {probe}", [])

        def controlling_terminal():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                             preexec_fn=controlling_terminal, **kwargs)
        self.launcher_pids.append(p.pid)
        out = b""
        sent = False
        deadline = time.monotonic() + RUN_TIMEOUT
        try:
            while time.monotonic() < deadline and b"got:" not in out:
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    try:
                        out += os.read(master, 4096)
                    except OSError:
                        break
                if b"READY" in out and not sent:
                    os.write(master, b"typed by the user\r")
                    sent = True
                if p.poll() is not None and not ready:
                    break
            p.wait(timeout=RUN_TIMEOUT)
            # Whatever the command wrote last, and anything injected into our terminal.
            while select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            pending = ctypes.c_int(0)
            fcntl.ioctl(slave, termios.FIONREAD, pending)
            after = termios.tcgetattr(slave)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            os.close(master)
            os.close(slave)
        self._record_ns()
        text = out.decode(errors="replace")
        self.assertEqual(p.returncode, 0, text)
        self.assertIn("isatty True True", text)
        # The jail's own pty (its own devpts), the controlling terminal of the jail's session
        # with the command in its foreground.
        self.assertRegex(text, r"ttyname /dev/pts/\d+")
        self.assertIn("fg True True", text)
        self.assertIn("sti EPERM EPERM EPERM", text)
        self.assertIn("devtty EPERM", text)
        # The interactive program read what was typed, and only that.
        self.assertIn("got:typed by the user", text)
        self.assertEqual(pending.value, 0, "bytes were pushed into the caller's terminal")
        self.assertEqual(before, after, "the caller's terminal mode was not restored")

    def test_ctrl_z_suspends_the_jail_and_fg_resumes_it(self):
        """^Z under an interactive shell's job control: the launcher stops the jail's
        foreground group and itself (the shell says Stopped), fg brings both back with the
        terminal in raw mode again, and the command still reads its terminal."""
        master, slave = os.openpty()
        kwargs = self._popen_kwargs()
        kwargs["env"].update(PS1="PROMPT$ ", TERM="dumb")

        def controlling_terminal():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        shell = subprocess.Popen(["/bin/bash", "--norc", "--noprofile", "-i"], stdin=slave,
                                 stdout=slave, stderr=slave, start_new_session=True,
                                 preexec_fn=controlling_terminal, **kwargs)
        os.close(slave)
        out = bytearray()

        def wait_for(marker, timeout=RUN_TIMEOUT):
            deadline = time.monotonic() + timeout
            while marker not in out and time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    try:
                        out.extend(os.read(master, 4096))
                    except OSError:
                        break
            self.assertIn(marker, out, bytes(out[-3000:]).decode(errors="replace"))

        try:
            # The markers are split in the command line, so its echo does not match them.
            script = ("readlink /proc/self/ns/pid > .pidns; echo RE\"\"ADY; read x;"
                      " echo GO\"\"T:$x")
            os.write(master, f"{base.AIRLOCK} run -- sh -c '{script}'\n".encode())
            wait_for(b"READY")
            os.write(master, b"\x1a")
            wait_for(b"Stopped")
            with open(os.path.join(self.work, ".pidns")) as f:
                ns = f.read().strip()
            # SIGSTOP takes effect when each process next runs: wait for it (bounded).
            deadline = time.monotonic() + RUN_TIMEOUT
            states = []
            while "T" not in states and time.monotonic() < deadline:
                states = []
                for pid in base.pidns_members(ns):
                    try:
                        with open(f"/proc/{pid}/stat") as f:
                            states.append(f.read().rsplit(")", 1)[1].split()[0])
                    except OSError:
                        pass
                time.sleep(0.05)
            self.assertIn("T", states, "the jail's foreground group is stopped")
            os.write(master, b"fg\n")
            # Typed early or late, the line reaches the command: what arrives before the
            # launcher is back in raw mode waits in the terminal's queue.
            os.write(master, b"typed after fg\r")
            wait_for(b"GOT:typed after fg")
            # The shell's next prompt: the launcher has exited and the shell reads its terminal
            # again (an "exit" typed earlier would go to the ending launcher instead).
            deadline = time.monotonic() + RUN_TIMEOUT
            while (b"PROMPT$ " not in out[out.index(b"GOT:typed after fg"):] and
                   time.monotonic() < deadline):
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    try:
                        out.extend(os.read(master, 4096))
                    except OSError:
                        break
            self.assertIn(b"PROMPT$ ", out[out.index(b"GOT:typed after fg"):],
                          bytes(out[-3000:]).decode(errors="replace"))
            os.write(master, b"exit\n")
            shell.wait(timeout=RUN_TIMEOUT)
        finally:
            if shell.poll() is None:
                shell.kill()
                shell.wait()
            os.close(master)
        self._record_ns()

    def test_tiocsti_refused_without_a_terminal(self):
        r = self.python_in_jail(r"""
import ctypes, errno, os, termios
libc = ctypes.CDLL(None, use_errno=True)
c = ctypes.c_char(b"X")
for req in (termios.TIOCSTI, termios.TIOCSTI | (0xdead << 32), 0x541C):  # 0x541C: TIOCLINUX
    rc = libc.syscall(16, 0, ctypes.c_ulong(req), ctypes.byref(c))
    print(errno.errorcode[ctypes.get_errno()] if rc else "ok")
try:
    os.open("/dev/tty", os.O_RDWR)
    print("ctty")
except OSError as e:
    print("no ctty", errno.errorcode[e.errno])
""")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split("\n")[:3], ["EPERM", "EPERM", "EPERM"], r.stdout)
        self.assertIn("no ctty ENXIO", r.stdout)

    def test_kill_zero_reaches_only_the_jail(self):
        # kill(0, sig) signals the caller's process group: a PID namespace does not filter it.
        # The launcher (here in a group of its own) forwards whatever it gets to the command,
        # so a signal that escaped would be trapped twice.
        cmd = self._command("trap 'echo trapped' USR1; kill -USR1 0; sleep 0.5; echo done", [])
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=RUN_TIMEOUT, start_new_session=True, **self._popen_kwargs())
        self._record_ns()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), ["trapped", "done"])

    # ---- 2. personality ---------------------------------------------------------------------

    def test_personality_flags_refused(self):
        r = self.python_in_jail(r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.personality.argtypes = [ctypes.c_ulong]
def pers(v):
    rc = libc.personality(v)
    return "ok" if rc != -1 else errno.errorcode[ctypes.get_errno()]
print(pers(0xffffffff), pers(0), pers(0x0400000), pers(0x0040000), pers(0x0008), pers(0x0400000 | 1 << 32))
""")
        self.assertEqual(r.returncode, 0, r.stderr)
        # query, PER_LINUX; READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, PER_LINUX32, with high junk
        self.assertEqual(r.stdout.split(), ["ok", "ok", "EPERM", "EPERM", "EPERM", "EPERM"])

    # ---- 3. trust ---------------------------------------------------------------------------

    def test_ca_is_the_system_bundle_and_every_variable_and_java_trusts_it(self):
        cadir = os.path.join(self.outside, "ca")
        os.mkdir(cadir)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                        "/CN=Airlock hardening CA", "-keyout", os.path.join(cadir, "ca.key"),
                        "-out", os.path.join(cadir, "ca.crt")],
                       check=True, capture_output=True, timeout=30)
        os.chmod(os.path.join(cadir, "ca.crt"), 0o644)
        names = ["SSL_CERT_FILE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "NIX_SSL_CERT_FILE",
                 "HTTPLIB2_CA_CERTS", "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE", "AWS_CA_BUNDLE",
                 "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO"]
        script = "".join(f'echo {n}=${n};' for n in names)
        bundles = [b for b in ("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/cert.pem",
                               "/etc/pki/tls/certs/ca-bundle.crt") if os.path.exists(b)]
        script += "".join(f'cmp -s {b} /run/airlock/ca-bundle.crt && echo same:{b};' for b in bundles)
        keytool = shutil.which("keytool")
        if keytool:
            script += ("keytool -list -keystore /etc/ssl/certs/java/cacerts -storepass changeit"
                       " -alias airlock-ca >/dev/null 2>&1 && echo java-trusts;")
        r = self.jail(script, "--ca", os.path.join(cadir, "ca.crt"), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        for n in names:
            self.assertIn(f"{n}=/run/airlock/ca-bundle.crt", r.stdout)
        self.assertTrue(bundles)
        for b in bundles:
            self.assertIn(f"same:{b}", r.stdout)
        if keytool:
            self.assertIn("java-trusts", r.stdout, r.stderr)
            # --java-truststore names the same store for JVMs with a cacerts of their own.
            r = self.jail('echo "$JAVA_TOOL_OPTIONS"; cmp -s /run/airlock/truststore.jks'
                          ' /etc/ssl/certs/java/cacerts && echo same-store',
                          "--ca", os.path.join(cadir, "ca.crt"), "--java-truststore")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("-Djavax.net.ssl.trustStore=/run/airlock/truststore.jks", r.stdout)
            self.assertIn("same-store", r.stdout)

    # ---- 4. limits --------------------------------------------------------------------------

    def test_tmpfs_sizes_and_file_limits_are_enforced(self):
        r = self.python_in_jail(r"""
import errno, os, resource
st = os.statvfs("/tmp")
print("tmp", st.f_blocks * st.f_frsize)
print("fsize", resource.getrlimit(resource.RLIMIT_FSIZE))
print("nofile", resource.getrlimit(resource.RLIMIT_NOFILE))
try:
    with open("/tmp/fill", "wb") as f:
        for _ in range(40):
            f.write(b"\0" * (1 << 20))
            f.flush()
    print("tmp not full")
except OSError as e:
    print("tmp full", errno.errorcode[e.errno], os.path.getsize("/tmp/fill") <= 8 << 20)
os.unlink("/tmp/fill")
import signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
try:
    with open("big", "wb") as f:
        f.write(b"\0" * (13 << 20))
    print("file written")
except OSError as e:
    print("file", errno.errorcode[e.errno], os.path.getsize("big"))
files = []
try:
    for _ in range(64):
        files.append(open("/dev/null"))
    print("opened all")
except OSError as e:
    print("open", errno.errorcode[e.errno])
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    print("raised")
except (ValueError, OSError):
    print("cannot raise")
""", "--tmpfs-size", "8M", "--fsize", "12M", "--nofile", "32")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertIn(f"tmp {8 << 20}", out)
        self.assertIn(f"fsize ({12 << 20}, {12 << 20})", out)
        self.assertIn("nofile (32, 32)", out)
        self.assertIn("tmp full ENOSPC True", out)
        self.assertIn(f"file EFBIG {12 << 20}", out)
        self.assertIn("open EMFILE", out)
        self.assertIn("cannot raise", out)
        # The default: 1 GiB, not half of the RAM.
        d = self.python_in_jail("import os; s = os.statvfs('/tmp'); print(s.f_blocks * s.f_frsize)")
        self.assertEqual(d.stdout.strip(), str(1 << 30), d.stderr)

    # ---- 5. the home ------------------------------------------------------------------------

    def test_home_is_a_private_writable_layer_with_secrets_hidden(self):
        home = self.fake_home()
        before = self.tree(home)
        r = self.jail_with_home(
            "cat ~/.bashrc; echo written > ~/new-file && cat ~/new-file;"
            " mkdir -p ~/.cache/tool && echo c > ~/.cache/tool/x && echo cache-ok;"
            " echo more >> ~/.bashrc && echo appended;"
            " cat ~/.ssh/id_ed25519 2>/dev/null || echo secret-hidden; echo HOME=$HOME",
            home, "--verbose")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("the caller's bashrc", r.stdout)
        self.assertIn("written", r.stdout)
        self.assertIn("cache-ok", r.stdout)
        self.assertIn("appended", r.stdout)
        self.assertIn("secret-hidden", r.stdout)
        self.assertNotIn("PRIVATE KEY", r.stdout)
        self.assertIn(f"HOME={os.path.realpath(home)}", r.stdout)
        self.assertRegex(r.stderr, r"home: .* private writable layer .* discarded")
        # Nothing reached the real home.
        self.assertEqual(self.tree(home), before)
        with open(os.path.join(home, ".bashrc")) as f:
            self.assertEqual(f.read(), "# the caller's bashrc\n")

    def test_credential_paths_created_during_the_run_stay_hidden(self):
        # `aws configure`, `gh auth login`, ... in another terminal while the agent runs: the
        # credential paths that did not exist at start are covered too, not read through the
        # layer's lower directory (the real home), and their covers cannot be moved away.
        home = self.fake_home()
        probe = os.path.join(self.work, "late_creds.py")
        with open(probe, "w") as f:
            f.write(LATE_CREDENTIALS_PROBE)
        os.chmod(probe, 0o644)
        cmd = self._command(f"exec /usr/bin/python3 {probe}", [])
        kwargs = self._popen_kwargs()
        kwargs["env"]["HOME"] = home
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, **kwargs)
        self.launcher_pids.append(p.pid)
        started = os.path.join(self.work, "started")
        deadline = time.monotonic() + RUN_TIMEOUT
        while not os.path.exists(started) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        made = []
        for rel in (".aws/credentials", ".config/gh/hosts.yml", ".netrc",
                    ".cargo/credentials.toml"):
            path = os.path.join(home, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(f"LATE-SECRET {rel}\n")
            made.append(path)
        if self.user is not None:
            for root, dirs, files in os.walk(home):
                for n in [root] + [os.path.join(root, x) for x in dirs + files]:
                    os.chown(n, self.user.pw_uid, self.user.pw_gid)
        with open(os.path.join(self.work, "created"), "w"):
            pass
        out, err = p.communicate(timeout=RUN_TIMEOUT)
        self._record_ns()
        self.assert_no_sanitizer_reports(err)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("created seen", out)
        self.assertNotIn("LATE-SECRET", out)
        for rel in (".aws/credentials", ".config/gh/hosts.yml", ".netrc",
                    ".cargo/credentials.toml"):
            self.assertIn(f"refused {rel} 13", out)  # EACCES: the cover, not a missing file
        self.assertNotIn("MOVED", out)
        self.assertIn("config writable", out)
        for path in made:  # the real home's files are untouched
            with open(path) as f:
                self.assertTrue(f.read().startswith("LATE-SECRET"))

    def test_home_dir_option_keeps_writes(self):
        home = self.fake_home()
        kept = os.path.join(self.tmp, "agent-home")
        os.mkdir(kept)
        if self.user is not None:
            os.chown(kept, self.user.pw_uid, self.user.pw_gid)
        r = self.jail_with_home("echo kept > ~/state; echo HOME=$HOME", home, "--home", kept,
                                "--verbose")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"is {os.path.realpath(kept)}: writes there are kept", r.stderr)
        with open(os.path.join(kept, "state")) as f:
            self.assertEqual(f.read(), "kept\n")
        self.assertFalse(os.path.exists(os.path.join(home, "state")))

    @unittest.skipUnless(shutil.which("npm") and shutil.which("node"),
                         "needs npm and node (Debian packages npm, nodejs)")
    def test_npm_install_of_a_local_package_with_the_default_home(self):
        home = self.fake_home()
        before = self.tree(home)
        tgz = make_npm_tarball(self.work, "airlock-local-pad", "1.0.0",
                               "module.exports = (s, n) => s.padStart(n, '.');\n")
        r = self.jail_with_home(
            "npm install --offline --no-audit --no-fund --no-update-notifier"
            f" ./{os.path.basename(tgz)} >npm.log 2>&1 || {{ cat npm.log; exit 3; }};"
            " node -e \"console.log(require('airlock-local-pad')('x', 4))\"; ls -d ~/.npm",
            home, timeout=180)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("...x", r.stdout)
        self.assertIn(".npm", r.stdout)  # npm wrote its cache in the (layered) home
        self.assertTrue(os.path.isdir(os.path.join(self.work, "node_modules", "airlock-local-pad")))
        self.assertEqual(self.tree(home), before, "npm wrote into the real home")

    @unittest.skipUnless(subprocess.run(["/usr/bin/python3", "-m", "pip", "--version"],
                                        capture_output=True).returncode == 0,
                         "needs pip for /usr/bin/python3 (Debian package python3-pip)")
    def test_pip_install_of_a_local_package_with_the_default_home(self):
        home = self.fake_home()
        before = self.tree(home)
        whl = make_wheel(self.work, "airlock_local_probe", "1.0", "VALUE = 'installed'\n")
        r = self.jail_with_home(
            "PIP_BREAK_SYSTEM_PACKAGES=1 /usr/bin/python3 -m pip install --user --no-index"
            f" --disable-pip-version-check ./{os.path.basename(whl)} >pip.log 2>&1"
            " || { cat pip.log; exit 3; };"
            " /usr/bin/python3 -c 'import airlock_local_probe as m; print(m.VALUE)'",
            home, timeout=180)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("installed", r.stdout)
        self.assertEqual(self.tree(home), before, "pip wrote into the real home")

    # ---- 7. --self-test ---------------------------------------------------------------------

    def run_self_test(self, *opts):
        p = subprocess.run([base.AIRLOCK, "run", "--self-test", *opts], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=120, **self._popen_kwargs())
        return p

    def test_self_test_passes_here(self):
        p = self.run_self_test()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("nothing got out", p.stdout)
        self.assertNotIn("GOT OUT", p.stdout)
        for row in ("TCP to the host's 127.0.0.1", "UDP to the host's 127.0.0.1",
                    "raw IPv4 socket", "packet socket", "abstract Unix socket",
                    "ioctl(TIOCSTI) on fd 0", "ptrace the launcher", "io_uring_setup",
                    "unshare(CLONE_NEWUSER)", "personality(READ_IMPLIES_EXEC)", "fill /tmp",
                    "/var/tmp/airlock-self-test"):
            self.assertIn(row, p.stdout)
        self.assertRegex(p.stdout, r"ioctl\(TIOCSTI\) on fd 0 +refused +seccomp")

    def test_self_test_fails_naming_the_hole(self):
        # Exposing the host's /var/tmp brings its Unix sockets (and files) back into reach.
        p = self.run_self_test("--rw", "/var/tmp")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("GOT OUT", p.stdout)
        self.assertRegex(p.stdout, r"Unix socket /var/tmp/airlock-self-test\.\w+/canary\.sock")
        self.assertRegex(p.stdout, r"write /var/tmp/airlock-self-test\.\w+/written-from-the-jail")


class AsCaller(HardeningTestBase, unittest.TestCase):
    """As the user running the tests (root in CI)."""

    setUpClass = classmethod(base.AsCaller.setUpClass.__func__)


class AsUnprivilegedUser(HardeningTestBase, unittest.TestCase):
    """As `airlock-test`, a user without privileges (only when the tests run as root)."""

    setUpClass = classmethod(base.AsUnprivilegedUser.setUpClass.__func__)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        base.AIRLOCK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
