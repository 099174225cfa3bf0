"""gRPC through an inspected rule (Debian python3-grpcio): the client reaches the proxy with its
`grpc.http_proxy` option and trusts the proxy's CA; its calls are HTTP/2 streams whose `paths`
are `/package.Service/Method`. A refused call is answered as gRPC (HTTP 200, trailers-only,
grpc-status 7 PERMISSION_DENIED for a 403, 8 RESOURCE_EXHAUSTED for a 429, grpc-message the
reason), so the client library shows a status, not a transport error.

Allowed calls go on to the origin over HTTP/2 (it picks h2 in ALPN): GrpcServerCase runs a
grpcio server on 127.0.0.1 with a certificate from the test CA, and a unary and a
bidirectional-streaming call reach it through the proxy with a header the rule injects (the
server refuses a call without it; the client never had it), their trailers (grpc-status and the
server's own metadata) coming back. GrpcRedactionCase injects a secret instead, and the
server streams it back, whole or split across two messages: the call fails, the secret never
reaches the client.
"""

import json
import queue
import unittest
from concurrent import futures

import grpc

from harness.base import ProxyTestCase
from harness.proxy import Airlock, make_policy, origin_rule
from harness.tls_support import AirlockCA, InspectedOriginCase, OriginCerts


class GrpcRefusalCase(InspectedOriginCase):
    admin = False

    origin_names = ("grpc.test", "limited.test")

    @classmethod
    def extra_setup(cls):
        super().extra_setup()
        with open(cls.ica.cert, "rb") as f:
            cls.ca_pem = f.read()

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


class GrpcServer:
    """A grpcio server with TLS on 127.0.0.1 (port 0): /airlock.test.Echo/Allowed (unary) and
    /airlock.test.Echo/Chat (bidirectional), raw bytes, both insisting on the injected header.
    A subclass serves other methods (SERVICE, methods())."""
    SERVICE = "airlock.test.Echo"

    def __init__(self, pair, **server_args):
        cert, key = pair
        with open(cert, "rb") as f:
            cert_pem = f.read()
        with open(key, "rb") as f:
            key_pem = f.read()
        self.metadata = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), **server_args)
        handler = grpc.method_handlers_generic_handler(self.SERVICE, self.methods())
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_secure_port(
            "127.0.0.1:0", grpc.ssl_server_credentials([(key_pem, cert_pem)]))
        self.server.start()

    def methods(self):
        return {"Allowed": grpc.unary_unary_rpc_method_handler(self.unary),
                "Chat": grpc.stream_stream_rpc_method_handler(self.chat),
                "Key": grpc.unary_stream_rpc_method_handler(self.key)}

    def check(self, context):
        md = dict(context.invocation_metadata())
        self.metadata.append(md)
        if md.get("x-injected") != "injected-value":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "no injected credential")

    def unary(self, request, context):
        self.check(context)
        if request == b"fail":
            context.abort(grpc.StatusCode.NOT_FOUND, "nothing here")
        context.set_trailing_metadata((("x-server-trailer", "s1"),))
        return b"echo:" + request

    def chat(self, requests, context):
        self.check(context)
        for r in requests:
            yield b"echo:" + r

    def key(self, request, context):
        """A debug endpoint that streams the call's x-api-key back: whole, or cut at the byte
        the request names, its halves in two messages."""
        value = dict(context.invocation_metadata()).get("x-api-key", "").encode()
        cut = int(request.decode() or 0)
        if cut:
            yield b"key:" + value[:cut]
            yield value[cut:]
        else:
            yield b"key:" + value

    def stop(self):
        self.server.stop(None).wait()


class GrpcServerCase(ProxyTestCase):
    """The proxy and a GrpcServer (`server`: grpcup.test, intercepted); no tests of its own."""
    admin = False
    server = GrpcServer

    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts(names=("grpcup.test",))
        cls.grpc = cls.server(cls.certs.good)
        with open(cls.ica.cert, "rb") as f:
            cls.ca_pem = f.read()

    @classmethod
    def extra_teardown(cls):
        cls.grpc.stop()
        cls.certs.cleanup()
        cls.ica.cleanup()

    def channel(self):
        channel = grpc.secure_channel(
            "grpcup.test:%d" % self.grpc.port,
            grpc.ssl_channel_credentials(root_certificates=self.ca_pem),
            options=[("grpc.http_proxy", "http://127.0.0.1:%d" % self.port),
                     ("grpc.enable_http_proxy", 1)])
        self.addCleanup(channel.close)
        return channel


