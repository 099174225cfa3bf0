"""HTTP/2 defences on inspected tunnels, each driven by a client (Debian python3-h2 and
hyperframe) that sends the attack: the attacking connection is ended with the right GOAWAY
error (RFC 9113 section 7 codes) or the attacking stream refused, and a connection opened
before the attack keeps working after it.
"""

import unittest

from hyperframe.frame import (ContinuationFrame, HeadersFrame, PingFrame,
                              SettingsFrame)

from harness.base import marker
from harness.h2_client import H2Tunnel
from harness.proxy import make_policy, origin_rule
from harness.tls_support import InspectedOriginCase

PROTOCOL_ERROR = 1
FLOW_CONTROL_ERROR = 3
FRAME_SIZE_ERROR = 6
REFUSED_STREAM = 7
CANCEL = 8
COMPRESSION_ERROR = 9
ENHANCE_YOUR_CALM = 11


class H2Attacks(InspectedOriginCase):
    """The origin, the CA and the helpers; the attacks are in the classes below."""

    admin = False
    idle_timeout = "60s"
    limits = {}
    rule_extra = {}

    origin_names = ("insp.test",)

    @classmethod
    def policy(cls):
        rule = {"name": "inspected", "hosts": ["insp.test"], "addresses": ["127.0.0.1"],
                "allow_cidrs": ["127.0.0.1/32"], "ports": [cls.good.port], "inspect": True,
                **cls.rule_extra}
        return make_policy([origin_rule(cls.origin.port), rule],
                           limits={"idle_timeout": cls.idle_timeout, "header_bytes": "16KiB",
                                   **cls.limits},
                           tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                                "upstream_ca": cls.certs.ca_cert})

    def tunnel(self, **kw):
        t = H2Tunnel(self.port, "insp.test:%d" % self.good.port, self.ica.cert, **kw)
        self.addCleanup(t.close)
        self.assertEqual(t.alpn, "h2")
        return t

    def setUp(self):
        super().setUp()
        # A well-behaved connection, opened before the attack, must still work after it.
        self.bystander = self.tunnel()
        (r,) = self.bystander.wait(self.bystander.request("/echo/before"))
        self.assertEqual(r["headers"][":status"], "200")

    def assert_bystander_fine(self):
        (r,) = self.bystander.wait(self.bystander.request("/echo/after"))
        self.assertEqual(r["headers"][":status"], "200", r)
        self.assertIsNone(self.proxy.proc.poll(), "the proxy died")

    def send_raw(self, t, frames):
        t.send(b"".join(f.serialize() if hasattr(f, "serialize") else f for f in frames))



