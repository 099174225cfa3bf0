"""Minted leaves for IP-literal CONNECTs (issue 17, item 5): the leaf names the IP and also the
subject alternative names of the origin's verified certificate, as mitmproxy does, so that a
client that sends no SNI for an IP target and checks another name (npm's agent checks
`localhost`) accepts it.

The real client is Node's https stack: a CONNECT through the proxy, then tls.connect on the
tunnel with no servername (Node sends no SNI for an IP) and checkServerIdentity for
`localhost`, as npm's agent does against an IP-literal registry. And npm itself (the
issue's client): `npm ping` against a registry on https://127.0.0.1:PORT/ through the
inspected rule, trusting only the interception CA; and the same against an origin whose
certificate names only the IP, where the leaf can name nothing else and npm refuses it."""

import json
import os
import socket
import ssl
import subprocess
import tempfile
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
from harness.origin import OriginServer
from harness.proxy import make_policy, tunnel_rule
from harness.tls_support import AirlockCA, AlpnOrigin, OriginCerts

# argv: proxy port, CONNECT authority, CA file, path. Prints {"status", "body"} or {"error"}.
NODE_HTTPS = r"""
const http = require('http'), tls = require('tls'), fs = require('fs');
const [proxyPort, authority, caFile, path] = process.argv.slice(1);
const done = (o) => { console.log(JSON.stringify(o)); process.exit(0); };
const req = http.request({ host: '127.0.0.1', port: +proxyPort, method: 'CONNECT',
                           path: authority, headers: { host: authority } });
req.on('error', (e) => done({ error: 'CONNECT: ' + e.message }));
req.on('connect', (res, socket) => {
  if (res.statusCode !== 200) return done({ error: 'CONNECT answered ' + res.statusCode });
  const t = tls.connect({ socket, ca: fs.readFileSync(caFile),
                          checkServerIdentity: (h, cert) => tls.checkServerIdentity('localhost', cert) });
  t.on('error', (e) => done({ error: e.code || e.message }));
  t.on('secureConnect', () => {
    t.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  });
  let data = '';
  t.on('data', (d) => { data += d; });
  t.on('end', () => done({ status: +data.split(' ')[1], body: data.split('\r\n\r\n')[1] || '' }));
});
req.end();
"""


