"""The address guard: loopback, private, link-local, CGNAT, ULA, metadata and IPv4-in-IPv6
destinations are refused (403 destination_ip_prohibited) in every spelling, even when a rule
names the host, unless a CIDR exception allows the address. The refusal happens before any
connect; the process runs in its own network namespace (harness/netns.py) so that even a
broken proxy could not send a packet off this machine."""

import socket
import unittest

from harness import netns
from harness.base import ProxyTestCase, marker
from harness.proxy import make_policy, origin_rule

# Canonical forms for the rule's host list (the proxy normalises the request's host first).
CANONICAL = ["127.0.0.1", "::1", "169.254.169.254", "10.0.0.1", "100.64.0.1", "fd00:ec2::254",
             "64:ff9b::7f00:1", "2002:7f00:1::", "192.168.1.1", "172.16.0.1", "0.0.0.0",
             "127.0.0.2", "::"]

# (spelling in the URL, why it is special). Loopback spellings point at the origin's port,
# so a guard failure would show up as a request at the origin.
LOOPBACK_SPELLINGS = ["127.0.0.1", "127.1", "0x7f000001", "2130706433", "0177.0.0.1",
                      "0x7f.0.0.1", "127.0.1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]",
                      "[::1]", "[0:0:0:0:0:0:0:1]", "127.0.0.2"]
OTHER_SPECIAL = ["169.254.169.254", "10.0.0.1", "100.64.0.1", "[fd00:ec2::254]",
                 "[64:ff9b::7f00:1]", "[2002:7f00:1::]", "192.168.1.1", "172.16.0.1",
                 "0.0.0.0", "[::]", "0", "0xa000001", "[::ffff:10.0.0.1]",
                 "[::ffff:169.254.169.254]"]


class AddressGuardTest(ProxyTestCase):
    adversarial = True

    @classmethod
    def policy(cls):
        p = cls.origin.port
        rules = [
            origin_rule(p),
            # A rule that names every special address but has no CIDR exception.
            {"name": "literals", "hosts": CANONICAL, "ports": [p, 80],
             "methods": ["GET", "HEAD"], "paths": ["^/.*$"]},
            {"name": "literals-tunnel", "hosts": CANONICAL, "ports": [8443]},
            # A name pinned to loopback without an exception.
            {"name": "pinned", "hosts": ["pinned.test"], "addresses": ["127.0.0.1"],
             "ports": [p], "methods": ["GET"], "paths": ["^/.*$"]},
            # A name the resolver (here /etc/hosts) maps to loopback.
            {"name": "resolved", "hosts": ["localhost"], "ports": [p], "methods": ["GET"],
             "paths": ["^/.*$"]},
            # A name pinned to a private address.
            {"name": "pinned-private", "hosts": ["private.test"], "addresses": ["10.1.2.3"],
             "ports": [80], "methods": ["GET"], "paths": ["^/.*$"]},
        ]
        return make_policy(rules)

    def refused(self, url, method="GET", msg=""):
        m = marker()
        url = url + "/" + m if url.count("/") == 2 else url.rstrip("/") + "/" + m
        host = url.split("://", 1)[1].split("/", 1)[0]
        [r], _ = self.send_raw(self.request(method, url, host=host))
        self.assert_answer(r, "destination_ip_prohibited", msg="%s %s" % (url, msg))
        rec = self.assert_audit(path=lambda p: p is not None and p.endswith("/" + m))
        self.assertEqual(self.origin.seen(m), [], "the origin received %s" % url)
        self.assertEqual(rec["reason"], "destination_ip_prohibited", rec)
        # A guard refusal is a security decision; the proxy records it as deny or error.
        self.assertIn(rec["decision"], ("deny", "error"), rec)
        self.assertIn(rec["upstream"], ("", None), "audit says it connected: %r" % rec)
        return r

    def test_loopback_spellings_refused(self):
        before = self.origin.accepted
        for host in LOOPBACK_SPELLINGS:
            with self.subTest(host=host):
                self.refused("http://%s:%d/" % (host, self.origin.port))
        self.assertEqual(self.origin.accepted, before, "the origin was connected to")

    def test_other_special_addresses_refused(self):
        netns.require_isolation(self)
        for host in OTHER_SPECIAL:
            with self.subTest(host=host):
                self.refused("http://%s/" % host)

    def test_connect_to_special_addresses_refused(self):
        netns.require_isolation(self)
        for host in ["127.1", "[::1]", "169.254.169.254", "10.0.0.1", "[::ffff:127.0.0.1]",
                     "2130706433", "[64:ff9b::7f00:1]"]:
            with self.subTest(host=host):
                [r], _ = self.send_raw(b"CONNECT %s:8443 HTTP/1.1\r\nHost: %s:8443\r\n\r\n"
                                       % (host.encode(), host.encode()))
                self.assert_answer(r, "destination_ip_prohibited", msg=host)

    def test_name_pinned_to_loopback_refused(self):
        before = self.origin.accepted
        self.refused(self.url("/echo", host="pinned.test"))
        self.assertEqual(self.origin.accepted, before)

    def test_name_resolving_to_loopback_refused(self):
        netns.require_isolation(self)  # resolving may query DNS: keep it off the network
        before = self.origin.accepted
        self.refused(self.url("/echo", host="localhost"))
        self.assertEqual(self.origin.accepted, before)

    def test_name_pinned_to_private_refused(self):
        netns.require_isolation(self)
        self.refused("http://private.test/")

    def test_metadata_path_refused(self):
        netns.require_isolation(self)
        self.refused("http://169.254.169.254/latest/meta-data")


class AllowCidrTest(ProxyTestCase):
    """A policy-wide CIDR exception lets a pinned loopback name through; the proxy's own
    listening port stays refused whatever the exceptions say (loop prevention)."""

    @classmethod
    def policy(cls):
        # Choose the proxy's port up front so a rule can name it.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            cls.own_port = s.getsockname()[1]
        p = cls.origin.port
        return make_policy(
            [{"name": "loop", "hosts": ["127.0.0.1", "loop.test"], "addresses": ["127.0.0.1"],
              "ports": [p, cls.own_port], "methods": ["GET"], "paths": ["^/.*$"]}],
            network={"block_private": True, "allow_cidrs": ["127.0.0.0/8"]},
            listen={"proxy": "127.0.0.1:%d" % cls.own_port, "admin": "off"})

    def test_network_allow_cidrs_allows_loopback(self):
        r = self.curl(self.url("/echo/ok", host="loop.test"))
        self.assertEqual(r.status, 200, r)
        r = self.curl(self.url("/echo/ok2", host="127.0.0.1"))
        self.assertEqual(r.status, 200, r)

    def test_proxy_itself_refused(self):
        self.assertEqual(self.proxy.port, self.own_port)
        for host in ("127.0.0.1", "loop.test"):
            with self.subTest(host=host):
                m = marker()
                url = "http://%s:%d/%s" % (host, self.own_port, m)
                [r], _ = self.send_raw(self.request("GET", url))
                self.assert_answer(r, "destination_ip_prohibited", msg=url)
        self.assertTrue(self.proxy.alive())


if __name__ == "__main__":
    unittest.main()
