"""Intercepted tunnels share their origins' TLS connections: a tunnel that ends with its upstream
idle (HTTP/1.1, the last answer complete) leaves it in the worker's TLS pool, and the next
intercepted CONNECT to the same origin takes it instead of connecting and shaking hands again.
Only where it is safe: the same name (the certificate was verified for it), the same
interception (a reload that changes the CA or the upstream trust makes new connections), an
address the policy still allows; a connection the origin closed is not handed out, and one it
closes as the request goes out is replaced for a bodiless request.

One worker thread, so that every tunnel meets the same pool.
"""

import json
import shutil
import socket
import ssl
import threading
import time
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
from harness.h2_client import H2Tunnel
from harness.ops_admin import OpsAirlock, ops_policy
from harness.proxy import origin_rule
from harness.tls_support import AirlockCA, OriginCerts, TlsTunnel


def inspect_rule(port, name, hosts=("insp.test",)):
    return {"name": name, "hosts": list(hosts), "addresses": ["127.0.0.1"],
            "allow_cidrs": ["127.0.0.1/32"], "ports": [port], "inspect": True}


class KeepAliveTlsOrigin:
    """A TLS origin that answers HTTP/1.1 requests on kept-alive connections with a JSON body
    naming the connection and the request's number on it. `accepted` counts TCP connections.

    drop_request=N: on the Nth request of a connection, read it and close without answering
    (an origin that closed the idle connection just as the request went out).
    close_after=S: close each connection S seconds after its first answer, unasked (an origin
    that closes idle connections).
    surplus=True: send a second, unasked answer right after each one, in a TLS record of its
    own (an origin that answers twice: what follows must not be taken for the next answer)."""

    def __init__(self, context, drop_request=None, close_after=None, surplus=False):
        self.context = context
        self.drop_request = drop_request
        self.close_after = close_after
        self.surplus = surplus
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.stopping = False
        self.threads = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stopping and self.accepted < 50:  # bounded: a test needs a few
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            t = threading.Thread(target=self._serve, args=(conn, self.accepted), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, conn, number):
        try:
            with self.context.wrap_socket(conn, server_side=True) as tls:
                tls.settimeout(env.t(10))
                buffered = b""
                for request in range(1, 20):
                    while b"\r\n\r\n" not in buffered and len(buffered) < 65536:
                        chunk = tls.recv(4096)
                        if not chunk:
                            return
                        buffered += chunk
                    head, _, buffered = buffered.partition(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value)
                    while len(buffered) < length:
                        chunk = tls.recv(4096)
                        if not chunk:
                            return
                        buffered += chunk
                    buffered = buffered[length:]
                    if request == self.drop_request:
                        conn.shutdown(socket.SHUT_RDWR)  # no answer, no close_notify
                        return
                    path = head.split(b" ")[1].decode()
                    body = json.dumps({"connection": number, "request": request,
                                       "path": path}).encode()
                    if self.surplus:
                        # Both records leave in one segment (tcp(7) TCP_CORK): the proxy reads
                        # the second with the first, whatever the threads' timing.
                        tls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                b"Content-Length: %d\r\n\r\n" % len(body) + body)
                    if self.surplus:
                        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged")
                        tls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
                    if self.close_after is not None:
                        threading.Event().wait(self.close_after)
                        return
        except (OSError, ssl.SSLError, ValueError):
            pass

    def stop(self):
        self.stopping = True
        self.thread.join(env.t(10))
        self.listener.close()
        for t in self.threads:
            t.join(env.t(10))


