#!/usr/bin/python3
"""Per-binary identity of issue 18, end to end: rules' `binaries` through `airlock run`'s relay.

One jail, one policy whose rule names curl: curl (also at the end of an `exec` chain) gets
through; wget, python3, a script run by python3 (whose program is python3) are refused with
binary_denied; a program whose executable was deleted, and one run from a memfd, have no
identity and are refused even where the rule names their path; a direct client of the proxy
has no identity either. The audit records name the program.

Usage: /usr/bin/python3 test_binaries.py /path/to/airlock [unittest args...]
Like test_launcher.py (whose helpers it uses), every test runs as the caller and, when that is
root, as the unprivileged user airlock-test; nothing of a jail may be left behind.
"""

import grp
import hashlib
import os
import shutil
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_launcher as base  # noqa: E402

# A request through the proxy variables; prints "<tag> <status>".
PY_GET = r"""
import sys, urllib.request, urllib.error
tag, url = sys.argv[1], sys.argv[2]
try:
    print(tag, urllib.request.urlopen(url, timeout=10).status, flush=True)
except urllib.error.HTTPError as e:
    print(tag, e.code, flush=True)
"""

# Copies python3 to argv[1], runs the copy, which deletes itself before its request.
PY_DELETED = r"""
import os, subprocess, sys
copy, url = sys.argv[1], sys.argv[2]
shutil = __import__("shutil")
shutil.copy2("/usr/bin/python3", copy)
code = ("import os, sys, urllib.request, urllib.error\n"
        "os.unlink(sys.argv[1])\n"
        "try:\n"
        "    print('deleted', urllib.request.urlopen(sys.argv[2], timeout=10).status)\n"
        "except urllib.error.HTTPError as e:\n"
        "    print('deleted', e.code)\n")
subprocess.run([copy, "-c", code, copy, url], check=False)
"""

# Runs curl from a memfd (fexecve): its /proc/PID/exe is "/memfd:curl (deleted)".
PY_MEMFD = r"""
import os, shutil, sys
fd = os.memfd_create("curl", 0)
with open(shutil.which("curl"), "rb") as f:
    os.write(fd, f.read())
os.execve(fd, ["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "memfd %{http_code}\n",
               sys.argv[1]], dict(os.environ))
"""


