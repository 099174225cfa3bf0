"""A CA rewritten in place is picked up on reload (issue 17, item 6): the interception CA's files
keep their names and get new content (a rotation by a configuration tool, a mounted Secret, a
copy), the proxy is sent SIGHUP, and a new inspected connection gets a leaf from the new CA, not
the old one. The reload compares the certificate's content, not the file names. The same holds
for `tls.upstream_ca`, and the files are watched: no SIGHUP is needed."""

import os
import signal
import tempfile
import time
import unittest

from harness import env
from harness.tls_support import AirlockCA, verify
from test_tls_interception import InterceptionCase


class CaRotationTest(InterceptionCase):
    def chain(self):
        certs, _ = self.showcerts("insp.test:%d" % self.good.port, "insp.test")
        return certs[0], certs[1:]

    def test_ca_rewritten_in_place_is_used_after_reload(self):
        leaf, chain = self.chain()
        self.assertEqual(verify(self.ica.cert, leaf, chain).returncode, 0)
        # Keep the old CA certificate to show the new leaf no longer chains to it.
        old = tempfile.NamedTemporaryFile(prefix="airlock-itest-old-ca-", suffix=".crt",
                                          delete=False)
        self.addCleanup(os.unlink, old.name)
        with open(self.ica.cert, "rb") as f:
            old.write(f.read())
        old.close()

        new = AirlockCA()
        self.addCleanup(new.cleanup)
        # In place: the same files opened and rewritten (inode and names unchanged).
        for src, dst in ((new.key, self.ica.key), (new.cert, self.ica.cert)):
            with open(src, "rb") as f:
                data = f.read()
            with open(dst, "r+b") as f:
                f.truncate(0)
                f.write(data)
        self.proxy.send_signal(signal.SIGHUP)

        deadline = time.monotonic() + env.t(10)
        while True:
            leaf, chain = self.chain()
            if verify(self.ica.cert, leaf, chain).returncode == 0:
                break
            self.assertLess(time.monotonic(), deadline,
                            "no leaf from the rewritten CA after SIGHUP; stderr:\n%s"
                            % self.proxy.stderr()[-3000:])
            time.sleep(0.1)
        self.assertNotEqual(verify(old.name, leaf, chain).returncode, 0,
                            "the new leaf still chains to the old CA")
        # And the requests through it work with the new CA.
        r = self.curl_ica(self.insp_url("/echo/allowed-rotated"))
        self.assertEqual(r.status, 200, r)

    def test_upstream_ca_rewritten_in_place_is_used_without_sighup(self):
        # The self-signed origin is not in the upstream bundle: refused as unverifiable.
        url = self.insp_url("/echo/allowed-upstream-ca", origin=self.selfsigned)
        r = self.curl_ica(url)
        self.assertEqual(r.status, 502, r)
        with open(self.certs.ca_cert, "rb") as f:
            original = f.read()

        def restore():
            with open(self.certs.ca_cert, "r+b") as f:
                f.truncate(0)
                f.write(original)
        self.addCleanup(restore)
        with open(self.certs.self_signed[0], "rb") as f:
            extra = f.read()
        # In place (same name and inode), and no SIGHUP: the file watch reloads.
        with open(self.certs.ca_cert, "r+b") as f:
            f.truncate(0)
            f.write(original + b"\n" + extra)
        deadline = time.monotonic() + env.t(10)
        while True:
            r = self.curl_ica(url)
            if r.status == 200:
                break
            self.assertLess(time.monotonic(), deadline,
                            "the rewritten upstream_ca was not picked up: %r; stderr:\n%s"
                            % (r, self.proxy.stderr()[-3000:]))
            time.sleep(0.2)


if __name__ == "__main__":
    unittest.main()
