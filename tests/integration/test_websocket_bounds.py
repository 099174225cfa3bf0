"""WebSocket permessage-deflate (RFC 7692) floods from a hostile agent, with raw sockets:

- what one connection holds stays bounded (docs/policy.md, WebSocket): one 64 KiB read of
  compressed frames holds dozens of messages that each inflate to max_message_bytes, and an
  agent that sends them and never reads (or an origin that never reads) must not pin them all;
- a worker still busy with such a flood when SIGTERM comes shuts down cleanly: exit 0 and no
  sanitizer report (run against the ASan build, this is where a use-after-scope and a
  use-after-free showed)."""

import signal
import socket
import threading
import time
import unittest
import zlib

from harness import env
from harness.proxy import Airlock, RssSampler, make_policy
from harness.ws_raw import accept_upgrade, frame, raw_upgrade

KIB = 1024
MIB = 1024 * KIB


def compressed_frame(opcode, body):
    """A client's message compressed as permessage-deflate sends it (raw deflate, sync-flushed,
    the 0x00 0x00 0xff 0xff tail left off: RFC 7692 section 7.2.1), in one masked frame with
    RSV1 set. The mask key is zero (the payload stays as it is: cheap to build, still masked)."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = (z.compress(body) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
    return frame(opcode, payload, rsv1=True, mask_key=b"\0\0\0\0")


class DeflateOrigin:
    """A raw WebSocket origin on 127.0.0.1:0 that agrees permessage-deflate. `drain`: it reads
    and discards whatever comes; otherwise it never reads (a receiver that stalls)."""

    def __init__(self, drain):
        self.drain = drain
        self.sock = socket.socket()
        if not drain:
            # A small window (inherited by accepted sockets): the proxy stalls after little.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * KIB)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.stopping = threading.Event()

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self):
        self.stopping.set()
        self.sock.close()
        for c in self.conns:
            c.close()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            if accept_upgrade(c, b"permessage-deflate") is None:
                return
            if not self.drain:
                self.stopping.wait()
                return
            while c.recv(1 << 20):
                pass
        except OSError:
            pass


def upgrade(proxy_port, origin_port, path):
    """An absolute-form upgrade offering permessage-deflate; returns the socket once the 101
    with the extension came back."""
    head, s, _ = raw_upgrade(proxy_port, "http://ws.test:%d%s" % (origin_port, path),
                             "ws.test:%d" % origin_port,
                             extra="Sec-WebSocket-Extensions: permessage-deflate\r\n",
                             timeout=env.t(10))
    if " 101 " not in head.splitlines()[0] or "permessage-deflate" not in head:
        s.close()
        raise AssertionError("no permessage-deflate upgrade: %r" % head[:300])
    return s


def ws_policy(origin_port, max_message, limits=None, **extra):
    rule = {"name": "ws", "hosts": ["ws.test"], "addresses": ["127.0.0.1"],
            "allow_cidrs": ["127.0.0.1/32"], "ports": [origin_port], "upgrades": ["websocket"],
            "websocket": {"max_message_bytes": max_message}}
    rule.update(extra)
    return make_policy([rule], limits=limits)


class DeflateAmplificationTest(unittest.TestCase):
    """The agent sends messages of ~300 compressed bytes that each inflate to the limit
    (256 KiB), ~200 of them per 64 KiB read, and the origin never reads. Holding a read's worth
    of inflated output would be ~64 MiB per connection; docs/policy.md bounds what a connection
    holds at about 8 x max_message_bytes + 256 KiB (2.25 MiB here)."""

    CONNECTIONS = 4
    MAX_MESSAGE = 256 * KIB
    DOC_BOUND = 8 * MAX_MESSAGE + 256 * KIB
    # The allocator's own share. An ASan build keeps freed chunks too (its quarantine of 16 MiB,
    # harness/env.py, then its free lists): every round the proxy made and wrote counts there.
    ALLOWANCE = (48 if env.sanitized() else 24) * MIB

    def test_a_stalled_receiver_does_not_pin_a_reads_worth_of_inflated_messages(self):
        origin = DeflateOrigin(drain=False).start()
        self.addCleanup(origin.stop)
        proxy = Airlock(ws_policy(origin.port, "256KiB"), threads=2, name="ws-deflate-rss")
        self.addCleanup(proxy.cleanup)
        proxy.start()
        bomb = compressed_frame(0x2, b"\0" * self.MAX_MESSAGE)
        self.assertLess(len(bomb), 1024)
        socks = []
        self.addCleanup(lambda: [s.close() for s in socks])
        before = proxy.rss_kib() * KIB
        with RssSampler(proxy) as sampler:
            for i in range(self.CONNECTIONS):
                s = upgrade(proxy.port, origin.port, "/flood/%d" % i)
                socks.append(s)
                s.settimeout(env.t(2))
                try:
                    s.sendall(bomb * (512 * KIB // len(bomb)))
                except socket.timeout:
                    pass  # the proxy stopped reading: what it took is what it holds
            # The proxy inflates what it read and stalls on the origin; the bound holds
            # throughout (the window is long enough for an ASan build to inflate a read).
            time.sleep(env.t(3))
        growth = max(sampler.peak * KIB, proxy.rss_kib() * KIB) - before
        limit = self.CONNECTIONS * self.DOC_BOUND + self.ALLOWANCE
        self.assertLess(growth, limit, "proxy RSS grew %.1f MiB for %d stalled connections "
                        "(bound %.1f MiB)" % (growth / MIB, self.CONNECTIONS, limit / MIB))
        self.assertTrue(proxy.alive())
        self.assertEqual(proxy.stop(), 0)
        self.assertEqual(proxy.sanitizer_reports(), [], proxy.stderr()[-4000:])


class BusyWorkerShutdownTest(unittest.TestCase):
    """One worker thread, several agents flooding it with compressed 1 MiB messages that DLP
    scans, an origin that reads everything: the worker has a backlog of work when SIGTERM comes,
    longer than shutdown's waits for it."""

    CONNECTIONS = 12

    def test_sigterm_while_the_worker_is_busy_exits_cleanly(self):
        origin = DeflateOrigin(drain=True).start()
        self.addCleanup(origin.stop)
        proxy = Airlock(ws_policy(origin.port, "1MiB", limits={"drain_timeout": "1s"},
                                  dlp={"action": "block"}),
                        threads=1, name="ws-busy-shutdown")
        self.addCleanup(proxy.cleanup)
        proxy.start()
        bomb = compressed_frame(0x1, b"a" * MIB)
        socks = [upgrade(proxy.port, origin.port, "/busy/%d" % i)
                 for i in range(self.CONNECTIONS)]
        stop = threading.Event()

        def flood(s):
            s.settimeout(0.5)
            while not stop.is_set():
                try:
                    s.sendall(bomb * 64)
                except OSError:
                    if s.fileno() < 0:
                        return

        threads = [threading.Thread(target=flood, args=(s,), daemon=True) for s in socks]
        for t in threads:
            t.start()
        self.addCleanup(lambda: [s.close() for s in socks])
        self.addCleanup(stop.set)
        # Let every connection queue a backlog, then stop the proxy in the middle of it.
        time.sleep(env.t(1))
        rc = proxy.stop(signal.SIGTERM, timeout=env.t(30))
        stop.set()
        self.assertEqual(rc, 0, proxy.stderr()[-4000:])
        self.assertEqual(proxy.sanitizer_reports(), [], proxy.stderr()[-6000:])


if __name__ == "__main__":
    unittest.main()
