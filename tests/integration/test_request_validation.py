"""Parameter validation per rule with the real binary: query parameters, headers, body size
and JSON body fields. Each constraint refuses with its parameter and constraint named, never
echoing the value, and a valid request passes through unchanged."""

import hashlib
import json
import unittest

from harness.base import ProxyTestCase, marker
from harness.proxy import make_policy, origin_rule


class ValidationTest(ProxyTestCase):
    adversarial = True

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p),
             origin_rule(p, name="query", hosts=["query.test"],
                         query={"params": {"per_page": "^[0-9]{1,3}$", "page": "", "q": None},
                                "required": ["per_page"], "unknown": "refuse"}),
             origin_rule(p, name="strip", hosts=["strip.test"],
                         query={"params": {"keep": ""}, "unknown": "strip"}),
             origin_rule(p, name="headers", hosts=["headers.test"],
                         headers={"required": ["X-Request-Id"], "forbidden": ["Cookie"],
                                  "match": {"Accept": "^application/json$"}}),
             origin_rule(p, name="small", hosts=["small.test"], body={"max_bytes": 1024}),
             origin_rule(p, name="json", hosts=["json.test"],
                         body={"max_bytes": "64KiB",
                               "json": {"model": {"type": "string", "enum": ["small", "large"],
                                                  "required": True},
                                        "max_tokens": {"type": "integer", "minimum": 1,
                                                       "maximum": 4096},
                                        "user.name": {"type": "string",
                                                      "pattern": "^[a-z]+$",
                                                      "max_length": 8},
                                        "tags": {"type": "array", "max_length": 2}}})],
            agents={"default": {"rules": ["origin", "query", "strip", "headers", "small",
                                          "json"]}})

    def refused(self, url, reason, parameter, constraint, method="GET", headers=(), body=b""):
        m = marker()
        url = url.replace("/echo", "/echo/" + m, 1)
        [r], _ = self.send_raw(self.request(method, url, headers=headers, body=body))
        self.assert_answer(r, reason)
        details = r.header("Proxy-Status").lower()
        self.assertIn(parameter.lower(), details)
        self.assertIn(constraint.lower(), details)
        rec = self.assert_audit(path=lambda p: p is not None and m in p)
        self.assertEqual(self.origin.seen(m), [], "a refused request reached the origin")
        self.assertEqual(rec["reason"], reason)
        return r

    def passes(self, url, method="GET", headers=(), body=b""):
        m = marker()
        url = url.replace("/echo", "/echo/" + m, 1)
        [r], _ = self.send_raw(self.request(method, url, headers=headers, body=body))
        self.assertEqual(r.status, 200, r)
        return r.json()

    # -- query ----------------------------------------------------------------------------------

    def test_query_valid_passes_unchanged(self):
        seen = self.passes(self.url("/echo?per_page=50&page=a%20b&q=x+y&page=2",
                                    host="query.test"))
        self.assertEqual(seen["query"], "per_page=50&page=a%20b&q=x+y&page=2")

    def test_query_pattern(self):
        r = self.refused(self.url("/echo?per_page=5000", host="query.test"), "query_denied",
                         "per_page", "pattern")
        self.assertNotIn(b"5000", r.body)
        # Every value of a repeated parameter must match.
        self.refused(self.url("/echo?per_page=5&per_page=x", host="query.test"), "query_denied",
                     "per_page", "pattern")

    def test_query_required(self):
        self.refused(self.url("/echo?page=1", host="query.test"), "query_denied", "per_page",
                     "missing")
        self.refused(self.url("/echo", host="query.test"), "query_denied", "per_page",
                     "missing")

    def test_query_unknown_refused(self):
        self.refused(self.url("/echo?per_page=1&token=abc", host="query.test"), "query_denied",
                     "token", "not allowed")

    def test_query_encoded_names_are_decoded(self):
        # per%5Fpage is per_page: its value is checked like any other.
        self.refused(self.url("/echo?per%5Fpage=abc", host="query.test"), "query_denied",
                     "per_page", "pattern")
        self.passes(self.url("/echo?per%5Fpage=12", host="query.test"))
        self.refused(self.url("/echo?per_page=1&page=%zz", host="query.test"), "query_denied",
                     "page", "not validly encoded")

    def test_query_unknown_stripped(self):
        seen = self.passes(self.url("/echo?keep=1&drop=2&keep=3&x", host="strip.test"))
        self.assertEqual(seen["query"], "keep=1&keep=3")
        seen = self.passes(self.url("/echo?drop=2", host="strip.test"))
        self.assertEqual(seen["query"], "")
        self.assertEqual(seen["target"].count("?"), 0, seen["target"])

    # -- headers --------------------------------------------------------------------------------

    def test_headers_valid_pass(self):
        seen = self.passes(self.url("/echo", host="headers.test"),
                           headers=[("X-Request-Id", "r1"), ("Accept", "application/json")])
        names = [k.lower() for k, _ in seen["headers"]]
        self.assertIn("x-request-id", names)

    def test_header_required(self):
        self.refused(self.url("/echo", host="headers.test"), "header_denied", "x-request-id",
                     "missing")

    def test_header_forbidden_any_case(self):
        r = self.refused(self.url("/echo", host="headers.test"), "header_denied", "cookie",
                         "forbidden", headers=[("X-Request-Id", "r1"), ("coOKie", "sid=SECRET")])
        self.assertNotIn(b"SECRET", r.body)

    def test_header_pattern(self):
        self.refused(self.url("/echo", host="headers.test"), "header_denied", "accept",
                     "pattern", headers=[("X-Request-Id", "r1"), ("Accept", "text/html")])
        # Every instance must match.
        self.refused(self.url("/echo", host="headers.test"), "header_denied", "accept",
                     "pattern", headers=[("X-Request-Id", "r1"), ("Accept", "application/json"),
                                         ("Accept", "text/html")])

    # -- body size ------------------------------------------------------------------------------

    def test_rule_body_limit_by_content_length(self):
        self.refused(self.url("/echo", host="small.test"), "body_too_large", "small", "1024",
                     method="POST", body=b"x" * 2000)
        seen = self.passes(self.url("/echo", host="small.test"), method="POST", body=b"y" * 1000)
        self.assertEqual(seen["body_length"], 1000)

    def test_rule_body_limit_chunked_not_forwarded_whole(self):
        m = marker()
        chunk = b"z" * 600
        body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(4)) + b"0\r\n\r\n"
        [r], _ = self.send_raw(self.request(
            "POST", self.url("/echo/" + m, host="small.test"),
            headers=[("Transfer-Encoding", "chunked")], body=body))
        self.assert_answer(r, "body_too_large")
        self.assert_audit(path="/echo/" + m, reason="body_too_large")  # the exchange is over
        self.assertTrue(all(not s["complete"] for s in self.origin.seen(m)),
                        "the origin received the oversized body whole")

    # -- JSON body ------------------------------------------------------------------------------

    def post_json(self, doc, expect=None, parameter=None, constraint=None):
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        headers = [("Content-Type", "application/json")]
        if expect is None:
            seen = self.passes(self.url("/echo", host="json.test"), method="POST",
                               headers=headers, body=body)
            self.assertEqual(seen["body_sha256"], hashlib.sha256(body).hexdigest())
            return seen
        return self.refused(self.url("/echo", host="json.test"), expect, parameter, constraint,
                            method="POST", headers=headers, body=body)

    def test_json_valid_passes_unchanged(self):
        self.post_json({"model": "small", "max_tokens": 100, "user": {"name": "ann"},
                        "tags": ["a"], "extra": {"deep": [1, 2, 3]}})

    def test_json_chunked_valid_passes(self):
        body = json.dumps({"model": "large"}).encode()
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        seen = self.passes(self.url("/echo", host="json.test"), method="POST",
                           headers=[("Transfer-Encoding", "chunked")], body=chunked)
        self.assertEqual(seen["body_sha256"], hashlib.sha256(body).hexdigest())

    def test_json_required(self):
        self.post_json({"max_tokens": 1}, "body_denied", "model", "missing")

    def test_json_enum(self):
        r = self.post_json({"model": "gigantic"}, "body_denied", "model", "enum")
        self.assertNotIn(b"gigantic", r.body)

    def test_json_type(self):
        self.post_json({"model": "small", "max_tokens": "100"}, "body_denied", "max_tokens",
                       "type")
        self.post_json({"model": "small", "max_tokens": 1.5}, "body_denied", "max_tokens",
                       "type")

    def test_json_bounds(self):
        self.post_json({"model": "small", "max_tokens": 5000}, "body_denied", "max_tokens",
                       "maximum")
        self.post_json({"model": "small", "max_tokens": 0}, "body_denied", "max_tokens",
                       "minimum")

    def test_json_pattern_and_length(self):
        self.post_json({"model": "small", "user": {"name": "Ann"}}, "body_denied", "user.name",
                       "pattern")
        self.post_json({"model": "small", "user": {"name": "abcdefghij"}}, "body_denied",
                       "user.name", "max_length")
        self.post_json({"model": "small", "tags": [1, 2, 3]}, "body_denied", "tags",
                       "max_length")

    def test_json_duplicate_keys_refused(self):
        self.post_json(b'{"model": "small", "model": "gigantic"}', "body_denied", "model",
                       "more than once")

    def test_json_escaped_key_is_the_same_key(self):
        self.post_json(b'{"mo\\u0064el": "gigantic"}', "body_denied", "model", "enum")

    def test_not_json(self):
        self.post_json(b"model=small", "body_denied", "body", "JSON")

    def test_json_body_over_rule_limit(self):
        doc = {"model": "small", "pad": "x" * (70 * 1024)}
        self.post_json(doc, "body_too_large", "json", "65536")


if __name__ == "__main__":
    unittest.main()
