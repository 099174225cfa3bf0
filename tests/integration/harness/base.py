"""unittest base classes: one origin (plain HTTP, optionally TLS) and one proxy per class.

Subclasses override `policy(cls)` to build their policy from the origin ports. A proxy that
died during a test is restarted in setUp (and the death is a failure of that test), so one
crash does not cascade into every later test of the class. tearDownClass stops the proxy with
SIGTERM and fails if it does not exit 0 or if a sanitizer reported anything.
"""

import json
import signal
import unittest
import uuid

from . import clients
from .clients import header_value
from .certs import TestCA
from .origin import OriginServer
from .proxy import REASONS, Airlock, origin_rule, make_policy


def parse_proxy_status(value):
    """RFC 9209 Proxy-Status (an RFC 8941 list; we take its first member):
    'airlock; error=x; details="y"' -> {'name': 'airlock', 'error': 'x', 'details': 'y'}."""
    out = {}
    if value is None:
        return out
    parts = []
    cur, quoted, escaped = "", False, False
    for ch in value:
        if escaped:
            cur += ch
            escaped = False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch == ";" and not quoted:
            parts.append(cur)
            cur = ""
        elif ch == "," and not quoted:
            break
        else:
            cur += ch
    parts.append(cur)
    out["name"] = parts[0].strip()
    for p in parts[1:]:
        k, _, v = p.strip().partition("=")
        out[k.strip()] = v.strip()
    return out


def marker():
    return uuid.uuid4().hex[:12]


