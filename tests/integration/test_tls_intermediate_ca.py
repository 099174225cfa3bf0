"""An interception CA that is an intermediate under an organisation's root: the proxy sends it
after each leaf, so clients that trust only the root (as they would, with the root in their
store) verify the leaf. With a self-signed `airlock ca init` CA the leaf goes alone
(test_tls_interception.py, test_openssl_chain_verifies_for_requested_name).
"""

import os
import tempfile
import unittest

import requests

from harness import env
from harness.base import marker
from harness.tls_support import (EC_NEW_KEY, openssl_checked, pem_certificates, s_client,
                                 verify, x509_field)
from test_tls_interception import InterceptionCase, http_get


class OrganisationCa:
    """A root (no path length limit) and an intermediate CA it signed, made with the openssl
    CLI in a temporary directory."""

    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="airlock-itest-orgca-")
        d = self._tmp.name
        self.root = os.path.join(d, "root.crt")
        root_key = os.path.join(d, "root.key")
        openssl_checked("req", "-x509", *EC_NEW_KEY, "-keyout", root_key, "-out", self.root,
                        "-days", "2", "-subj", "/CN=airlock itest organisation root",
                        "-addext", "basicConstraints=critical,CA:TRUE",
                        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        self.cert = os.path.join(d, "intermediate.crt")
        self.key = os.path.join(d, "intermediate.key")
        csr, ext = os.path.join(d, "intermediate.csr"), os.path.join(d, "intermediate.ext")
        openssl_checked("req", "-new", *EC_NEW_KEY, "-keyout", self.key, "-out", csr,
                        "-subj", "/CN=airlock itest intermediate")
        with open(ext, "w") as f:
            f.write("basicConstraints=critical,CA:TRUE,pathlen:0\n"
                    "keyUsage=critical,keyCertSign,cRLSign\n"
                    "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid:always\n")
        openssl_checked("x509", "-req", "-in", csr, "-CA", self.root, "-CAkey", root_key,
                        "-CAcreateserial", "-out", self.cert, "-days", "2", "-sha256",
                        "-extfile", ext)
        os.chmod(self.key, 0o600)

    def cleanup(self):
        self._tmp.cleanup()


class IntermediateCaTest(InterceptionCase):
    @classmethod
    def extra_setup(cls):
        cls.org = OrganisationCa()
        super().extra_setup()

    @classmethod
    def extra_teardown(cls):
        super().extra_teardown()
        cls.org.cleanup()

    @classmethod
    def tls_section(cls):
        return {"ca_cert": cls.org.cert, "ca_key": cls.org.key,
                "upstream_ca": cls.certs.ca_cert}

    def test_the_intermediate_follows_the_leaf(self):
        m = marker()
        out = s_client(self.proxy.port, "insp.test:%d" % self.good.port,
                       ["-servername", "insp.test", "-showcerts", "-ign_eof"],
                       send=http_get("/echo/allowed-int-%s" % m, "insp.test"))
        self.assertIn(b"HTTP/1.1 200", out.stdout, out.stderr[-2000:])
        certs = pem_certificates(out.stdout)
        self.assertEqual(len(certs), 2, "expected the leaf and the intermediate, got %d "
                         "certificates" % len(certs))
        leaf, sent = certs
        with open(self.org.cert, "rb") as f:
            self.assertEqual(pem_certificates(f.read())[0], sent)
        self.assertEqual(x509_field(leaf, "issuer"), x509_field(sent, "subject"))
        ok = verify(self.org.root, leaf, [sent], ["-verify_hostname", "insp.test",
                                                  "-purpose", "sslserver"])
        self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr)
        # Without what was sent, the root alone does not reach the leaf.
        self.assertNotEqual(verify(self.org.root, leaf).returncode, 0)

    def test_clients_trusting_only_the_root_get_through(self):
        m = marker()
        r = self.curl(self.insp_url("/echo/allowed-int-curl-%s" % m),
                      args=["--cacert", self.org.root])
        self.assertEqual(r.status, 200, r)
        self.assert_audit(scheme="https", path="/echo/allowed-int-curl-%s" % m)
        proxies = {"https": "http://127.0.0.1:%d" % self.proxy.port}
        got = requests.get(self.insp_url("/echo/allowed-int-rq-%s" % m), proxies=proxies,
                           timeout=env.t(15), verify=self.org.root)
        self.assertEqual(got.status_code, 200)
        self.assert_audit(scheme="https", path="/echo/allowed-int-rq-%s" % m)


if __name__ == "__main__":
    unittest.main()
