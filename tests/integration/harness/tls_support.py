"""Helpers for the TLS interception tests: an interception CA made by `airlock ca init`,
origin certificates that should fail verification (self-signed, wrong name), openssl CLI
wrappers (s_client with any options, verify, x509), an HTTPS request sent by hand through an
intercepted tunnel, and the admin port's /metrics.

Only the openssl CLI and Python's ssl module are used; everything stays on loopback.
"""

import os
import re
import socket
import ssl
import subprocess
import tempfile
import urllib.request

from . import env
from .clients import RawClient, parse_responses
from .origin import OriginServer
from .base import ProxyTestCase
from .proxy import run_airlock

PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----\r?\n.*?-----END CERTIFICATE-----",
                      re.DOTALL)


def openssl(*args, input=None, cwd=None, timeout=None):
    """Runs the openssl CLI; returns the CompletedProcess (bytes)."""
    return subprocess.run(["openssl", *args], input=input, cwd=cwd, capture_output=True,
                          timeout=env.t(30) if timeout is None else timeout)


# `openssl req` arguments for a new unencrypted P-256 key.
EC_NEW_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def openssl_checked(*args, cwd=None):
    proc = openssl(*args, cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (" ".join(args[:2]),
                                                      proc.stderr.decode(errors="replace")))
    return proc.stdout.decode(errors="replace")


class AirlockCA:
    """The interception CA, made by the binary under test (`airlock ca init --dir DIR`)."""

    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="airlock-itest-ica-")
        self.directory = os.path.join(self._tmp.name, "ca")
        out = run_airlock(["ca", "init", "--dir", self.directory])
        if out.returncode != 0:
            self._tmp.cleanup()
            raise AssertionError("airlock ca init failed (exit %d): %s%s"
                                 % (out.returncode, out.stdout, out.stderr))
        self.init_output = out.stdout
        self.cert = os.path.join(self.directory, "ca.crt")
        self.key = os.path.join(self.directory, "ca.key")
        self.subject = openssl_checked("x509", "-in", self.cert, "-noout", "-subject",
                                "-nameopt", "RFC2253").strip().partition("=")[2]

    def cleanup(self):
        self._tmp.cleanup()


class OriginCerts:
    """The origins' certificates, made with the openssl CLI in a temp dir:

    - `ca_cert`: the CA the proxy's upstream_ca bundle holds;
    - `good`: signed by it, for the names and IPs given (DNS:insp.test, DNS:origin.test,
      IP:127.0.0.1 by default); `issue` makes more (CN: the first name, else the first IP);
    - `self_signed`: a self-signed certificate for the same names (in no bundle);
    - `other_name`: signed by the trusted CA but only for DNS:elsewhere.test.
    Each certificate is a (cert_path, key_path) pair.
    """

    def __init__(self, names=("insp.test", "origin.test"), ips=("127.0.0.1",)):
        self._tmp = tempfile.TemporaryDirectory(prefix="airlock-itest-ocerts-")
        self.directory = self._tmp.name
        self.ca_cert = self._path("origin-ca.crt")
        self.ca_key = self._path("origin-ca.key")
        openssl_checked("req", "-x509", *EC_NEW_KEY, "-keyout", self.ca_key, "-out", self.ca_cert,
                        "-days", "2", "-subj", "/CN=airlock itest origin CA",
                        "-addext", "basicConstraints=critical,CA:TRUE",
                        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        self.good = self.issue("good", names, ips)
        self.other_name = self.issue("other-name", ("elsewhere.test",), ())
        self.self_signed = self._self_signed("self-signed", names, ips)

    def _path(self, name):
        return os.path.join(self.directory, name)

    @staticmethod
    def _san(names, ips):
        return ",".join(["DNS:%s" % n for n in names] + ["IP:%s" % i for i in ips])

    def issue(self, stem, names, ips):
        cert, key, csr, ext = (self._path(stem + s) for s in (".crt", ".key", ".csr", ".ext"))
        openssl_checked("req", "-new", *EC_NEW_KEY, "-keyout", key, "-out", csr,
                        "-subj", "/CN=%s" % (tuple(names) + tuple(ips))[0])
        with open(ext, "w") as f:
            f.write("subjectAltName=%s\n" % self._san(names, ips))
            f.write("basicConstraints=critical,CA:FALSE\n")
            f.write("keyUsage=critical,digitalSignature\n")
            f.write("extendedKeyUsage=serverAuth\n")
        openssl_checked("x509", "-req", "-in", csr, "-CA", self.ca_cert, "-CAkey", self.ca_key,
                        "-CAcreateserial", "-out", cert, "-days", "2", "-sha256", "-extfile", ext)
        return cert, key

    def _self_signed(self, stem, names, ips):
        cert, key = self._path(stem + ".crt"), self._path(stem + ".key")
        openssl_checked("req", "-x509", *EC_NEW_KEY, "-keyout", key, "-out", cert, "-days", "2",
                        "-subj", "/CN=%s" % names[0],
                        "-addext", "subjectAltName=%s" % self._san(names, ips),
                        "-addext", "extendedKeyUsage=serverAuth")
        return cert, key

    @staticmethod
    def server_context(pair, alpn=("http/1.1",)):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*pair)
        if alpn:
            ctx.set_alpn_protocols(list(alpn))
        return ctx

    def cleanup(self):
        self._tmp.cleanup()