class IpLiteralLeafTest(ProxyTestCase):
    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts(names=("localhost", "api.local.test"), ips=("127.0.0.1",))
        cls.good = AlpnOrigin(OriginCerts.server_context(cls.certs.good)).start()
        # npm registries: GET /-/ping answers 200 `{}` (the fallback; npm ping reads no more).
        cls.registry = OriginServer(OriginCerts.server_context(cls.certs.good),
                                    fallback=b"{}").start()
        ip_only = cls.certs.issue("ip-only", (), ("127.0.0.1",))
        cls.ip_only = OriginServer(OriginCerts.server_context(ip_only), fallback=b"{}").start()

    @classmethod
    def extra_teardown(cls):
        cls.ip_only.stop()
        cls.registry.stop()
        cls.good.stop()
        cls.certs.cleanup()
        cls.ica.cleanup()

    @classmethod
    def policy(cls):
        return make_policy([
            tunnel_rule(cls.good.port, name="ip-inspected", hosts=["127.0.0.1"], addresses=None,
                        inspect=True, methods=["GET"], paths=[r"^/echo/.*"]),
            tunnel_rule(cls.good.port, name="name-inspected", hosts=["api.local.test"],
                        inspect=True, methods=["GET"], paths=[r"^/echo/.*"]),
            tunnel_rule(cls.registry.port, name="npm-registry", hosts=["127.0.0.1"],
                        addresses=None, inspect=True, methods=["GET"], paths=[r"^/-/ping"]),
            tunnel_rule(cls.ip_only.port, name="npm-ip-only", hosts=["127.0.0.1"],
                        addresses=None, inspect=True, methods=["GET"], paths=[r"^/-/ping"]),
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert})

    def leaf_names(self, authority, server_name=None):
        """The subjectAltName of the leaf the proxy presents for CONNECT `authority`."""
        sock = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=env.t(10))
        self.addCleanup(sock.close)
        sock.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            self.assertTrue(chunk, head)
            head += chunk
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
        ctx = ssl.create_default_context(cafile=self.ica.cert)
        ctx.check_hostname = False
        tls = ctx.wrap_socket(sock, server_hostname=server_name)
        self.addCleanup(tls.close)
        return sorted(tls.getpeercert()["subjectAltName"])

    def test_ip_literal_leaf_names_the_origin_names_too(self):
        names = self.leaf_names("127.0.0.1:%d" % self.good.port)
        self.assertEqual(names, [("DNS", "api.local.test"), ("DNS", "localhost"),
                                 ("IP Address", "127.0.0.1")])

    def test_name_connect_leaf_names_only_the_name(self):
        names = self.leaf_names("api.local.test:%d" % self.good.port, "api.local.test")
        self.assertEqual(names, [("DNS", "api.local.test")])

    def test_node_without_sni_checking_localhost(self):
        m = marker()
        out = subprocess.run(["node", "-e", NODE_HTTPS, str(self.proxy.port),
                              "127.0.0.1:%d" % self.good.port, self.ica.cert, "/echo/%s" % m],
                             capture_output=True, text=True, timeout=env.t(30))
        self.assertEqual(out.returncode, 0, out.stderr)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual(got.get("status"), 200, got)
        self.assertEqual(json.loads(got["body"])["path"], "/echo/%s" % m)
        rec = self.proxy.wait_audit(path="/echo/%s" % m)
        self.assertIsNotNone(rec)
        self.assertEqual((rec["scheme"], rec["host"], rec["rule"]),
                         ("https", "127.0.0.1", "ip-inspected"))

    def npm_ping(self, port):
        """`npm ping` against https://127.0.0.1:PORT/ through the proxy, trusting only the
        interception CA, with its own cache and (empty) config files and no proxy or npm
        settings from the environment (NO_PROXY could bypass the proxy), so nothing outside
        the test is read or written and no other registry is asked."""
        home = tempfile.TemporaryDirectory(prefix="airlock-itest-npm-")
        self.addCleanup(home.cleanup)
        userconfig, globalconfig = (os.path.join(home.name, n) for n in ("npmrc", "global-npmrc"))
        for path in (userconfig, globalconfig):
            open(path, "w").close()
        environ = {k: v for k, v in os.environ.items()
                   if not k.lower().startswith("npm_") and "proxy" not in k.lower()}
        environ["HOME"] = home.name
        cmd = ["npm", "ping", "--registry", "https://127.0.0.1:%d/" % port,
               "--https-proxy", "http://127.0.0.1:%d" % self.proxy.port, "--noproxy", "",
               "--cafile", self.ica.cert, "--strict-ssl=true",
               "--cache", os.path.join(home.name, "cache"),
               "--userconfig", userconfig, "--globalconfig", globalconfig,
               "--fetch-retries=0", "--update-notifier=false", "--loglevel=verbose"]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=home.name, env=environ,
                              timeout=env.t(60))

    def test_npm_ping_ip_literal_registry(self):
        mark = self.proxy.audit_mark()
        out = self.npm_ping(self.registry.port)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("PONG", out.stdout + out.stderr)
        rec = self.proxy.wait_audit(after=mark, rule="npm-registry", path="/-/ping")
        self.assertIsNotNone(rec, self.proxy.audit()[mark:])
        self.assertEqual((rec["scheme"], rec["host"], rec["method"], rec["status"]),
                         ("https", "127.0.0.1", "GET", 200))
        # npm reached the registry through the proxy, not directly and not elsewhere.
        self.assertTrue(self.registry.requests)

    def test_npm_refuses_a_leaf_naming_only_the_ip(self):
        """The origin's certificate names only 127.0.0.1, so the leaf can name nothing else;
        npm's agent sends no SNI for an IP and checks `localhost`, and refuses it. This is
        the failure the origin's names on the leaf (the test above) avoid."""
        mark = self.proxy.audit_mark()
        out = self.npm_ping(self.ip_only.port)
        self.assertNotEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("ERR_TLS_CERT_ALTNAME_INVALID", out.stdout + out.stderr)
        self.assertIn("localhost", out.stdout + out.stderr)
        self.assertEqual(self.ip_only.requests, [])
        # The tunnel still leaves its record: the client got 200, then failed the handshake.
        rec = self.proxy.wait_audit(after=mark, rule="npm-ip-only", method="CONNECT")
        self.assertIsNotNone(rec, self.proxy.audit()[mark:])
        self.assertEqual(rec["status"], 200)
        self.assertIn("client TLS handshake", rec["detail"])


if __name__ == "__main__":
    unittest.main()
