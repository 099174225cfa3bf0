"""The certificates of the HTTPS-inspection scenario, all made fresh in the run's temporary
directory and removed with it (no key is ever written anywhere else):

- the origin's CA and the origin's certificate (ECDSA P-256, for *.bench.test, bench.test and
  127.0.0.1), made with the openssl CLI; the proxies verify the origin against this CA;
- the interception CA every proxy signs its leaves with: made by `airlock ca init` when an
  airlock binary is given (ECDSA P-256), else by openssl the same way. Squid and mitmproxy get
  the same CA, so all three present leaves with the same kind of key and the client trusts one
  CA per target.
"""

import os
import subprocess

from .servers import BenchError

DOMAIN = "bench.test"


def _openssl(*args, cwd=None):
    run = subprocess.run(["openssl", *args], capture_output=True, text=True, cwd=cwd, timeout=60)
    if run.returncode != 0:
        raise BenchError(f"openssl {' '.join(args[:2])} failed: {run.stderr.strip()}")
    return run.stdout


class TlsFiles:
    def __init__(self, workdir, airlock_bin=None):
        self.dir = os.path.join(workdir, "tls")
        os.makedirs(self.dir)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        # Origin CA and origin leaf.
        self.origin_ca = self._p("origin-ca.crt")
        origin_ca_key = self._p("origin-ca.key")
        _openssl("req", "-x509", *ec, "-keyout", origin_ca_key, "-out", self.origin_ca,
                 "-days", "2", "-subj", "/CN=airlock bench origin CA",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        self.origin_key = self._p("origin.key")
        self.origin_cert = self._p("origin.crt")
        csr = self._p("origin.csr")
        _openssl("req", "-new", *ec, "-keyout", self.origin_key, "-out", csr,
                 "-subj", f"/CN=www.{DOMAIN}")
        ext = self._p("origin.ext")
        with open(ext, "w") as f:
            f.write(f"subjectAltName=DNS:*.{DOMAIN},DNS:{DOMAIN},IP:127.0.0.1\n"
                    "basicConstraints=critical,CA:FALSE\n"
                    "keyUsage=critical,digitalSignature\n"
                    "extendedKeyUsage=serverAuth\n")
        _openssl("x509", "-req", "-in", csr, "-CA", self.origin_ca, "-CAkey", origin_ca_key,
                 "-CAcreateserial", "-out", self.origin_cert, "-days", "2", "-extfile", ext)
        # Interception CA.
        ca_dir = self._p("interception-ca")
        self.ca_cert = os.path.join(ca_dir, "ca.crt")
        self.ca_key = os.path.join(ca_dir, "ca.key")
        if airlock_bin:
            run = subprocess.run([airlock_bin, "ca", "init", "--dir", ca_dir],
                                 capture_output=True, text=True, timeout=60)
            if run.returncode != 0:
                raise BenchError(f"airlock ca init failed: {run.stderr.strip()}")
            self.ca_made_by = "airlock ca init"
        else:
            os.makedirs(ca_dir)
            _openssl("req", "-x509", *ec, "-keyout", self.ca_key, "-out", self.ca_cert,
                     "-days", "2", "-subj", "/CN=airlock bench interception CA",
                     "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign")
            self.ca_made_by = "openssl"

    def _p(self, name):
        return os.path.join(self.dir, name)

    def ca_key_and_cert_pem(self):
        """Key then certificate in one PEM (mitmproxy's mitmproxy-ca.pem)."""
        with open(self.ca_key) as k, open(self.ca_cert) as c:
            return k.read() + c.read()