class GrpcCallsCase(GrpcServerCase):
    @classmethod
    def policy(cls):
        return make_policy([
            origin_rule(cls.origin.port),
            {"name": "grpc-up", "hosts": ["grpcup.test"], "addresses": ["127.0.0.1"],
             "allow_cidrs": ["127.0.0.1/32"], "ports": [cls.grpc.port], "inspect": True,
             "methods": ["POST"], "paths": [r"^/airlock\.test\.Echo/(Allowed|Chat)$"],
             "inject": {"headers": {"X-Injected": "injected-value"}},
             "dlp": {"action": "block"}},
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert})

    def test_unary_call_with_injected_credential_and_trailers(self):
        mark = self.proxy.audit_mark()
        stub = self.channel().unary_unary("/airlock.test.Echo/Allowed")
        answer, call = stub.with_call(b"payload", timeout=20)
        self.assertEqual(answer, b"echo:payload")
        self.assertEqual(call.code(), grpc.StatusCode.OK)
        self.assertEqual(dict(call.trailing_metadata()).get("x-server-trailer"), "s1")
        self.assertEqual(self.grpc.metadata[-1].get("x-injected"), "injected-value")
        rec = self.proxy.wait_audit(after=mark, path="/airlock.test.Echo/Allowed")
        self.assertIsNotNone(rec, self.proxy.audit()[-3:])
        self.assertEqual(rec["protocol"], "h2")
        self.assertEqual(rec.get("upstream_protocol"), "h2")
        self.assertEqual(rec["decision"], "allow")

    def test_server_status_reaches_the_client(self):
        # A status without a message (trailers only, or a head then trailers) is the server's
        # answer, passed on as it is.
        stub = self.channel().unary_unary("/airlock.test.Echo/Allowed")
        with self.assertRaises(grpc.RpcError) as caught:
            stub(b"fail", timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.NOT_FOUND, caught.exception)
        self.assertEqual(caught.exception.details(), "nothing here")

    def test_bidirectional_stream_in_turns(self):
        # Each message waits for the answer to the one before: only a proxy that carries both
        # directions at once gets through.
        stub = self.channel().stream_stream("/airlock.test.Echo/Chat")
        answered = queue.Queue()

        def messages():
            for i in range(3):
                yield b"m%d" % i
                answered.get(timeout=20)

        got = []
        for r in stub(messages(), timeout=30):
            got.append(r)
            answered.put(True)
        self.assertEqual(got, [b"echo:m0", b"echo:m1", b"echo:m2"])
        self.assertEqual(self.grpc.metadata[-1].get("x-injected"), "injected-value")

    def test_denied_method_never_reaches_the_server(self):
        before = len(self.grpc.metadata)
        stub = self.channel().unary_unary("/airlock.test.Echo/Other")
        with self.assertRaises(grpc.RpcError) as caught:
            stub(b"x", timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
        self.assertEqual(len(self.grpc.metadata), before)

    def test_a_key_filling_a_protobuf_field_is_refused(self):
        # The key opens a string field of 65 bytes: its length byte is 'A', so as bytes the key
        # has a letter on its left; DLP reads each field on its own.
        key_field = b"AKIAIOSFODNN7EXAMPLE " + b"x" * 44
        message = b"\x0a\x41" + key_field + b"\x32\x01z"
        before = len(self.grpc.metadata)
        mark = self.proxy.audit_mark()
        stub = self.channel().unary_unary("/airlock.test.Echo/Allowed")
        with self.assertRaises(grpc.RpcError) as caught:
            stub(message, timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.PERMISSION_DENIED,
                         caught.exception)
        self.assertEqual(len(self.grpc.metadata), before, "the server ran the call")
        rec = self.proxy.wait_audit(after=mark, path="/airlock.test.Echo/Allowed",
                                    reason="dlp_blocked")
        self.assertIsNotNone(rec, self.proxy.audit()[-3:])
        self.assertEqual([d["class"] for d in rec["dlp"]], ["aws-access-key"], rec)
        # In a stream, the message that carries it ends the call.
        chat = self.channel().stream_stream("/airlock.test.Echo/Chat")
        with self.assertRaises(grpc.RpcError) as caught:
            list(chat(iter([b"\x0a\x02ok", message]), timeout=20))
        self.assertEqual(caught.exception.code(), grpc.StatusCode.PERMISSION_DENIED)


class GrpcRedactionCase(GrpcServerCase):
    """The rule injects a secret as x-api-key: the call's answer never carries it back, whole
    or split across two of its messages (a gRPC client collecting the messages can join them);
    the call fails instead, and the audit record says why."""
    SECRET = "grpc-AIRLOCKTEST-0123456789-abcdef"
    ENV = "AIRLOCK_ITEST_SECRET_GRPC_KEY"

    @classmethod
    def _new_proxy(cls):
        return Airlock(cls.policy(), threads=cls.threads, args=cls.proxy_args,
                       name=cls.__name__, env_extra={cls.ENV: cls.SECRET})

    @classmethod
    def policy(cls):
        return make_policy([
            origin_rule(cls.origin.port),
            {"name": "grpc-key", "hosts": ["grpcup.test"], "addresses": ["127.0.0.1"],
             "allow_cidrs": ["127.0.0.1/32"], "ports": [cls.grpc.port], "inspect": True,
             "methods": ["POST"], "paths": [r"^/airlock\.test\.Echo/Key$"],
             "inject": {"headers": {"X-Api-Key": "${secrets.grpc_key}"}}},
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert},
            secrets={"grpc_key": {"env": cls.ENV}})

    def test_the_injected_key_never_comes_back(self):
        stub = self.channel().unary_stream("/airlock.test.Echo/Key")
        for cut in (0, 1, 12, len(self.SECRET) - 1):
            with self.subTest(cut=cut):
                mark = self.proxy.audit_mark()
                got = []
                with self.assertRaises(grpc.RpcError) as caught:
                    for m in stub(str(cut).encode(), timeout=20):
                        got.append(m)
                self.assertNotEqual(caught.exception.code(), grpc.StatusCode.OK)
                joined = b"".join(got)
                self.assertNotIn(self.SECRET[:max(cut, 12)].encode(), joined, got)
                rec = self.proxy.wait_audit(after=mark, path="/airlock.test.Echo/Key",
                                            reason="unredactable_response")
                self.assertIsNotNone(rec, self.proxy.audit()[-3:])
                self.assertIn("binary", rec["detail"])
                self.assertNotIn(self.SECRET[:12], json.dumps(rec))


if __name__ == "__main__":
    unittest.main()