class H2DefenceCase(H2Attacks):
    def test_rapid_reset(self):
        t = self.tunnel()
        frames = []
        for i in range(600):
            sid = t.headers("/echo/reset%d" % i, end_stream=False)
            t.conn.reset_stream(sid)
            frames.append(t.conn.data_to_send())
            if i % 50 == 49:
                self.send_raw(t, frames)
                frames = []
        self.send_raw(t, frames)
        self.assertEqual(t.wait_closed(), ENHANCE_YOUR_CALM)
        self.assert_bystander_fine()

    def test_settings_flood(self):
        t = self.tunnel()
        self.send_raw(t, [SettingsFrame(0, settings={4: 65535})] * 3000)
        self.assertEqual(t.wait_closed(), ENHANCE_YOUR_CALM)
        self.assert_bystander_fine()

    def test_settings_with_too_many_entries(self):
        t = self.tunnel()
        entries = b"".join((0x100 + i).to_bytes(2, "big") + (1).to_bytes(4, "big")
                           for i in range(64))
        frame = len(entries).to_bytes(3, "big") + b"\x04\x00" + b"\x00\x00\x00\x00" + entries
        self.send_raw(t, [frame])
        self.assertEqual(t.wait_closed(), ENHANCE_YOUR_CALM)
        self.assert_bystander_fine()

    def test_ping_flood(self):
        t = self.tunnel()
        self.send_raw(t, [PingFrame(0, opaque_data=b"12345678")] * 3000)
        self.assertEqual(t.wait_closed(), ENHANCE_YOUR_CALM)
        self.assert_bystander_fine()

    def test_continuation_flood(self):
        t = self.tunnel()
        block = t.conn.encoder.encode([(":method", "GET"), (":scheme", "https"),
                                       (":authority", "insp.test"), (":path", "/echo/c")])
        frames = [HeadersFrame(1, data=block)]  # no END_HEADERS
        frames += [ContinuationFrame(1, data=b"\x40\x01x\x01y")] * 200
        self.send_raw(t, frames)
        self.assertEqual(t.wait_closed(), ENHANCE_YOUR_CALM)
        self.assert_bystander_fine()

    def test_header_list_too_large(self):
        t = self.tunnel()
        extra = [("x-big-%d" % i, "v" * 4000) for i in range(8)]  # 32 KB > 16 KiB
        sid = t.request("/echo/big", extra=extra)
        (r,) = t.wait(sid)
        self.assertEqual(r["headers"][":status"], "431", r)
        # The stream was refused, not the connection.
        (r,) = t.wait(t.request("/echo/small"))
        self.assertEqual(r["headers"][":status"], "200")
        rec = self.proxy.wait_audit(reason="header_too_large", protocol="h2")
        self.assertIsNotNone(rec)

    def test_malformed_streams_are_refused_and_recorded(self):
        # RFC 9113 section 8.1.1: each is a stream error, and each leaves one record saying why
        # (the proxy's 400 where the stream is still open, the codec's reset otherwise).
        t = self.tunnel()
        t.conn.config.normalize_outbound_headers = False  # keep the upper case
        m = marker()
        upper = t.request("/echo/upper-" + m, extra=[("X-Upper", "1")])
        cr = t.request("/echo/cr-" + m, extra=[("x-a", "1\r2")])
        short = t.headers("/echo/short-" + m, "POST", extra=[("content-length", "10")],
                          end_stream=False)
        t.conn.send_data(short, b"abc", end_stream=True)
        t.flush()
        fragment = t.request("/echo/fragment-%s#/../x" % m)
        r_upper, r_cr, r_short, r_fragment = t.wait(upper, cr, short, fragment)
        self.assertEqual(r_fragment["headers"][":status"], "400", r_fragment)
        self.assertEqual(r_upper["reset"], PROTOCOL_ERROR, r_upper)
        self.assertEqual(r_cr["headers"][":status"], "400", r_cr)
        self.assertEqual(r_cr["headers"].get("x-airlock-reason"), "bad_request", r_cr)
        self.assertEqual(r_short["reset"], PROTOCOL_ERROR, r_short)
        for path, status, says in (("/echo/upper-" + m, 0, "the stream was reset"),
                                   ("/echo/cr-" + m, 400, "RFC 9113 section 8.2.1"),
                                   ("/echo/short-" + m, 0, "did not match its content-length")):
            rec = self.proxy.wait_audit(path=path, protocol="h2")
            self.assertIsNotNone(rec, path)
            self.assertEqual((rec["reason"], rec["status"]), ("bad_request", status), rec)
            self.assertIn(says, rec["detail"], rec)
        # The refused heads never reached the origin.
        # The target refused whole is not recorded: only why.
        rec = self.proxy.wait_audit(protocol="h2", reason="bad_request",
                                    detail=lambda d: d and "RFC 9112 section 3.2" in d)
        self.assertEqual(rec["status"], 400, rec)
        self.assertEqual([x["target"] for x in self.good.seen(m) if "short-" not in x["target"]],
                         [])
        (r,) = t.wait(t.request("/echo/after-" + m))  # the connection goes on
        self.assertEqual(r["headers"][":status"], "200", r)
        self.assert_bystander_fine()

    def test_hpack_table_size_over_the_setting(self):
        t = self.tunnel()
        # A dynamic table size update to 65536 (RFC 7541 section 6.3), above the 4096 the proxy
        # announced: a COMPRESSION_ERROR.
        block = bytes([0x3f, 0xe1, 0xff, 0x03, 0x82, 0x87, 0x84])
        self.send_raw(t, [HeadersFrame(1, data=block, flags=["END_HEADERS", "END_STREAM"])])
        self.assertEqual(t.wait_closed(), COMPRESSION_ERROR)
        self.assert_bystander_fine()

    def test_oversized_frame(self):
        t = self.tunnel()
        sid = t.headers("/echo/frame", method="POST", end_stream=False)
        t.flush()
        payload = b"x" * 20000  # > SETTINGS_MAX_FRAME_SIZE 16384
        frame = len(payload).to_bytes(3, "big") + b"\x00\x00" + sid.to_bytes(4, "big") + payload
        self.send_raw(t, [frame])
        self.assertEqual(t.wait_closed(), FRAME_SIZE_ERROR)
        self.assert_bystander_fine()

    def test_max_concurrent_streams(self):
        t = self.tunnel()
        # Streams whose bodies never come hold their slot: the one past the limit is refused.
        sids = [t.headers("/echo/open%d" % i, method="POST", end_stream=False)
                for i in range(101)]
        t.flush()
        t.pump(lambda: t.responses[sids[-1]]["reset"] is not None or t.closed)
        self.assertIn(t.responses[sids[-1]]["reset"], (REFUSED_STREAM, PROTOCOL_ERROR),
                      t.responses[sids[-1]])
        # The others are still served when their bodies come.
        t.send_body(sids[0], b"done")
        (r,) = t.wait(sids[0])
        self.assertEqual(r["headers"][":status"], "200", r)
        self.assert_bystander_fine()



