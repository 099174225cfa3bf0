"""A throw-away test CA and server certificate, made with the openssl CLI at test time."""

import os
import ssl
import subprocess
import tempfile


class TestCA:
    """CA + one server certificate for DNS:origin.test, IP:127.0.0.1 (and any extra names).

    Files: ca_cert, ca_key, server_cert, server_key (PEM paths inside `directory`).
    """

    def __init__(self, directory=None, names=("origin.test",), ips=("127.0.0.1",)):
        self._tmp = None
        if directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="airlock-itest-ca-")
            directory = self._tmp.name
        self.directory = directory
        self.ca_cert = os.path.join(directory, "ca.crt")
        self.ca_key = os.path.join(directory, "ca.key")
        self.server_cert = os.path.join(directory, "server.crt")
        self.server_key = os.path.join(directory, "server.key")
        self._make(list(names), list(ips))

    def _run(self, *args):
        proc = subprocess.run(["openssl", *args], cwd=self.directory, capture_output=True,
                              text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError("openssl %s failed: %s" % (args[0], proc.stderr))

    def _make(self, names, ips):
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        self._run("req", "-x509", *ec, "-keyout", self.ca_key, "-out", self.ca_cert,
                  "-days", "2", "-subj", "/CN=airlock integration test CA",
                  "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        csr = os.path.join(self.directory, "server.csr")
        self._run("req", "-new", *ec, "-keyout", self.server_key, "-out", csr,
                  "-subj", "/CN=%s" % (names[0] if names else "localhost"))
        san = ",".join(["DNS:%s" % n for n in names] + ["IP:%s" % i for i in ips])
        ext = os.path.join(self.directory, "server.ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=%s\n" % san)
            f.write("basicConstraints=critical,CA:FALSE\n")
            f.write("keyUsage=critical,digitalSignature\n")
            f.write("extendedKeyUsage=serverAuth\n")
        self._run("x509", "-req", "-in", csr, "-CA", self.ca_cert, "-CAkey", self.ca_key,
                  "-CAcreateserial", "-out", self.server_cert, "-days", "2", "-sha256",
                  "-extfile", ext)

    def server_context(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.server_cert, self.server_key)
        return ctx

    def client_context(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(self.ca_cert)
        return ctx

    def cleanup(self):
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def fresh_private_key_pem():
    """A private key made now (never a key kept in the repository): PKCS#8 PEM from openssl."""
    out = subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519"], capture_output=True,
                         text=True, check=True, timeout=60)
    return out.stdout