class AlpnOrigin(OriginServer):
    """An OriginServer that also records the ALPN protocol negotiated on each TLS connection
    (None when the client offered none)."""

    def __init__(self, tls_context):
        super().__init__(tls_context)
        self.alpn = []

    def _tls_succeeded(self, sock):
        with self._lock:
            self.alpn.append(sock.selected_alpn_protocol())


def s_client(proxy_port, connect, args=(), send=b"", timeout=None):
    """`openssl s_client -proxy 127.0.0.1:P -connect HOST:PORT ARGS`, stdin = `send` (then
    EOF, which ends the session unless ARGS has -ign_eof). Returns CompletedProcess (bytes)."""
    cmd = ["openssl", "s_client", "-proxy", "127.0.0.1:%d" % proxy_port, "-connect", connect]
    cmd += list(args)
    timeout = env.t(15) if timeout is None else timeout
    try:
        return subprocess.run(cmd, input=send, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("openssl s_client did not finish in %ss: %r" % (timeout, e.stdout))


def pem_certificates(data):
    """Every PEM certificate block in `data` (bytes), in order, as bytes."""
    return [m.group(0) + b"\n" for m in PEM_CERT.finditer(data)]


def x509_text(pem):
    return openssl("x509", "-noout", "-text", input=pem).stdout.decode(errors="replace")


def x509_field(pem, option):
    """`openssl x509 -noout -<option>` → the value after '=' (serial, enddate, ...)."""
    out = openssl("x509", "-noout", "-" + option, "-nameopt", "RFC2253",
                  input=pem).stdout.decode(errors="replace").strip()
    return out.partition("=")[2]


def verify(cafile, leaf_pem, untrusted_pems=(), args=()):
    """`openssl verify -CAfile cafile [-untrusted chain] ARGS leaf` → CompletedProcess(text)."""
    with tempfile.TemporaryDirectory(prefix="airlock-itest-verify-") as tmp:
        leaf = os.path.join(tmp, "leaf.pem")
        with open(leaf, "wb") as f:
            f.write(leaf_pem)
        cmd = ["verify", "-CAfile", cafile]
        if untrusted_pems:
            chain = os.path.join(tmp, "chain.pem")
            with open(chain, "wb") as f:
                f.write(b"".join(untrusted_pems))
            cmd += ["-untrusted", chain]
        proc = openssl(*cmd, *args, leaf)
        return subprocess.CompletedProcess(proc.args, proc.returncode,
                                           proc.stdout.decode(errors="replace"),
                                           proc.stderr.decode(errors="replace"))


class TlsTunnel:
    """CONNECT through the proxy, then TLS (Python's ssl) to the proxy's minted leaf; send
    hand-written HTTP/1.1 inside and read the answers. `connect_response` is the proxy's
    answer to the CONNECT. `ctx` replaces the default context (trusting `cafile`, ALPN
    http/1.1); `session` is offered for resumption."""

    def __init__(self, proxy_port, authority, cafile, server_name=None, timeout=None, ctx=None,
                 session=None):
        self.timeout = env.t(10) if timeout is None else timeout
        self.raw = RawClient(proxy_port, timeout=self.timeout)
        self.raw.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority))
        self.connect_response = self.raw.read_response(tunnel=True)
        self.tls = None
        self.buffer = bytearray()
        self.eof = False
        if self.connect_response is None or self.connect_response.status != 200:
            return
        if ctx is None:
            ctx = ssl.create_default_context(cafile=cafile)
            ctx.set_alpn_protocols(["http/1.1"])
        host = authority.rsplit(":", 1)[0].strip("[]")
        if server_name is None:
            server_name = host
        self.tls = ctx.wrap_socket(self.raw.sock, server_hostname=server_name, session=session)

    def send(self, data):
        self.tls.sendall(data.encode("latin-1") if isinstance(data, str) else data)

    def read_responses(self, count=1, head_request=()):
        """Reads until `count` complete responses arrived, EOF, or the timeout."""
        import time
        deadline = time.monotonic() + self.timeout
        while True:
            responses, _ = parse_responses(bytes(self.buffer), head_request, eof=self.eof)
            done = [r for r in responses if r.status >= 200]
            if len(done) >= count and all(r.complete for r in done[:count]):
                return done
            if self.eof or time.monotonic() >= deadline:
                return done
            self.tls.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.tls.recv(1 << 16)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            except (ssl.SSLError, ConnectionResetError, OSError):
                self.eof = True
                continue
            if not data:
                self.eof = True
            self.buffer += data

    def close(self):
        if self.tls is not None:
            try:
                self.tls.close()
            except OSError:
                pass
        self.raw.close()


def fetch_metrics(admin):
    """GET http://ADMIN/metrics (no proxy) → {sample name with labels: float}."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open("http://%s/metrics" % admin, timeout=env.t(10)) as resp:
        text = resp.read().decode()
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            samples[name.strip()] = float(value)
        except ValueError:
            pass
    return samples


class InspectedOriginCase(ProxyTestCase):
    """A ProxyTestCase with what an inspected rule needs, made per class and removed after: the
    proxy's interception CA (`ica`), origin certificates for `origin_names` (`certs`; None: the
    OriginCerts defaults) and a TLS origin serving them that records ALPN (`good`)."""

    origin_names = ("insp.test",)

    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts() if cls.origin_names is None else OriginCerts(names=cls.origin_names)
        cls.good = AlpnOrigin(OriginCerts.server_context(cls.certs.good)).start()

    @classmethod
    def extra_teardown(cls):
        cls.good.stop()
        cls.certs.cleanup()
        cls.ica.cleanup()