class H2UpstreamFanOutCase(H2Attacks):
    # The bystander's connection and the attacker's take two of the client's four: the
    # attacker's streams may hold their own connection's upstream and two more at a time.
    limits = {"max_connections_per_client": 4}

    def test_streams_to_an_http11_origin_count_as_the_clients_connections(self):
        t = self.tunnel()
        before = self.good.accepted
        sids = [t.request("/slow/1500?fan=%d" % i) for i in range(6)]
        answers = t.wait(*sids)
        statuses = sorted(r["headers"][":status"] for r in answers)
        self.assertEqual(statuses, ["200"] * 3 + ["503"] * 3, answers)
        # (The bystander's idle upstream is its own: three new origin connections at most.)
        self.assertLessEqual(self.good.accepted - before, 3)
        refused = [r for r in answers if r["headers"][":status"] == "503"][0]
        self.assertEqual(refused["headers"].get("x-airlock-reason"), "too_many_connections")
        self.assertIn("connection_limit_reached", refused["headers"].get("proxy-status", ""))
        self.assertIn(b"max_connections_per_client", refused["body"])
        recs = [r for r in self.proxy.audit()
                if r.get("path") == "/slow/1500" and r.get("reason") == "too_many_connections"]
        self.assertEqual(len(recs), 3, self.proxy.audit()[-6:])
        # Their upstreams went back: the connection's next streams are served again.
        again = t.wait(*[t.request("/echo/again%d" % i) for i in range(3)])
        self.assertEqual([r["headers"][":status"] for r in again], ["200"] * 3, again)
        self.assert_bystander_fine()


class H2HeldBodiesCase(H2Attacks):
    # Bodies checked as JSON are held whole; the connection's streams together hold at most
    # limits.body_bytes (an HTTP/1.1 connection could hold one such body).
    limits = {"body_bytes": "150KiB"}
    rule_extra = {"body": {"json": {}}}

    def json_body(self, size):
        return b'{"pad":"' + b"x" * (size - 10) + b'"}'

    def test_bodies_held_together_are_bounded_per_connection(self):
        t = self.tunnel()
        body = self.json_body(70000)
        sids = []
        for path in ("/echo/held-a", "/echo/held-b"):
            sid = t.headers(path, method="POST", end_stream=False,
                            extra=[("content-length", "70000")])
            t.send_body(sid, body[:50000], end=False)
            sids.append(sid)
        # A third stream's bytes would take the connection past 150 KiB held: refused alone.
        c = t.headers("/echo/held-c", method="POST", end_stream=False,
                      extra=[("content-length", "70000")])
        t.send_body(c, b"x" * 60000, end=False)
        (r_c,) = t.wait(c)
        self.assertEqual(r_c["headers"][":status"], "413", r_c)
        self.assertEqual(r_c["headers"].get("x-airlock-reason"), "body_too_large")
        self.assertIn(b"send fewer at once", r_c["body"])
        rec = self.proxy.wait_audit(path="/echo/held-c", protocol="h2")
        self.assertEqual(rec["reason"], "body_too_large", rec)
        # The two held before it are served whole when their bodies end.
        for sid in sids:
            t.send_body(sid, body[50000:])
        for r in t.wait(*sids):
            self.assertEqual(r["headers"][":status"], "200", r)
        self.assert_bystander_fine()


class H2StallCase(H2Attacks):
    # A short idle timeout: the zero-window stall ends within the test's patience.
    idle_timeout = "3s"

    def test_zero_window_stall(self):
        # The client never opens its window: the stream is reset once the idle timeout passes,
        # and nothing is held for it afterwards.
        t = self.tunnel(settings={4: 0})
        sid = t.request("/bytes/2000000")
        t.conn.acknowledge_received_data = lambda *a, **k: None  # never give window back
        t.pump(lambda: t.responses[sid]["reset"] is not None or t.closed)
        self.assertEqual(t.responses[sid]["reset"], CANCEL, t.responses[sid])
        rec = self.proxy.wait_audit(path="/bytes/2000000", protocol="h2")
        self.assertIsNotNone(rec)
        # (The bystander idled through the timeout too, and was sent away: a new connection.)
        fresh = self.tunnel()
        (r,) = fresh.wait(fresh.request("/echo/after"))
        self.assertEqual(r["headers"][":status"], "200", r)



if __name__ == "__main__":
    unittest.main()
