"""A request the HTTP/2 origin refused unprocessed goes again (RFC 9113 section 8.7: a stream
reset with REFUSED_STREAM, or above a GOAWAY's last stream id, "can be safely retried"), with
its body, on the same connection or, after a GOAWAY, on a new one; at most three times, and
only while the body bytes sent so far are within the bound the proxy keeps to send again.

The origin is harness/h2_origin.py (python3-h2), which refuses on cue: nghttpd refuses only
when a client opens more streams than it allows before its SETTINGS arrive, a race (the one
that made test_h2_upstream fail now and then before this).
"""

import hashlib
import os
import time

import h2.errors

from harness import env
from harness.base import ProxyTestCase, marker, parse_proxy_status
from harness.h2_client import H2Tunnel
from harness.h2_origin import H2Origin
from harness.proxy import make_policy, origin_rule
from harness.tls_support import AirlockCA, OriginCerts, TlsTunnel


class RefusingOriginCase(ProxyTestCase):
    """The proxy and the scripted origin (refuser.test, intercepted); no tests of its own."""
    admin = False
    close_on_goaway = False

    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts(names=("refuser.test",))
        cls.h2o = H2Origin(*cls.certs.good, close_on_goaway=cls.close_on_goaway)

    @classmethod
    def extra_teardown(cls):
        cls.h2o.stop()
        cls.certs.cleanup()
        cls.ica.cleanup()

    @classmethod
    def policy(cls):
        return make_policy([
            origin_rule(cls.origin.port),
            {"name": "refuser", "hosts": ["refuser.test"], "addresses": ["127.0.0.1"],
             "allow_cidrs": ["127.0.0.1/32"], "ports": [cls.h2o.port], "inspect": True,
             "methods": ["GET", "POST"]},
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert})

    def tunnel(self):
        t = H2Tunnel(self.port, "refuser.test:%d" % self.h2o.port, self.ica.cert)
        self.addCleanup(t.close)
        self.assertEqual(t.alpn, "h2")
        return t

    def expect_outcomes(self, path, *outcomes):
        """The origin saw `path` with these outcomes, in order, all on one connection."""
        seen = self.h2o.outcomes(path)
        self.assertEqual([o for _, o in seen], list(outcomes), seen)
        self.assertEqual(len({c for c, _ in seen}), 1, seen)

    def expect_answer(self, r, path, body):
        self.assertEqual(r["headers"][":status"], "200", (r, self.h2o.arrivals))
        self.assertTrue(r["body"].startswith(
            ("%s %d %s " % (path, len(body), hashlib.sha256(body).hexdigest())).encode()), r)


class RefusedStreamCase(RefusingOriginCase):
    def test_a_refused_request_goes_again_with_its_body(self):
        path = "/once/upload"
        body = os.urandom(100000)
        t = self.tunnel()
        sid = t.request(path, method="POST", body=body)
        (r,) = t.wait(sid)
        self.expect_answer(r, path, body)
        self.expect_outcomes(path, "refused", "answered")
        rec = self.proxy.wait_audit(path=path)
        self.assertEqual(rec["status"], 200, rec)
        self.assertEqual(rec["bytes_in"], len(body))
        self.assertEqual(len([r for r in self.proxy.audit() if r.get("path") == path]), 1)

    def test_an_http1_client_request_refused_goes_again(self):
        path = "/once/from-http1"
        t = TlsTunnel(self.port, "refuser.test:%d" % self.h2o.port, self.ica.cert)
        self.addCleanup(t.close)
        t.send(("POST %s HTTP/1.1\r\nHost: refuser.test\r\nContent-Length: 5\r\n\r\nhello"
                % path).encode())
        (r,) = t.read_responses(1)
        self.assertEqual(r.status, 200)
        self.assertTrue(r.body.startswith(
            ("%s 5 %s " % (path, hashlib.sha256(b"hello").hexdigest())).encode()), r.body)
        self.expect_outcomes(path, "refused", "answered")

    def test_an_origin_that_refuses_every_stream_gets_four_tries(self):
        path = "/always/x"
        t = self.tunnel()
        (r,) = t.wait(t.request(path))
        self.assertEqual(r["headers"][":status"], "502", r)
        status = parse_proxy_status(r["headers"].get("proxy-status"))
        self.assertIn("REFUSED_STREAM", status.get("details", ""))
        self.expect_outcomes(path, *["refused"] * 4)
        rec = self.proxy.wait_audit(path=path)
        self.assertEqual(rec["reason"], "upstream_error", rec)

    def test_a_body_past_the_bound_is_not_sent_again(self):
        # Refused only after the origin read the whole body: 1 MiB is more than the proxy keeps
        # to send again, 100 kB is not.
        big, small = os.urandom(1 << 20), os.urandom(100000)
        t = self.tunnel()
        r_big, r_small = t.wait(t.request("/late/big", method="POST", body=big),
                                t.request("/late/small", method="POST", body=small))
        self.assertEqual(r_big["headers"][":status"], "502", r_big)
        self.expect_outcomes("/late/big", "refused")
        self.expect_answer(r_small, "/late/small", small)
        self.expect_outcomes("/late/small", "refused", "answered")

    def test_the_bodies_kept_to_send_again_are_bounded_per_connection(self):
        # Eight uploads at once, each under the per-stream bound (256 KiB), all refused once
        # the origin read them: the proxy keeps at most 1 MiB for the streams begun on one
        # connection, so five at most go again and the others are answered 502.
        paths = ["/batch8/up%d" % i for i in range(8)]
        bodies = {p: os.urandom(200000) for p in paths}
        t = self.tunnel()
        results = t.wait(*[t.request(p, method="POST", body=bodies[p]) for p in paths])
        again = [p for p, r in zip(paths, results) if r["headers"][":status"] == "200"]
        lost = [p for p, r in zip(paths, results) if r["headers"][":status"] == "502"]
        self.assertEqual(len(again) + len(lost), 8, results)
        self.assertGreaterEqual(len(again), 1, results)
        self.assertLessEqual(len(again), 5, results)
        for p, r in zip(paths, results):
            if p in again:
                self.expect_answer(r, p, bodies[p])
                self.expect_outcomes(p, "refused", "answered")
            else:
                self.expect_outcomes(p, "refused")

    def goaway_pair(self, prefix):
        t = self.tunnel()
        a, b = t.request(prefix + "a"), t.request(prefix + "b")
        r_a, r_b = t.wait(a, b)
        self.expect_answer(r_a, prefix + "a", b"")
        self.expect_answer(r_b, prefix + "b", b"")
        outcomes = self.h2o.outcomes(prefix + "a") + self.h2o.outcomes(prefix + "b")
        # One of the two answered on the first connection, the other not processed there
        # (GOAWAY) and answered on the next.
        first = [o for c, o in outcomes if c == outcomes[0][0]]
        self.assertEqual(sorted(first), ["answered", "goaway"], outcomes)
        later = [(c, o) for c, o in outcomes if c != outcomes[0][0]]
        self.assertEqual(len(later), 1, outcomes)
        self.assertEqual(later[0][1], "answered")

    def test_a_stream_above_goaway_goes_again_on_a_new_connection(self):
        self.goaway_pair("/goaway/")


