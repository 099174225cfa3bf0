#!/usr/bin/python3
"""The launcher findings of the red-team run on the jail, each tried with the real `airlock run`:
the work directory (home, system directories), setuid bits planted through the writable work
directory, secrets rotated by rename under --policy, env secrets without a placeholder, --rw
paths redirected by a planted symlink, tmpfs inode limits, and the proxy's own files.

Usage: /usr/bin/python3 test_redteam.py /path/to/airlock [unittest args...]
Like test_launcher.py (whose helpers it uses), every test runs as the caller and, when that is
root, as the unprivileged user airlock-test; nothing of a jail may be left behind.
"""

import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_launcher as base  # noqa: E402

RUN_TIMEOUT = base.RUN_TIMEOUT


class RedTeamTestBase(base.LauncherTestBase):
    """The findings' tests; mixed into one TestCase per user variant."""

    # The base class's own tests run in test_launcher.py, not again here.
    for _name in [n for n in vars(base.LauncherTestBase) if n.startswith("test_")]:
        locals()[_name] = None
    del _name

    # ---- 1. the work directory ----------------------------------------------------------

    def test_home_and_system_directories_are_not_the_work_directory(self):
        home = os.path.join(self.tmp, "home")
        os.mkdir(home)
        bashrc = os.path.join(home, ".bashrc")
        with open(bashrc, "w") as f:
            f.write("# the caller's bashrc\n")
        self.own(home, bashrc)
        p = self.run_in(home, "run", "--", "sh", "-c", "echo pwned >> ~/.bashrc", home=home)
        self.assertEqual(p.returncode, 125, p.stdout + p.stderr)
        self.assertIn(f"the work directory {home} is your home directory", p.stderr)
        self.assertIn("--workdir DIR", p.stderr)
        with open(bashrc) as f:
            self.assertEqual(f.read(), "# the caller's bashrc\n")
        # An ancestor of the home, also named explicitly, and through a symlink.
        link = os.path.join(self.outside, "to-tmp")
        os.symlink(self.tmp, link)
        for args in (["--workdir", self.tmp], ["--workdir", link]):
            p = self.run_in(self.work, "run", *args, "--", "true", home=home)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn(f"contains your home directory {home}", p.stderr)
        for d in ("/etc", "/usr/lib", "/var"):
            p = self.run_in(d, "run", "--", "sh", "-c", "touch airlock-redteam-x")
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn(f"the work directory {d} is", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "airlock-redteam-x")))
        # A project directory below the home still works.
        proj = os.path.join(home, "proj")
        os.mkdir(proj)
        self.own(proj)
        p = self.run_in(proj, "run", "--", "sh", "-c", "echo ok > out.txt", home=home)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(proj, "out.txt")))

    # ---- 2. setuid bits planted in the work directory -------------------------------------

    def test_no_setuid_or_setgid_bits_from_the_jail(self):
        r = self.jail("cp /bin/cat suidcat && chmod 4755 suidcat; echo chmod4755=$?;"
                      " chmod 2755 suidcat; echo chmod2755=$?; chmod u+s suidcat; echo us=$?;"
                      " chmod 755 suidcat; echo chmod755=$?;"
                      " python3 -c 'import os; os.open(\"made\", os.O_CREAT | os.O_WRONLY, 0o4755)'"
                      " 2>&1 | tail -1; ls made 2>/dev/null || echo not-made;"
                      " python3 -c 'import os; print(\"nosuid\", bool(os.statvfs(\".\").f_flag"
                      " & os.ST_NOSUID))'")
        out = r.stdout
        for step in ("chmod4755", "chmod2755", "us"):
            self.assertRegex(out, rf"{step}=[1-9]", out + r.stderr)
        self.assertIn("chmod755=0", out)
        self.assertIn("Operation not permitted", r.stderr + out)
        self.assertIn("PermissionError", out)
        self.assertIn("not-made", out)
        self.assertIn("nosuid True", out)
        mode = os.stat(os.path.join(self.work, "suidcat")).st_mode
        self.assertEqual(mode & 0o7777, 0o755, oct(mode))

    # ---- 3. secrets rotated by rename; 7. the proxy's files -------------------------------

    def proxy_files(self, secrets="secrets"):
        """A proxy's directory as the red team had it: a secret file below it (by default) and
        the CA key in certs/; the audit log and the policy each in a directory of their own, so
        that hiding the policy's directory hides neither the secret's nor the key's (each must
        be hidden by its own rule for the tests to pass)."""
        pxy = os.path.join(self.outside, "pxy")
        logs = os.path.join(self.outside, "logs")
        conf = os.path.join(self.outside, "conf")
        sdir = os.path.join(pxy, secrets) if not os.path.isabs(secrets) else secrets
        for d in (pxy, logs, conf, sdir, os.path.join(pxy, "certs")):
            os.makedirs(d, exist_ok=True)
        files = {os.path.join(sdir, "tok"): "OLDSECRET-value\n",
                 os.path.join(pxy, "certs", "ca.key"): "CA-PRIVATE-KEY\n",
                 os.path.join(logs, "audit.jsonl"): '{"audit": "AUDIT-RECORD"}\n',
                 os.path.join(conf, "ca.crt"): "CA-CERTIFICATE\n"}
        policy = os.path.join(conf, "policy.yaml")
        files[policy] = (
            f"tls: {{ca_cert: {conf}/ca.crt, ca_key: {pxy}/certs/ca.key}}\n"
            f"audit: {{path: {logs}/audit.jsonl}}\n"
            f"secrets:\n  filesec: {{file: {sdir}/tok}}\n"
            "  envsec: {env: UPSTREAM_BEARER}\n"
            "  phsec: {env: GH_THING, placeholder: 'ghp_PLACEHOLDER0000000000000',"
            " hosts: [origin.test]}\n"
            "agents: {default: {rules: []}}\nrules: []\n")
        for path, text in files.items():
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o644)
        self.own(pxy, logs, conf, sdir, *files)
        return pxy, policy, os.path.join(sdir, "tok")

    def test_secret_rotated_by_rename_stays_hidden(self):
        # The host's /tmp is not the jail's: --ro brings the proxy's directory into view, as any
        # visible directory of the host would be.
        pxy, policy, tok = self.proxy_files()
        # The jail polls the secret's path; the host rotates it (docs/policy.md, "Rotation":
        # write a new file, rename it over the old) while the jail runs.
        cmd = self._command(
            f"touch started; i=0; while [ $i -lt 40 ]; do cat {tok} 2>/dev/null; i=$((i+1));"
            " sleep 0.05; done; ls " + os.path.dirname(tok) + "; echo lsrc=$?",
            ["--policy", policy, "--ro", self.outside])
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, **self._popen_kwargs())
        self.launcher_pids.append(p.pid)
        started = os.path.join(self.work, "started")
        deadline = base.time.monotonic() + RUN_TIMEOUT
        while not os.path.exists(started) and p.poll() is None and base.time.monotonic() < deadline:
            base.time.sleep(0.02)
        with open(tok + ".new", "w") as f:
            f.write("NEWSECRET-value\n")
        os.chmod(tok + ".new", 0o644)
        self.own(tok + ".new")
        os.rename(tok + ".new", tok)
        out, err = p.communicate(timeout=RUN_TIMEOUT)
        self._record_ns()
        self.assert_no_sanitizer_reports(err)
        self.assertEqual(p.returncode, 0, err)
        self.assertTrue(os.path.exists(started), err)
        self.assertNotIn("SECRET-value", out)
        self.assertNotIn("lsrc=0", out)

    def test_secret_sharing_the_work_directory_is_refused(self):
        # A secret whose directory is (or holds) the work directory cannot be hidden by
        # directory without hiding the work: refused, naming both.
        pxy, policy, tok = self.proxy_files(secrets=self.work)
        r = self.jail("cat tok", "--policy", policy, rc=125)
        self.assertIn(f"secret filesec of --policy {policy} is {tok}, in {self.work}", r.stderr)
        self.assertIn("which holds the work directory", r.stderr)
        self.assertNotIn("OLDSECRET", r.stdout)

    def test_policy_audit_log_and_proxy_files_are_hidden(self):
        pxy, policy, tok = self.proxy_files()
        logs = os.path.join(self.outside, "logs")
        conf = os.path.dirname(policy)
        r = self.jail(f"cat {policy}; cat {logs}/audit.jsonl; cat {pxy}/certs/ca.key; cat {tok};"
                      f" ls {conf} {logs} {pxy}/certs {pxy}/secrets; ls {pxy}; echo done",
                      "--policy", policy, "--ro", self.outside)
        for leak in ("AUDIT-RECORD", "CA-PRIVATE-KEY", "OLDSECRET", "secrets:", "policy.yaml",
                     "audit.jsonl", "ca.key", "tok"):
            self.assertNotIn(leak, r.stdout)
        # The proxy's directory itself holds none of the files: it stays in view.
        self.assertIn("certs", r.stdout)
        self.assertIn("done", r.stdout)
        # The policy in the work directory: the directory stays, the file alone is hidden.
        local = os.path.join(self.work, "policy.yaml")
        shutil.copy(policy, local)
        os.chmod(local, 0o644)
        self.own(local)
        r = self.jail("cat policy.yaml; echo rc=$?; touch x && echo wrote", "--policy", local)
        self.assertNotIn("secrets:", r.stdout)
        self.assertIn("wrote", r.stdout)

    # ---- 4. secret variables ----------------------------------------------------------------

    def test_policy_secret_variables_never_reach_the_agent(self):
        pxy, policy, tok = self.proxy_files()
        env = dict(os.environ, UPSTREAM_BEARER="bearer-REAL-VALUE", GH_THING="ghp_REAL_VALUE")
        r = self.jail("env", "--policy", policy, env=env)
        self.assertNotIn("REAL", r.stdout)
        self.assertNotIn("UPSTREAM_BEARER", r.stdout)
        self.assertIn("GH_THING=ghp_PLACEHOLDER0000000000000", r.stdout)
        # --env still passes one on purpose.
        r = self.jail("printenv UPSTREAM_BEARER", "--policy", policy, "--env", "UPSTREAM_BEARER",
                      env=env)
        self.assertEqual(r.stdout.strip(), "bearer-REAL-VALUE")

    def test_secret_looking_names_and_values_are_dropped(self):
        leaks = {"SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/LEAK1",
                 "SENTRY_DSN": "https://LEAK2@o1.ingest.sentry.io/1", "JWT": "LEAK3",
                 "BEARER": "LEAK4", "UPSTREAM_AUTHORIZATION": "LEAK5",
                 "MY_HEADER": "Bearer LEAK6",
                 "SESSION": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.LEAK7sig"}
        env = dict(os.environ, PLAIN="ok", **leaks)
        r = self.jail("env", env=env)
        self.assertIn("PLAIN=ok", r.stdout)
        for i in range(1, 8):
            self.assertNotIn(f"LEAK{i}", r.stdout)

    # ---- 5. a planted symlink redirects the next run's --rw -------------------------------

    def test_planted_symlink_does_not_redirect_the_next_runs_binds(self):
        victim = os.path.join(self.outside, "victim")
        os.makedirs(os.path.join(victim, "cache"))
        os.makedirs(os.path.join(self.work, "deps", "cache"))
        self.own(victim, os.path.join(victim, "cache"), os.path.join(self.work, "deps"),
                 os.path.join(self.work, "deps", "cache"))
        # The first run plants the link (its work directory is writable, as it should be).
        self.jail(f"mv deps deps_old && ln -s {victim} deps")
        self.assertTrue(os.path.islink(os.path.join(self.work, "deps")))
        # The next run asks for deps/cache: refused, naming the link, and nothing is written.
        for opt in ("--rw", "--ro"):
            r = self.jail("echo pwned > deps/cache/x", opt, "deps/cache", rc=125)
            self.assertIn(f"{self.work}/deps leads to {victim}", r.stderr)
        self.assertEqual(os.listdir(os.path.join(victim, "cache")), [])
        # Named by its own path (outside the work directory), the directory is bound as asked.
        self.jail("echo ok > " + os.path.join(victim, "cache", "y"), "--rw",
                  os.path.join(victim, "cache"))
        self.assertTrue(os.path.exists(os.path.join(victim, "cache", "y")))

    # ---- 6. tmpfs inodes ------------------------------------------------------------------

    def test_tmpfs_inodes_are_bounded(self):
        # --tmpfs-size 1M: at most 4096 inodes each (the floor), where size= alone let the
        # red team create 400,000 empty files and grow the kernel's slab by 499 MiB.
        r = self.python_in_jail(
            "import errno, os\n"
            "for d in ('/tmp', '/dev/shm', os.environ['HOME']):\n"
            "    n = 0\n"
            "    try:\n"
            "        while n < 20000:\n"
            "            open(os.path.join(d, 'f%d' % n), 'w').close()\n"
            "            n += 1\n"
            "        print(d, 'created', n)\n"
            "    except OSError as e:\n"
            "        print(d, errno.errorcode[e.errno], n)\n",
            "--tmpfs-size", "1M")
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 3, r.stdout + r.stderr)
        for line in lines:
            where, err, n = line.split()
            self.assertEqual(err, "ENOSPC", line)
            self.assertLess(int(n), 4096, line)
            self.assertGreater(int(n), 1000, line)


class AsCaller(RedTeamTestBase, unittest.TestCase):
    """As the user running the tests (root in CI)."""

    setUpClass = classmethod(base.AsCaller.setUpClass.__func__)


class AsUnprivilegedUser(RedTeamTestBase, unittest.TestCase):
    """As `airlock-test`, a user without privileges (only when the tests run as root)."""

    setUpClass = classmethod(base.AsUnprivilegedUser.setUpClass.__func__)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        base.AIRLOCK = os.path.abspath(sys.argv.pop(1))
        os.environ["AIRLOCK_BIN"] = base.AIRLOCK  # for the harness's proxy starter
    unittest.main(verbosity=2)
