"""An HTTP/2 answer the response filters cut before any of it went out: the client gets the
proxy's answer saying why (for a gRPC call, a gRPC status with the reason; Proxy-Status), not a
head followed by a stream reset, and the audit record says what it got.

The origin is a grpcio server (Debian python3-grpcio) behind an inspected rule that injects a
secret; its method echoes the credential it received in its answer, which is binary
(application/grpc), so the redaction guard cannot rewrite it and cuts the body. The head waits
with the body's first released bytes (as it does for HTTP/1.1), so the cut comes before it.
"""

import os
import tempfile
import unittest
from concurrent import futures

import grpc

from harness.base import ProxyTestCase
from harness.proxy import make_policy, origin_rule
from harness.tls_support import AirlockCA, OriginCerts

SECRET = "sk-live-" + "7Qm2Vx9Lc4Rt8Nw1Ky6Hp3Zd"


class EchoCredential:
    """/airlock.test.Echo/Credential answers the Authorization it was sent, as its message."""

    def __init__(self, pair):
        cert, key = pair
        with open(cert, "rb") as f:
            cert_pem = f.read()
        with open(key, "rb") as f:
            key_pem = f.read()
        self.calls = 0
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handler = grpc.method_handlers_generic_handler("airlock.test.Echo", {
            "Credential": grpc.unary_unary_rpc_method_handler(self.credential)})
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_secure_port(
            "127.0.0.1:0", grpc.ssl_server_credentials([(key_pem, cert_pem)]))
        self.server.start()

    def credential(self, request, context):
        self.calls += 1
        return dict(context.invocation_metadata()).get("authorization", "").encode()

    def stop(self):
        self.server.stop(None).wait()


class H2CutAnswerCase(ProxyTestCase):
    admin = False

    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts(names=("grpcecho.test",))
        cls.grpc = EchoCredential(cls.certs.good)
        cls.secret_dir = tempfile.TemporaryDirectory(prefix="airlock-h2cut-")
        cls.secret_file = os.path.join(cls.secret_dir.name, "key")
        with open(cls.secret_file, "w") as f:
            f.write(SECRET)
        os.chmod(cls.secret_file, 0o600)
        with open(cls.ica.cert, "rb") as f:
            cls.ca_pem = f.read()

    @classmethod
    def extra_teardown(cls):
        cls.grpc.stop()
        cls.secret_dir.cleanup()
        cls.certs.cleanup()
        cls.ica.cleanup()

    @classmethod
    def policy(cls):
        p = make_policy([
            origin_rule(cls.origin.port),
            {"name": "grpc-echo", "hosts": ["grpcecho.test"], "addresses": ["127.0.0.1"],
             "allow_cidrs": ["127.0.0.1/32"], "ports": [cls.grpc.port], "inspect": True,
             "inject": {"headers": {"Authorization": "Bearer ${secrets.key}"}}},
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert})
        p["secrets"] = {"key": {"file": cls.secret_file, "hosts": ["grpcecho.test"]}}
        return p

    def test_a_call_whose_answer_is_cut_gets_a_status_saying_why(self):
        channel = grpc.secure_channel(
            "grpcecho.test:%d" % self.grpc.port,
            grpc.ssl_channel_credentials(root_certificates=self.ca_pem),
            options=[("grpc.http_proxy", "http://127.0.0.1:%d" % self.port),
                     ("grpc.enable_http_proxy", 1)])
        self.addCleanup(channel.close)
        stub = channel.unary_unary("/airlock.test.Echo/Credential")
        with self.assertRaises(grpc.RpcError) as caught:
            stub(b"x", timeout=20)
        err = caught.exception
        self.assertEqual(self.grpc.calls, 1)  # the origin answered; the proxy cut it
        # The proxy's answer as a gRPC status (a reset would be INTERNAL without a reason).
        self.assertEqual(err.code(), grpc.StatusCode.UNAVAILABLE, err)
        self.assertIn("unredactable_response", err.details())
        self.assertNotIn(SECRET, err.details())
        trailers = dict(err.trailing_metadata() or ())
        self.assertIn("error=proxy_internal_response", trailers.get("proxy-status", ""))
        rec = self.proxy.wait_audit(path="/airlock.test.Echo/Credential")
        self.assertIsNotNone(rec, self.proxy.audit()[-3:])
        self.assertEqual((rec["protocol"], rec["reason"]), ("h2", "unredactable_response"))
        self.assertNotIn(SECRET, str(self.proxy.audit()))


if __name__ == "__main__":
    unittest.main()