class RenewalFailsCase(RefusingOriginCase):
    """The stream above the GOAWAY cannot go again: the origin stopped listening. Its 502 and
    its audit record say why the renewal failed (the connect refused), not the stream's close."""
    close_on_goaway = True

    def test_a_failed_renewal_is_recorded_as_its_connect_failure(self):
        t = self.tunnel()
        a, b = t.request("/goaway/a"), t.request("/goaway/b")
        r_a, r_b = t.wait(a, b)
        outcomes = dict((p, self.h2o.outcomes(p)) for p in ("/goaway/a", "/goaway/b"))
        # Both on one origin connection, whichever it was: the two streams may each start one,
        # and the one that is ready first carries both (h2_connection::adopt_upstream_h2).
        conns = set(c for o in outcomes.values() for c, _ in o)
        self.assertEqual(len(conns), 1, outcomes)
        (conn,) = conns
        answered = [p for p, o in outcomes.items() if o == [(conn, "answered")]]
        unprocessed = [p for p, o in outcomes.items() if o == [(conn, "goaway")]]
        self.assertEqual(len(answered), 1, outcomes)
        self.assertEqual(len(unprocessed), 1, outcomes)
        r_done, r_lost = (r_a, r_b) if answered == ["/goaway/a"] else (r_b, r_a)
        self.expect_answer(r_done, answered[0], b"")
        self.assertEqual(r_lost["headers"][":status"], "502", r_lost)
        status = parse_proxy_status(r_lost["headers"].get("proxy-status"))
        self.assertEqual(status.get("error"), "connection_refused", status)
        self.assertNotIn("REFUSED_STREAM", status.get("details", ""), status)
        rec = self.proxy.wait_audit(path=unprocessed[0])
        self.assertEqual(rec["reason"], "connect_refused", rec)
        self.assertEqual(rec["decision"], "error", rec)



class ClientResetCase(RefusingOriginCase):
    def test_a_stream_the_client_resets_before_its_answer_is_no_upstream_error(self):
        # The origin holds the stream (a /batch2/ path alone); the client resets it. The proxy
        # cancels the origin's stream itself: the record keeps the decision (allow), says the
        # client got nothing and why, and blames no origin (an agent resetting its own streams,
        # a rapid-reset flood among them, must not drive the upstream error rate).
        t = self.tunnel()
        path = "/batch2/client-reset-%s" % marker()
        sid = t.request(path)
        deadline = time.monotonic() + env.t(15)
        while not self.h2o.seen.get(path):
            self.assertLess(time.monotonic(), deadline, "the origin never got the stream")
            time.sleep(0.02)
        t.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        t.flush()
        rec = self.proxy.wait_audit(path=path)
        self.assertIsNotNone(rec, self.proxy.audit()[-3:])
        self.assertEqual((rec["decision"], rec["reason"], rec["status"]), ("allow", "ok", 0), rec)
        self.assertIn("the client reset the stream", rec.get("detail", ""))
