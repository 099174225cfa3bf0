"""gRPC through an inspected rule (Debian python3-grpcio): the client reaches the proxy with its
`grpc.http_proxy` option and trusts the proxy's CA; its calls are HTTP/2 streams whose `paths`
are `/package.Service/Method`. A refused call is answered as gRPC (HTTP 200, trailers-only,
grpc-status 7 PERMISSION_DENIED for a 403, 8 RESOURCE_EXHAUSTED for a 429, grpc-message the
reason), so the client library shows a status, not a transport error.

(Calls that are allowed go on to the origin over HTTP/1.1 today, which a gRPC server does not
speak: they are not shown here; see docs/policy.md, "Protocols: HTTP/2".)
"""

import unittest

import grpc

from harness.base import ProxyTestCase
from harness.proxy import make_policy, origin_rule
from harness.tls_support import AirlockCA, AlpnOrigin, OriginCerts


class GrpcRefusalCase(ProxyTestCase):
    admin = False

    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts(names=("grpc.test", "limited.test"))
        # What the CONNECT reaches; the refused calls never get there.
        cls.good = AlpnOrigin(OriginCerts.server_context(cls.certs.good)).start()
        with open(cls.ica.cert, "rb") as f:
            cls.ca_pem = f.read()

    @classmethod
    def extra_teardown(cls):
        cls.good.stop()
        cls.certs.cleanup()
        cls.ica.cleanup()

    @classmethod
    def policy(cls):
        base = {"addresses": ["127.0.0.1"], "allow_cidrs": ["127.0.0.1/32"],
                "ports": [cls.good.port], "inspect": True}
        return make_policy([
            origin_rule(cls.origin.port),
            dict(base, name="grpc", hosts=["grpc.test"], methods=["POST"],
                 paths=[r"^/airlock\.test\.Echo/Allowed$"]),
            dict(base, name="limited", hosts=["limited.test"],
                 rate={"requests_per_minute": 1, "burst": 1}),
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert})

    def call(self, host, method):
        channel = grpc.secure_channel(
            "%s:%d" % (host, self.good.port),
            grpc.ssl_channel_credentials(root_certificates=self.ca_pem),
            options=[("grpc.http_proxy", "http://127.0.0.1:%d" % self.port),
                     ("grpc.enable_http_proxy", 1)])
        self.addCleanup(channel.close)
        stub = channel.unary_unary(method)
        with self.assertRaises(grpc.RpcError) as caught:
            stub(b"payload", timeout=20)
        return caught.exception

    def test_denied_method_is_permission_denied(self):
        e = self.call("grpc.test", "/airlock.test.Echo/Denied")
        self.assertEqual(e.code(), grpc.StatusCode.PERMISSION_DENIED, e)
        self.assertIn("path_denied", e.details())
        rec = self.proxy.wait_audit(path="/airlock.test.Echo/Denied")
        self.assertIsNotNone(rec)
        self.assertEqual(rec["protocol"], "h2")
        self.assertEqual(rec["reason"], "path_denied")
        self.assertEqual(rec["status"], 200)  # what the client received: a gRPC status
        self.assertEqual(self.good.seen("/airlock.test.Echo/Denied"), [])

    def test_rate_limited_call_is_resource_exhausted(self):
        codes = [self.call("limited.test", "/airlock.test.Echo/Any").code() for _ in range(3)]
        self.assertIn(grpc.StatusCode.RESOURCE_EXHAUSTED, codes, codes)
        rec = self.proxy.wait_audit(host="limited.test", reason="rate_limited")
        self.assertIsNotNone(rec)


if __name__ == "__main__":
    unittest.main()
