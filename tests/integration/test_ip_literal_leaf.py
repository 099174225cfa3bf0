"""Minted leaves for IP-literal CONNECTs (issue 17, item 5): the leaf names the IP and also the
subject alternative names of the origin's verified certificate, as mitmproxy does, so that a
client that sends no SNI for an IP target and checks another name (npm's agent checks
`localhost`) accepts it.

The real client is Node's https stack: a CONNECT through the proxy, then tls.connect on the
tunnel with no servername (Node sends no SNI for an IP) and checkServerIdentity for
`localhost`, as npm's agent does against an IP-literal registry."""

import json
import socket
import ssl
import subprocess
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
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

    @classmethod
    def extra_teardown(cls):
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


if __name__ == "__main__":
    unittest.main()
