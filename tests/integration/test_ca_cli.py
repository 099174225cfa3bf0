"""`airlock ca init` and `airlock ca show`: the files, their modes and contents, overwrite
protection, the fingerprint (checked against openssl), and usage errors (exit 2)."""

import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

from harness import env
from harness.proxy import run_airlock
from harness.tls_support import openssl


def sha256_fingerprint(cert_path):
    """openssl's SHA-256 fingerprint, normalised to upper-case colon hex."""
    out = openssl("x509", "-in", cert_path, "-noout", "-fingerprint", "-sha256")
    assert out.returncode == 0, out.stderr
    return out.stdout.decode().strip().split("=", 1)[1].upper()


def field(stdout, name):
    m = re.search(r"(?m)^\s*%s:\s*(\S+)" % re.escape(name), stdout)
    return m.group(1) if m else None


class CaCliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="airlock-itest-cacli-")
        self.addCleanup(self.tmp.cleanup)
        self.dir = os.path.join(self.tmp.name, "nested", "ca")

    def path(self, name):
        return os.path.join(self.dir, name)

    def init(self, *extra, directory=None):
        return run_airlock(["ca", "init", "--dir", directory or self.dir, *extra])

    def read(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()

    # -- init -----------------------------------------------------------------------------

    def test_init_creates_cert_and_key_with_modes(self):
        out = self.init()
        self.assertEqual(out.returncode, 0, out)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("ca.crt")).st_mode), 0o644)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("ca.key")).st_mode), 0o600)
        self.assertEqual(sorted(os.listdir(self.dir)), ["ca.crt", "ca.key"],
                         "staging files left behind")
        self.assertEqual(field(out.stdout, "sha256"), sha256_fingerprint(self.path("ca.crt")))

    def test_init_key_mode_ignores_permissive_umask(self):
        proc = subprocess.run([env.airlock_bin(), "ca", "init", "--dir", self.dir],
                              capture_output=True, text=True, timeout=env.t(20),
                              preexec_fn=lambda: os.umask(0))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("ca.key")).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("ca.crt")).st_mode), 0o644)

    def test_init_certificate_is_a_usable_ca(self):
        self.assertEqual(self.init().returncode, 0)
        cert = self.path("ca.crt")
        text = openssl("x509", "-in", cert, "-noout", "-text").stdout.decode()
        self.assertRegex(text, r"Basic Constraints: critical\n\s*CA:TRUE")
        self.assertRegex(text, r"Key Usage: critical\n\s*Certificate Sign, CRL Sign")
        self.assertIn("O = Airlock", text)
        # Self-signed and valid now.
        v = openssl("verify", "-CAfile", cert, cert)
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)
        # The key belongs to the certificate.
        pub_cert = openssl("x509", "-in", cert, "-noout", "-pubkey").stdout
        pub_key = openssl("pkey", "-in", self.path("ca.key"), "-pubout").stdout
        self.assertTrue(pub_key)
        self.assertEqual(pub_cert, pub_key)
        # Not encrypted: the proxy never prompts for a pass phrase.
        self.assertNotIn(b"ENCRYPTED", self.read("ca.key"))

    def test_init_refuses_to_overwrite_without_force(self):
        self.assertEqual(self.init().returncode, 0)
        cert, key = self.read("ca.crt"), self.read("ca.key")
        out = self.init()
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("--force", out.stderr)
        self.assertEqual(self.read("ca.crt"), cert)
        self.assertEqual(self.read("ca.key"), key)

    def test_init_refuses_when_only_the_key_exists(self):
        os.makedirs(self.dir)
        with open(self.path("ca.key"), "w") as f:
            f.write("precious\n")
        out = self.init()
        self.assertNotEqual(out.returncode, 0, out)
        self.assertEqual(self.read("ca.key"), b"precious\n")

    def test_init_force_replaces(self):
        self.assertEqual(self.init().returncode, 0)
        old = sha256_fingerprint(self.path("ca.crt"))
        old_key = self.read("ca.key")
        out = self.init("--force")
        self.assertEqual(out.returncode, 0, out)
        new = sha256_fingerprint(self.path("ca.crt"))
        self.assertNotEqual(old, new)
        self.assertNotEqual(old_key, self.read("ca.key"))
        self.assertEqual(field(out.stdout, "sha256"), new)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("ca.key")).st_mode), 0o600)

    # -- show -----------------------------------------------------------------------------

    def test_show_prints_openssl_fingerprint(self):
        self.assertEqual(self.init().returncode, 0)
        out = run_airlock(["ca", "show", "--dir", self.dir])
        self.assertEqual(out.returncode, 0, out)
        self.assertEqual(field(out.stdout, "sha256"), sha256_fingerprint(self.path("ca.crt")))
        self.assertRegex(out.stdout, r"(?m)^key:.*\(matches\)")
        self.assertRegex(out.stdout, r"(?m)^status:\s+ok")
        serial = openssl("x509", "-in", self.path("ca.crt"), "-noout", "-serial")
        want = serial.stdout.decode().strip().split("=", 1)[1].lstrip("0").upper()
        self.assertEqual(field(out.stdout, "serial").replace(":", "").lstrip("0").upper(),
                         want)

    def test_show_with_dir_equals_form(self):
        self.assertEqual(self.init().returncode, 0)
        out = run_airlock(["ca", "show", "--dir=%s" % self.dir])
        self.assertEqual(out.returncode, 0, out)

    def test_show_missing_ca_fails(self):
        out = run_airlock(["ca", "show", "--dir", os.path.join(self.tmp.name, "none")])
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("airlock ca init", out.stderr)

    def test_show_key_of_another_ca_fails(self):
        self.assertEqual(self.init().returncode, 0)
        other = os.path.join(self.tmp.name, "other")
        self.assertEqual(self.init(directory=other).returncode, 0)
        shutil.copy(os.path.join(other, "ca.key"), self.path("ca.key"))
        out = run_airlock(["ca", "show", "--dir", self.dir])
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stdout, r"(?m)^status:\s+unusable")

    def test_help(self):
        out = run_airlock(["ca", "--help"])
        self.assertEqual(out.returncode, 0, out)
        self.assertIn("usage: airlock ca init", out.stdout)

    # -- usage errors ---------------------------------------------------------------------

    def test_usage_errors_exit_2(self):
        cases = [
            [],
            ["bogus"],
            ["init", "--bogus"],
            ["init", "--dir"],
            ["init", "--dir="],
            ["show", "--force"],
            ["init", "extra-argument"],
            ["init", "show"],
        ]
        for args in cases:
            with self.subTest(args=args):
                # In an empty directory: the default --dir is ./certs, which must not appear.
                out = subprocess.run([env.airlock_bin(), "ca", *args], capture_output=True,
                                     text=True, timeout=env.t(20), cwd=self.tmp.name)
                self.assertEqual(out.returncode, 2, out)
                self.assertIn("usage:", out.stderr)
                self.assertEqual(out.stdout, "")
        self.assertEqual(os.listdir(self.tmp.name), [], "a usage error created files")


if __name__ == "__main__":
    unittest.main()
