"""An HTTP/2 stream held for an operator's decision (a rule's `ask`) is dropped from the pending
approvals when its client goes away, as an HTTP/1.1 request's is (test_operator.py
AbandonedHoldTest): when the client resets the stream, and when it closes the whole connection.
The hold's end is audited (`client_gone`), the exchange is recorded `approval_abandoned`, the
origin never sees the request, and deciding it afterwards finds nothing (404)."""

import threading
import unittest

from harness import env
from harness.base import marker
from harness.h2_client import H2Tunnel
from harness.ops_admin import admin_call
from harness.proxy import make_policy
from harness.tls_support import InspectedOriginCase


class H2HeldTest(InspectedOriginCase):
    origin_names = ("insp.test",)

    @classmethod
    def policy(cls):
        p = make_policy([{
            "name": "asked", "hosts": ["insp.test"], "addresses": ["127.0.0.1"],
            "allow_cidrs": ["127.0.0.1/32"], "ports": [cls.good.port], "inspect": True,
            "methods": ["GET"], "paths": [r"^/echo/.*"], "ask": {"timeout": "60s"},
        }], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                 "upstream_ca": cls.certs.ca_cert})
        p["listen"]["admin"] = "127.0.0.1:0"
        return p

    def tunnel(self):
        """The CONNECT is held first (an inspected rule with `ask` holds the tunnel, then each
        request in it): approved once, from a second thread while the client waits for 200."""
        mark = self.proxy.audit_mark()

        def approve_connect():
            rec = self.proxy.wait_audit(timeout=env.t(10), after=mark, type="approval",
                                        action="held", method="CONNECT")
            if rec is not None:
                admin_call(self.proxy.admin, "POST", "/approvals/%d/approve" % rec["approval_id"])

        approver = threading.Thread(target=approve_connect)
        approver.start()
        try:
            t = H2Tunnel(self.port, "insp.test:%d" % self.good.port, self.ica.cert)
        finally:
            approver.join()
        self.addCleanup(t.close)
        self.assertEqual(t.alpn, "h2")
        return t

    def record(self, **match):
        rec = self.proxy.wait_audit(timeout=env.t(10), **match)
        self.assertIsNotNone(rec, "no audit record %r" % (match,))
        return rec

    def assert_dropped(self, path, m, held):
        rec = self.record(type="approval", action="client_gone", path=path)
        self.assertEqual((rec["approval_id"], rec["outcome"]),
                         (held["approval_id"], "approval_abandoned"))
        pending = admin_call(self.proxy.admin, "GET", "/approvals").json()["pending"]
        self.assertEqual([p for p in pending if p.get("path") == path], [])
        exchange = self.record(path=path, reason="approval_abandoned")
        self.assertEqual(exchange["protocol"], "h2")
        self.assertEqual(self.good.seen(m), [])
        late = admin_call(self.proxy.admin, "POST",
                          "/approvals/%d/approve" % held["approval_id"])
        self.assertEqual(late.status, 404)

    def test_reset_stream_drops_the_hold(self):
        m = marker()
        path = "/echo/reset-%s" % m
        t = self.tunnel()
        sid = t.request(path)
        held = self.record(type="approval", action="held", path=path)
        t.conn.reset_stream(sid)
        t.flush()
        self.assert_dropped(path, m, held)

    def test_closed_connection_drops_the_hold(self):
        m = marker()
        path = "/echo/closed-%s" % m
        t = self.tunnel()
        t.request(path)
        held = self.record(type="approval", action="held", path=path)
        t.close()
        self.assert_dropped(path, m, held)


if __name__ == "__main__":
    unittest.main()