class TlsUpstreamPoolTest(ProxyTestCase):
    threads = 1

    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts()
        good = OriginCerts.server_context(cls.certs.good)
        # One origin per test: what a test counts is not moved by another's pooled connections.
        cls.shared = KeepAliveTlsOrigin(good)
        cls.names = KeepAliveTlsOrigin(good)
        cls.dropping = KeepAliveTlsOrigin(good, drop_request=2)
        cls.dropping_post = KeepAliveTlsOrigin(good, drop_request=2)
        cls.closing = KeepAliveTlsOrigin(good, close_after=0.1)
        cls.reloaded = KeepAliveTlsOrigin(good)
        cls.surplus = KeepAliveTlsOrigin(good, surplus=True)
        cls.h2_shared = KeepAliveTlsOrigin(good)
        cls.h2_dropping = KeepAliveTlsOrigin(good, drop_request=2)
        cls.origins = [cls.shared, cls.names, cls.dropping, cls.dropping_post, cls.closing,
                       cls.reloaded, cls.surplus, cls.h2_shared, cls.h2_dropping]
        cls.upstream_ca_copy = cls.certs.ca_cert + ".copy.pem"
        shutil.copyfile(cls.certs.ca_cert, cls.upstream_ca_copy)

    @classmethod
    def extra_teardown(cls):
        for o in cls.origins:
            o.stop()
        cls.certs.cleanup()
        cls.ica.cleanup()

    @classmethod
    def _new_proxy(cls):
        return OpsAirlock(cls.policy(), threads=cls.threads, args=cls.proxy_args,
                          name=cls.__name__)

    @classmethod
    def policy(cls, upstream_ca=None):
        rules = [origin_rule(cls.origin.port)]
        for i, o in enumerate(cls.origins):
            hosts = ("insp.test", "origin.test") if o is cls.names else ("insp.test",)
            rules.append(inspect_rule(o.port, "inspected-%d" % i, hosts))
        return ops_policy(rules, tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                                      "upstream_ca": upstream_ca or cls.certs.ca_cert})

    def tunnel_request(self, origin, path, host="insp.test", method="GET", body=b""):
        """One intercepted tunnel, one request in it (Connection: close), then the tunnel
        closes. Returns the response and its audit record."""
        t = TlsTunnel(self.proxy.port, "%s:%d" % (host, origin.port), self.ica.cert)
        self.addCleanup(t.close)
        self.assertIsNotNone(t.tls, "CONNECT answered %r" % t.connect_response)
        head = ("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
                % (method, path, host, len(body)))
        t.send(head.encode() + body)
        responses = t.read_responses(1)
        self.assertEqual(len(responses), 1, "no answer inside the tunnel")
        t.close()
        return responses[0], self.assert_audit(path=path)

    def pool_count(self, result):
        return self.proxy.metrics().value("airlock_upstream_pool_total", result=result,
                                          transport="tls")

    def test_later_tunnels_take_the_idle_tls_connection(self):
        hits = self.pool_count("hit")
        seen = []
        for i in range(3):
            path = "/pooled-%d-%s" % (i, marker())
            r, rec = self.tunnel_request(self.shared, path)
            self.assertEqual(r.status, 200, r)
            answer = json.loads(r.body)
            self.assertEqual(answer["path"], path)
            self.assertEqual(rec.get("decision"), "allow", rec)
            self.assertEqual(rec.get("upstream"), "127.0.0.1:%d" % self.shared.port, rec)
            seen.append((answer["connection"], answer["request"]))
        # Three tunnels, one connection: the first tunnel's (the TCP connection its CONNECT
        # checked the origin with), then taken from the pool by the other two.
        self.assertEqual(seen, [(1, 1), (1, 2), (1, 3)])
        self.assertEqual(self.shared.accepted, 1)
        self.assertEqual(self.pool_count("hit") - hits, 2)

    def test_another_name_does_not_take_the_connection(self):
        # Both names are on the origin's certificate and go to the same address and port, but a
        # connection verified for one name is not handed to a tunnel to the other.
        r1, _ = self.tunnel_request(self.names, "/name-a-%s" % marker(), host="insp.test")
        r2, _ = self.tunnel_request(self.names, "/name-b-%s" % marker(), host="origin.test")
        r3, _ = self.tunnel_request(self.names, "/name-a-%s" % marker(), host="insp.test")
        self.assertEqual([r.status for r in (r1, r2, r3)], [200, 200, 200])
        conns = [json.loads(r.body)["connection"] for r in (r1, r2, r3)]
        self.assertNotEqual(conns[0], conns[1])
        self.assertEqual(conns[0], conns[2])
        self.assertEqual(self.names.accepted, 2)

    def test_connection_the_origin_closed_is_not_handed_out(self):
        misses = self.pool_count("miss")
        r1, _ = self.tunnel_request(self.closing, "/closing-1-%s" % marker())
        self.assertEqual(r1.status, 200)
        # The origin closes it 0.1 s after answering; by then it waits in the pool.
        threading.Event().wait(0.5)
        r2, rec = self.tunnel_request(self.closing, "/closing-2-%s" % marker())
        self.assertEqual(r2.status, 200, r2)
        self.assertEqual(rec.get("decision"), "allow", rec)
        self.assertEqual(json.loads(r2.body)["connection"], 2)
        self.assertEqual(self.closing.accepted, 2)
        self.assertEqual(self.pool_count("miss") - misses, 2)

    def test_closed_as_the_request_goes_out_is_replaced_for_a_bodiless_request(self):
        r1, _ = self.tunnel_request(self.dropping, "/drop-1-%s" % marker())
        self.assertEqual(r1.status, 200)
        # The pooled connection takes this request and the origin closes it unanswered: the
        # proxy sends it again on a new connection, and the client sees one answer.
        path = "/drop-2-%s" % marker()
        r2, rec = self.tunnel_request(self.dropping, path)
        self.assertEqual(r2.status, 200, r2)
        self.assertEqual(json.loads(r2.body), {"connection": 2, "request": 1, "path": path})
        self.assertEqual(rec.get("decision"), "allow", rec)
        self.assertEqual(rec.get("status"), 200, rec)
        self.assertEqual(self.dropping.accepted, 2)
        self.assertEqual(len([r for r in self.proxy.audit() if r.get("path") == path]), 1,
                         "one record per exchange")

    def test_a_request_with_a_body_is_not_sent_twice(self):
        r1, _ = self.tunnel_request(self.dropping_post, "/post-1-%s" % marker())
        self.assertEqual(r1.status, 200)
        # The origin may have acted on it: a request with a body is answered with the failure.
        r2, rec = self.tunnel_request(self.dropping_post, "/post-2-%s" % marker(),
                                      method="POST", body=b"{\"n\": 1}")
        self.assert_answer(r2, "upstream_error", 502)
        self.assertEqual(rec.get("reason"), "upstream_error", rec)
        self.assertEqual(self.dropping_post.accepted, 1)

    def test_bytes_after_an_answer_are_never_the_next_tunnels_answer(self):
        for i in range(3):
            path = "/surplus-%d-%s" % (i, marker())
            r, rec = self.tunnel_request(self.surplus, path)
            self.assertEqual(r.status, 200, r)
            self.assertNotEqual(r.body, b"forged")
            self.assertEqual(json.loads(r.body), {"connection": i + 1, "request": 1,
                                                  "path": path})
        self.assertEqual(self.surplus.accepted, 3)

    def test_bytes_after_an_answer_are_not_the_next_answer_in_the_same_tunnel(self):
        before = self.surplus.accepted
        t = TlsTunnel(self.proxy.port, "insp.test:%d" % self.surplus.port, self.ica.cert)
        self.addCleanup(t.close)
        self.assertIsNotNone(t.tls, "CONNECT answered %r" % t.connect_response)
        paths = ["/surplus-same-%d-%s" % (i, marker()) for i in range(2)]
        for i, path in enumerate(paths):
            t.send("GET %s HTTP/1.1\r\nHost: insp.test\r\n\r\n" % path)
            responses = t.read_responses(i + 1)
            self.assertEqual(len(responses), i + 1)
            self.assertEqual(json.loads(responses[i].body)["path"], path)
        # The connection that answered twice is not asked again: one connection per request.
        self.assertEqual(self.surplus.accepted - before, 2)

    def test_bytes_after_an_answer_are_not_the_next_answer_of_an_h2_client(self):
        # An HTTP/2 client's streams go out on HTTP/1.1 upstreams its connection keeps idle.
        before = self.surplus.accepted
        t = H2Tunnel(self.proxy.port, "insp.test:%d" % self.surplus.port, self.ica.cert)
        self.addCleanup(t.close)
        self.assertEqual(t.alpn, "h2")
        for i in range(2):
            path = "/surplus-h2-%d-%s" % (i, marker())
            [r] = t.wait(t.request(path))
            self.assertEqual(r["headers"][":status"], "200", r)
            self.assertEqual(json.loads(r["body"])["path"], path)
        self.assertEqual(self.surplus.accepted - before, 2)

    def h2_tunnel_request(self, origin, path):
        """One HTTP/2 client tunnel, one stream; waits until the proxy has let the connection go
        (its idle upstreams are in the pool by then). Returns the stream's answer."""
        t = H2Tunnel(self.proxy.port, "insp.test:%d" % origin.port, self.ica.cert)
        self.addCleanup(t.close)
        self.assertEqual(t.alpn, "h2")
        client_port = t.sock.getsockname()[1]
        [r] = t.wait(t.request(path))
        t.close()
        deadline = time.monotonic() + env.t(10)
        while self.proxy.holds_connection_from(client_port) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertFalse(self.proxy.holds_connection_from(client_port))
        return r

    def test_h2_client_tunnels_share_the_connection_too(self):
        # An HTTP/2 client's streams go out on HTTP/1.1 upstreams (the origin offers only
        # http/1.1); the one its connection leaves idle serves the next tunnel.
        answers = []
        for i in range(3):
            path = "/h2-pooled-%d-%s" % (i, marker())
            r = self.h2_tunnel_request(self.h2_shared, path)
            self.assertEqual(r["headers"][":status"], "200", r)
            answer = json.loads(r["body"])
            self.assertEqual(answer["path"], path)
            answers.append((answer["connection"], answer["request"]))
        self.assertEqual(answers, [(1, 1), (1, 2), (1, 3)])
        self.assertEqual(self.h2_shared.accepted, 1)

    def test_h2_client_request_on_a_connection_closed_meanwhile_goes_again(self):
        r1 = self.h2_tunnel_request(self.h2_dropping, "/h2-drop-1-%s" % marker())
        self.assertEqual(r1["headers"][":status"], "200", r1)
        path = "/h2-drop-2-%s" % marker()
        r2 = self.h2_tunnel_request(self.h2_dropping, path)
        self.assertEqual(r2["headers"][":status"], "200", r2)
        self.assertEqual(json.loads(r2["body"]), {"connection": 2, "request": 1, "path": path})
        rec = self.assert_audit(path=path)
        self.assertEqual(rec.get("status"), 200, rec)
        self.assertEqual(self.h2_dropping.accepted, 2)

    def test_a_reload_that_changes_the_upstream_trust_makes_new_connections(self):
        r1, _ = self.tunnel_request(self.reloaded, "/reload-1-%s" % marker())
        self.assertEqual(r1.status, 200)
        # The same CA in another file: a new interception, whose trust the pooled connection
        # was not verified under.
        _, version = self.proxy.write_policy(self.policy(upstream_ca=self.upstream_ca_copy),
                                             "inplace")
        self.assertEqual(self.proxy.admin_call("POST", "/reload").status, 200)
        self.proxy.wait_version(version)
        r2, _ = self.tunnel_request(self.reloaded, "/reload-2-%s" % marker())
        r3, _ = self.tunnel_request(self.reloaded, "/reload-3-%s" % marker())
        self.assertEqual([r2.status, r3.status], [200, 200])
        self.assertEqual([json.loads(r.body)["connection"] for r in (r1, r2, r3)], [1, 2, 2])
        self.assertEqual(self.reloaded.accepted, 2)


if __name__ == "__main__":
    unittest.main()
