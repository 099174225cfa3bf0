"""A client that goes away while its response is being written still leaves exactly one audit
record, and the record says so: the decision stays what the policy decided (allow) and the status
what the origin answered (the head went out), but `detail` says the response was not delivered
and `bytes_out` counts only what was sent. Without this the record read as a whole 200."""

import socket
import struct
import unittest

from harness.base import ProxyTestCase

BODY = 64 * 1024 * 1024  # far more than the socket buffers on the way hold


class ResponseDeliveryTest(ProxyTestCase):
    def test_client_gone_mid_response_is_recorded_as_not_delivered(self):
        mark = self.proxy.audit_mark()
        port = self.origin.port
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        s.sendall(b"GET http://origin.test:%d/bytes/%d HTTP/1.1\r\nHost: origin.test:%d\r\n\r\n"
                  % (port, BODY, port))
        head = b""
        while b"\r\n\r\n" not in head:
            piece = s.recv(65536)
            self.assertTrue(piece, "the proxy closed before the response head")
            head += piece
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head[:64])
        # Close with a reset (SO_LINGER 0): the proxy's next write fails at once.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()

        path = "/bytes/%d" % BODY
        rec = self.proxy.wait_audit(after=mark, path=path)
        self.assertIsNotNone(rec, "no audit record for the cut exchange")
        self.assertEqual(rec["decision"], "allow")
        self.assertEqual(rec["status"], 200)
        self.assertIn("response not delivered", rec["detail"])
        self.assertLess(rec["bytes_out"], BODY)

        # A later exchange on another connection is recorded as usual, and the cut one still has
        # exactly one record.
        done = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        done.sendall(b"GET http://origin.test:%d/bytes/10 HTTP/1.1\r\nHost: origin.test:%d\r\n"
                     b"Connection: close\r\n\r\n" % (port, port))
        reply = b""
        while True:
            piece = done.recv(65536)
            if not piece:
                break
            reply += piece
        done.close()
        self.assertTrue(reply.startswith(b"HTTP/1.1 200"), reply[:64])
        after = self.proxy.wait_audit(after=mark, path="/bytes/10")
        self.assertIsNotNone(after)
        self.assertEqual(after["detail"], "")
        self.assertEqual(len([r for r in self.proxy.audit()[mark:] if r.get("path") == path]), 1)


if __name__ == "__main__":
    unittest.main()