class ProxyTestCase(unittest.TestCase):
    """One OriginServer (+ a TLS one when `tls = True`) and one Airlock per class."""

    tls = False
    threads = 2
    proxy_args = ()
    adversarial = False  # check after every test that a normal request still works

    @classmethod
    def policy(cls):
        return make_policy([origin_rule(cls.origin.port)])

    @classmethod
    def setUpClass(cls):
        cls.ca = TestCA() if cls.tls else None
        cls.origin = OriginServer().start()
        cls.tls_origin = OriginServer(cls.ca.server_context()).start() if cls.tls else None
        cls.extra_setup()
        cls.proxy = None
        try:
            cls.proxy = cls._start_proxy()
        except BaseException:
            cls._teardown_servers()
            raise

    @classmethod
    def extra_setup(cls):
        pass

    @classmethod
    def extra_teardown(cls):
        pass

    @classmethod
    def _new_proxy(cls):
        return Airlock(cls.policy(), threads=cls.threads, args=cls.proxy_args,
                       name=cls.__name__)

    @classmethod
    def _start_proxy(cls):
        proxy = cls._new_proxy()
        try:
            return proxy.start()
        except BaseException:
            proxy.cleanup()
            raise

    @classmethod
    def _teardown_servers(cls):
        cls.extra_teardown()
        cls.origin.stop()
        if cls.tls_origin is not None:
            cls.tls_origin.stop()
        if cls.ca is not None:
            cls.ca.cleanup()

    @classmethod
    def tearDownClass(cls):
        problems = []
        try:
            if cls.proxy is not None:
                was_alive = cls.proxy.alive()
                rc = cls.proxy.stop(signal.SIGTERM)
                if was_alive and rc != 0:
                    problems.append("proxy exited %s after SIGTERM" % rc)
                reports = cls.proxy.sanitizer_reports()
                if reports:
                    problems.append("sanitizer reports:\n" + "\n".join(reports[:20]) +
                                    "\n" + cls.proxy.stderr()[-6000:])
        finally:
            if cls.proxy is not None:
                cls.proxy.cleanup()
            cls._teardown_servers()
        if problems:
            raise AssertionError("; ".join(problems))

    def setUp(self):
        if not self.proxy.alive():
            dead = self.proxy
            rc = dead.proc.poll()
            tail = dead.stderr()[-3000:]
            dead.cleanup()
            type(self).proxy = self._start_proxy()
            self.fail("the proxy had died before this test (exit %s); restarted it. stderr "
                      "tail:\n%s" % (rc, tail))

    def tearDown(self):
        if self.adversarial:
            self.assert_proxy_alive()
            self.assert_audit_well_formed()

    def assert_audit_well_formed(self):
        """Every audit line is a JSON object whose text fields hold no control characters
        (garbage there means a record pointed at freed memory, or unescaped client bytes)."""
        for rec in self.proxy.audit():
            self.assertNotIn("_unparsable", rec, "audit line is not JSON: %r" % rec)
            for key, value in rec.items():
                if isinstance(value, str):
                    bad = [c for c in value if ord(c) < 0x20 or ord(c) == 0x7f]
                    self.assertEqual(bad, [], "audit field %s=%r has control characters in %r"
                                     % (key, value, rec))

    # -- helpers ------------------------------------------------------------------------------

    @property
    def port(self):
        return self.proxy.port

    def url(self, path, host="origin.test"):
        return self.origin.url(path, host)

    def curl(self, *urls, **kw):
        kw.setdefault("proxy_port", self.proxy.port)
        return clients.curl(*urls, **kw)

    def raw(self, **kw):
        return clients.RawClient(self.proxy.port, **kw)

    def request(self, method, url, headers=(), body=b"", version="HTTP/1.1", host=None):
        """Bytes of a request in absolute form with Host taken from the URL."""
        if host is None:
            host = url.split("://", 1)[1].split("/", 1)[0]
        lines = ["%s %s %s" % (method, url, version), "Host: %s" % host]
        lines += ["%s: %s" % kv for kv in headers]
        if body and not any(k.lower() in ("content-length", "transfer-encoding")
                            for k, _ in headers):
            lines.append("Content-Length: %d" % len(body))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def send_raw(self, data, count=1, timeout=None):
        """Sends bytes on a new connection, returns (final responses, client)."""
        client = self.raw(timeout=timeout)
        self.addCleanup(client.close)
        client.send(data)
        responses = client.read_responses(count, tunnel=data.startswith(b"CONNECT "))
        return [r for r in responses if r.status >= 200 or r.status == 101], client

    def assert_proxy_alive(self):
        self.assertTrue(self.proxy.alive(), "proxy process died; stderr tail:\n%s"
                        % self.proxy.stderr()[-3000:])
        m = marker()
        r = self.curl(self.url("/echo/alive-%s" % m))
        self.assertEqual(r.status, 200, "a normal request after the test failed: %r" % r)
        self.assertEqual(r.json()["path"], "/echo/alive-%s" % m)

    def assert_answer(self, resp, reason, status=None, msg=""):
        """The proxy's own answer: status, X-Airlock-Reason, Proxy-Status token, text body."""
        self.assertIsNotNone(resp, "no response at all (expected %s) %s" % (reason, msg))
        want_status, token = REASONS[reason]
        if status is not None:
            want_status = status
        got = "%r" % resp
        self.assertEqual(resp.status, want_status, "status for %s: %s %s" % (reason, got, msg))
        self.assertEqual(resp.header("X-Airlock-Reason"), reason, "%s %s" % (got, msg))
        ps = parse_proxy_status(resp.header("Proxy-Status"))
        self.assertEqual(ps.get("name"), "airlock", "Proxy-Status %r" % resp.header(
            "Proxy-Status"))
        self.assertEqual(ps.get("error"), token, "Proxy-Status %r" % resp.header(
            "Proxy-Status"))
        self.assertIn("details", ps, "Proxy-Status %r lacks details" % resp.header(
            "Proxy-Status"))
        ctype = (resp.header("Content-Type") or "").split(";")[0].strip()
        self.assertEqual(ctype, "text/plain", got)
        body = resp.body if isinstance(resp.body, bytes) else b""
        self.assertTrue(body.strip(), "the answer has an empty body: %s" % got)

    def assert_audit(self, msg="", client_port=None, **match):
        """The audit record matching every field of `match`. Tie it to this test's own request:
        a marker in `path`, or `client_port` (the local port of the client's connection to the
        proxy: CurlResult.local_port, RawClient.local_port), or `after=proxy.audit_mark()`."""
        if client_port is not None:
            match["client"] = lambda v, p=client_port: isinstance(v, str) and v.endswith(
                ":%d" % p)
        rec = self.proxy.wait_audit(**match)
        if rec is None:
            tail = self.proxy.audit()[-8:]
            self.fail("no audit record with %r %s; last records:\n%s" % (
                match, msg, "\n".join(json.dumps(r) for r in tail)))
        return rec


class CurlAnswer:
    """Adapts a CurlResult's final response to what assert_answer reads."""

    def __init__(self, result):
        self.result = result
        final = result.final
        self.status = final.status if final else None
        self.headers = final.headers if final else []
        self.body = result.body

    def header(self, name, default=None):
        return header_value(self.headers, name, default)

    def __repr__(self):
        return "<CurlAnswer %r>" % self.result