class BinariesTestBase(base.LauncherTestBase):
    """Rules by program; mixed into one TestCase per user variant."""

    for _name in [n for n in vars(base.LauncherTestBase) if n.startswith("test_")]:
        locals()[_name] = None
    del _name

    def relay_socket(self):
        # Not below /tmp, which the jail replaces: the launcher must hide it (as in
        # test_launcher.py's relay test).
        sock_dir = tempfile.mkdtemp(prefix="airlock-itest-bin-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, sock_dir, True)
        os.chmod(sock_dir, 0o755)
        return os.path.join(sock_dir, "relay.sock")

    def test_binaries_rule_allows_curl_and_refuses_other_programs(self):
        oport, _ = self.start_origins()
        audit = os.path.join(self.tmp, "audit.jsonl")
        sock = self.relay_socket()
        group = ""
        if self.user is not None:
            group = f", relay_group: {grp.getgrgid(self.user.pw_gid).gr_name}"
        curl = os.path.realpath(shutil.which("curl"))
        python = os.path.realpath("/usr/bin/python3")
        copy = os.path.join(self.work, "py-copy")  # the same path inside (the work directory)
        policy = ("listen: {proxy: '127.0.0.1:0', admin: 'off', relay: '" + sock + "'" + group
                  + "}\n"
                  f"audit: {{path: '{audit}'}}\n"
                  "agents:\n"
                  "  default: {rules: [web]}\n"
                  "  coder: {rules: [web]}\n"
                  "rules:\n"
                  f"  - {{name: web, hosts: [allowed.test], addresses: [127.0.0.1],"
                  f" allow_cidrs: [127.0.0.1/32], ports: [{oport}],"
                  f" binaries: [{curl}, {copy}]}}\n")
        port = self.start_proxy(policy)
        captured, _ = base.capabilities.has("capture")
        for name, text in (("get.py", PY_GET), ("deleted.py", PY_DELETED), ("memfd.py", PY_MEMFD)):
            path = os.path.join(self.work, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o644)
        script = os.path.join(self.work, "script.py")
        with open(script, "w") as f:
            f.write("#!/usr/bin/python3\n" + PY_GET)
        os.chmod(script, 0o755)
        url = f"http://allowed.test:{oport}"
        w = "-o /dev/null -w"
        r = self.jail(
            f"curl -sS --max-time 10 {w} 'curl %{{http_code}}\\n' {url}/by-curl;"
            f" sh -c \"exec curl -sS --max-time 10 {w} 'exec %{{http_code}}\\n' {url}/by-exec\";"
            f" wget -q -O /dev/null -T 10 -t 1 {url}/by-wget; echo wget $?;"
            f" /usr/bin/python3 get.py python {url}/by-python;"
            f" ./script.py script {url}/by-script;"
            f" /usr/bin/python3 deleted.py {copy} {url}/by-deleted;"
            f" /usr/bin/python3 memfd.py {url}/by-memfd;"
            # Captured (no proxy variables): the program is looked up the same way, through
            # the address the program was going to.
            + (f" ( {self.UNSET_PROXY} curl -sS --max-time 10 {w} 'captured %{{http_code}}\\n'"
               f" {url}/by-captured-curl; /usr/bin/python3 get.py captured-python"
               f" {url}/by-captured-python )" if captured else " true"),
            "--proxy", f"unix:{sock}", "--proxy-protocol", "--agent", "coder", timeout=90)
        out = r.stdout
        self.assertIn("curl 200", out, r.stderr)
        self.assertIn("exec 200", out, r.stderr)
        self.assertIn("wget 8", out, r.stderr)  # 8: the server answered with an error
        self.assertIn("python 403", out, r.stderr)
        self.assertIn("script 403", out, r.stderr)  # a script's program is its interpreter
        self.assertIn("deleted 403", out, r.stderr)
        self.assertIn("memfd 403", out, r.stderr)
        if captured:
            self.assertIn("captured 200", out, r.stderr)
            self.assertIn("captured-python 403", out, r.stderr)
            rec = self.audit_records(audit, path="/by-captured-curl")
            self.assertEqual(rec[0]["binary"], curl, rec[0])

        with open(curl, "rb") as f:
            curl_hash = hashlib.sha256(f.read()).hexdigest()
        rec = self.audit_records(audit, path="/by-curl")
        self.assertEqual(len(rec), 1)
        self.assertEqual(rec[0]["decision"], "allow", rec[0])
        self.assertEqual(rec[0]["binary"], curl, rec[0])
        self.assertEqual(rec[0]["binary_sha256"], curl_hash, rec[0])
        rec = self.audit_records(audit, path="/by-exec")
        self.assertEqual(rec[0]["binary"], curl, rec[0])
        for path, program in (("/by-wget", os.path.realpath(shutil.which("wget"))),
                              ("/by-python", python), ("/by-script", python)):
            rec = self.audit_records(audit, path=path)
            self.assertEqual(len(rec), 1, path)
            self.assertEqual(rec[0]["reason"], "binary_denied", rec[0])
            self.assertEqual(rec[0]["binary"], program, rec[0])
        # The script's record has its interpreter's parent chain: sh, the jail's command.
        rec = self.audit_records(audit, path="/by-script")
        self.assertTrue(rec[0]["binary_ancestors"], rec[0])
        for path in ("/by-deleted", "/by-memfd"):
            rec = self.audit_records(audit, path=path)
            self.assertEqual(len(rec), 1, path)
            self.assertEqual(rec[0]["reason"], "binary_denied", rec[0])
            self.assertNotIn("binary", rec[0])  # no identity: refused, not guessed

        # A direct client of the proxy has no program: the rule never matches it.
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}))
        with self.assertRaises(urllib.error.HTTPError) as caught:
            opener.open(f"{url}/direct", timeout=10)
        self.assertEqual(caught.exception.code, 403)
        self.assertIn("this connection has none", caught.exception.headers.get("Proxy-Status", ""))
        rec = self.audit_records(audit, path="/direct")
        self.assertEqual(rec[0]["reason"], "binary_denied", rec[0])
        self.assertNotIn("binary", rec[0])


class AsCaller(BinariesTestBase, unittest.TestCase):
    """As the user running the tests (root in CI)."""

    setUpClass = classmethod(base.AsCaller.setUpClass.__func__)


class AsUnprivilegedUser(BinariesTestBase, unittest.TestCase):
    """As `airlock-test`, a user without privileges (only when the tests run as root)."""

    setUpClass = classmethod(base.AsUnprivilegedUser.setUpClass.__func__)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        base.AIRLOCK = os.path.abspath(sys.argv.pop(1))
        os.environ["AIRLOCK_BIN"] = base.AIRLOCK  # for the harness's proxy starter
    # As test_launcher.py: exit 77 when something was skipped (ctest shows it), 1 under CI=true
    # when a skip is not on the harness's allow-list.
    loader, here = unittest.defaultTestLoader, sys.modules[__name__]
    suite = (loader.loadTestsFromNames(sys.argv[1:], here) if sys.argv[1:]
             else loader.loadTestsFromModule(here))
    sys.exit(base.runner.run_suite(suite))
