"""How many connections an intercepted CONNECT opens to the origin: at most one. The TCP
connection the proxy makes to check the origin before answering 200 is the one its TLS upstream
then uses (none when an earlier tunnel left an idle one: test_tls_upstream_pool.py); when the
origin closed that connection meanwhile (servers close idle connections), the proxy connects
anew and the request is served all the same.
"""

import json
import socket
import ssl
import threading
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
from harness.h2_client import H2Tunnel
from harness.proxy import make_policy, origin_rule
from harness.tls_support import AirlockCA, AlpnOrigin, OriginCerts, TlsTunnel


def inspect_rule(port, name):
    return {"name": name, "hosts": ["insp.test"], "addresses": ["127.0.0.1"],
            "allow_cidrs": ["127.0.0.1/32"], "ports": [port], "inspect": True}


class CloseFirstOrigin:
    """A TLS origin that closes the first connection it accepts at once, as a server closes an
    idle connection, and answers one request on each later one (`accepted` counts both)."""

    def __init__(self, context, serve=2):
        self.context = context
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(env.t(20))
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.thread = threading.Thread(target=self._run, args=(serve,), daemon=True)
        self.thread.start()

    def _run(self, serve):
        for i in range(serve):  # bounded: the test needs two connections
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            if i == 0:
                conn.close()
                continue
            try:
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    tls.settimeout(env.t(10))
                    head = b""
                    while b"\r\n\r\n" not in head and len(head) < 65536:
                        chunk = tls.recv(4096)
                        if not chunk:
                            break
                        head += chunk
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close"
                                b"\r\n\r\nok")
            except (OSError, ssl.SSLError):
                pass

    def stop(self):
        self.listener.close()
        self.thread.join(env.t(10))


class InterceptConnectionsTest(ProxyTestCase):
    adversarial = True

    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts()
        cls.good = AlpnOrigin(OriginCerts.server_context(cls.certs.good)).start()
        # Its own origin: no other test's connection waits in the pool for it.
        cls.single = AlpnOrigin(OriginCerts.server_context(cls.certs.good)).start()
        cls.closing = CloseFirstOrigin(OriginCerts.server_context(cls.certs.good))

    @classmethod
    def extra_teardown(cls):
        cls.good.stop()
        cls.single.stop()
        cls.closing.stop()
        cls.certs.cleanup()
        cls.ica.cleanup()

    @classmethod
    def policy(cls):
        return make_policy([origin_rule(cls.origin.port),
                            inspect_rule(cls.good.port, "inspected"),
                            inspect_rule(cls.single.port, "single"),
                            inspect_rule(cls.closing.port, "closing")],
                           tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                                "upstream_ca": cls.certs.ca_cert})

    def get_in_tunnel(self, port, path):
        t = TlsTunnel(self.proxy.port, "insp.test:%d" % port, self.ica.cert)
        self.addCleanup(t.close)
        self.assertIsNotNone(t.tls, "CONNECT answered %r" % t.connect_response)
        t.send("GET %s HTTP/1.1\r\nHost: insp.test\r\nConnection: close\r\n\r\n" % path)
        responses = t.read_responses(1)
        self.assertEqual(len(responses), 1, "no answer inside the tunnel")
        return responses[0]

    def test_one_origin_connection_per_intercepted_tunnel(self):
        self.single.reset()
        handshakes = len(self.single.alpn)
        marks = [marker() for _ in range(3)]
        for m in marks:
            r = self.get_in_tunnel(self.single.port, "/echo/one-conn-%s" % m)
            self.assertEqual(r.status, 200)
            self.assertEqual(json.loads(r.body)["path"], "/echo/one-conn-%s" % m)
            rec = self.assert_audit(path="/echo/one-conn-%s" % m)
            self.assertEqual(rec.get("decision"), "allow", rec)
        # The check before the 200 and the TLS upstream are one connection: as many handshakes
        # as connections. A later tunnel that meets the same worker takes the connection an
        # earlier one left idle (test_tls_upstream_pool.py), so there is at most one per worker.
        self.assertGreaterEqual(self.single.accepted, 1)
        self.assertEqual(len(self.single.alpn) - handshakes, self.single.accepted)
        self.assertLessEqual(self.single.accepted, self.threads)

    def test_h2_client_tunnel_uses_the_checked_connection_too(self):
        # The client speaks h2 to the proxy; its streams go out on HTTP/1.1 upstreams (the
        # origin offers only http/1.1), the first of them on the CONNECT's own connection.
        self.good.reset()
        m = marker()
        t = H2Tunnel(self.proxy.port, "insp.test:%d" % self.good.port, self.ica.cert)
        self.addCleanup(t.close)
        self.assertEqual(t.alpn, "h2")
        [r] = t.wait(t.request("/echo/h2-one-conn-%s" % m))
        self.assertEqual(r["headers"][":status"], "200", r)
        self.assert_audit(path="/echo/h2-one-conn-%s" % m)
        self.assertEqual(self.good.accepted, 1)

    def test_origin_that_closed_the_checked_connection_is_connected_anew(self):
        m = marker()
        r = self.get_in_tunnel(self.closing.port, "/closed-meanwhile-%s" % m)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, b"ok")
        rec = self.assert_audit(path="/closed-meanwhile-%s" % m)
        self.assertEqual(rec.get("decision"), "allow", rec)
        self.assertEqual(rec.get("status"), 200, rec)
        self.assertEqual(self.closing.accepted, 2)


if __name__ == "__main__":
    unittest.main()
