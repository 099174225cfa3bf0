"""The audit contract for tunnels (issue 17, item 4): every tunnel and every refusal gets
exactly one record, and it says what the client actually received.

- an opaque tunnel: one `connect` record;
- an inspected tunnel that carried requests: one record per request, none for the tunnel;
- an inspected tunnel whose handshake succeeded but which carried no request: one `connect`
  record (status 200, allow);
- a client that rejects the minted certificate: one `connect` record (status 200: the client got
  `200 Connection established`, then the handshake failed);
- an SNI mismatch: one record with status 200 and reason sni_mismatch (the client got 200, then
  a TLS alert), not 403;
- a refused CONNECT followed at once by the tunnel's first bytes (what the launcher's capture
  relay sends for a captured TLS connection): one 403 record and a closed connection, no second
  `bad_request` record for the ClientHello read as a request.

Records are counted per client connection (the record's `client` port) once the proxy has
finished with it."""

import ssl
import time
import unittest

from harness import clients, env
from harness.base import marker
from harness.proxy import make_policy, tunnel_rule
from harness.tls_support import InspectedOriginCase, TlsTunnel


class TunnelAuditTest(InspectedOriginCase):
    tls = True

    origin_names = None  # the OriginCerts defaults

    @classmethod
    def policy(cls):
        return make_policy([
            tunnel_rule(cls.good.port, name="inspected", hosts=["insp.test"], inspect=True,
                        methods=["GET"], paths=[r"^/echo/.*"]),
            tunnel_rule(cls.tls_origin.port, name="opaque", hosts=["origin.test"]),
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert})

    def records_of(self, port, wait_for=None):
        """The records of the client connection from local port `port`, once one matching
        `wait_for` (a dict of fields) is there."""
        def mine(r):
            return isinstance(r.get("client"), str) and r["client"].endswith(":%d" % port)
        deadline = time.monotonic() + env.t(10)
        while True:
            recs = [r for r in self.proxy.audit() if mine(r)]
            if any(all(r.get(k) == v for k, v in (wait_for or {}).items()) for r in recs):
                return recs
            if time.monotonic() >= deadline:
                self.fail("no record %r for client port %d: %r" % (wait_for, port, recs))
            time.sleep(0.05)

    def connect(self, authority):
        c = self.raw()
        self.addCleanup(c.close)
        c.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority))
        return c

    def test_opaque_tunnel_one_record(self):
        r = self.curl(self.tls_origin.url("/echo/%s" % marker()),
                      args=["--cacert", self.ca.ca_cert])
        self.assertEqual(r.status, 200)
        recs = self.records_of(r.local_port, {"scheme": "connect"})
        self.assertEqual(len(recs), 1, recs)
        self.assertEqual((recs[0]["status"], recs[0]["decision"]), (200, "allow"))

    def test_inspected_tunnel_with_requests_recorded_by_them(self):
        m = marker()
        t = TlsTunnel(self.proxy.port, "insp.test:%d" % self.good.port, self.ica.cert)
        self.addCleanup(t.close)
        port = t.raw.local_port
        for i in range(2):
            t.send("GET /echo/%s-%d HTTP/1.1\r\nHost: insp.test\r\n\r\n" % (m, i))
            self.assertEqual([x.status for x in t.read_responses(1)], [200])
            t.buffer.clear()
        t.close()
        self.records_of(port, {"path": "/echo/%s-1" % m})
        # The tunnel's own record would be written when the session ends: wait for the close.
        self.assertTrue(self.proxy_closed(port))
        recs = self.records_of(port)
        self.assertEqual(sorted(r["path"] for r in recs), ["/echo/%s-0" % m, "/echo/%s-1" % m],
                         recs)
        self.assertEqual({r["scheme"] for r in recs}, {"https"})

    def proxy_closed(self, port):
        """True once the proxy's socket to our client port is closed (/proc/net/tcp: no row
        whose remote end is our port in ESTABLISHED or CLOSE_WAIT), so that every record of
        that connection has been written."""
        deadline = time.monotonic() + env.t(10)
        ours, proxy = ":%04X" % port, ":%04X" % self.proxy.port
        while time.monotonic() < deadline:
            with open("/proc/net/tcp") as f:
                rows = [line.split() for line in f.readlines()[1:]]
            if not [r for r in rows if r[1].endswith(proxy) and r[2].endswith(ours)
                    and r[3] in ("01", "08")]:
                return True
            time.sleep(0.05)
        return False

    def test_inspected_tunnel_without_request_one_record(self):
        c = self.connect("insp.test:%d" % self.good.port)
        self.assertEqual(c.read_response(tunnel=True).status, 200)
        ctx = ssl.create_default_context(cafile=self.ica.cert)
        tls = ctx.wrap_socket(c.sock, server_hostname="insp.test")  # the handshake succeeds
        tls.close()
        recs = self.records_of(c.local_port, {"scheme": "connect"})
        self.assertEqual(len(recs), 1, recs)
        rec = recs[0]
        self.assertEqual((rec["status"], rec["decision"], rec["host"]), (200, "allow", "insp.test"))
        self.assertIn("no request", rec["detail"])

    def test_client_rejecting_the_leaf_one_record(self):
        c = self.connect("insp.test:%d" % self.good.port)
        self.assertEqual(c.read_response(tunnel=True).status, 200)
        ctx = ssl.create_default_context(cafile=self.ca.ca_cert)  # not the interception CA
        with self.assertRaises(ssl.SSLError):
            ctx.wrap_socket(c.sock, server_hostname="insp.test")
        recs = self.records_of(c.local_port, {"scheme": "connect"})
        self.assertEqual(len(recs), 1, recs)
        self.assertEqual(recs[0]["status"], 200, recs)
        self.assertIn("handshake", recs[0]["detail"])

    def test_sni_mismatch_recorded_as_200_then_alert(self):
        c = self.connect("insp.test:%d" % self.good.port)
        self.assertEqual(c.read_response(tunnel=True).status, 200)
        c.send(clients.client_hello("other.test"))
        self.assertTrue(c.closed_by_peer(env.t(5)))
        recs = self.records_of(c.local_port, {"reason": "sni_mismatch"})
        self.assertEqual(len(recs), 1, recs)
        self.assertEqual((recs[0]["status"], recs[0]["decision"]), (200, "deny"))
        self.assertIn("alert", recs[0]["detail"])

    def test_refused_connect_with_pipelined_hello_one_record(self):
        c = self.raw()
        self.addCleanup(c.close)
        # As the launcher's capture relay sends a captured TLS connection: CONNECT and the
        # ClientHello together.
        c.send(b"CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n" +
               clients.client_hello("denied.test"))
        r = c.read_response(tunnel=True)
        self.assertEqual(r.status, 403, r)
        self.assertTrue(c.closed_by_peer(env.t(5)), "connection left open after a refused CONNECT")
        recs = self.records_of(c.local_port, {"reason": "host_denied"})
        self.assertEqual(len(recs), 1, recs)
        self.assertEqual(recs[0]["status"], 403)


if __name__ == "__main__":
    unittest.main()
