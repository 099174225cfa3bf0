"""What a reload promises (docs/operations.md, "Changing the policy" and "CA rotation"):

- a request already in flight finishes under the policy it started with; the next one uses the
  new policy;
- `POST /reload` answers with what changed (rules and agents added, removed, modified);
- a new interception CA is used for new tunnels while open tunnels keep their leaf, and an
  expired CA is refused (the previous policy stays).

Every step waits on a condition (the origin saw the request, /policy reports the version),
never on a clock.
"""

import http.client
import json
import os
import ssl
import subprocess
import tempfile
import threading
import unittest

from harness import clients, env
from harness.base import marker
from harness.ops_admin import OpsAirlock, ops_policy
from harness.origin import OriginServer
from harness.proxy import origin_rule
from harness.tls_support import AirlockCA, AlpnOrigin, OriginCerts, TlsTunnel
from test_tls_interception import inspect_rule


def stop_checked(test, proxy):
    """SIGTERM, exit 0, no sanitizer report; then the temp files go."""
    try:
        rc = proxy.stop()
        test.assertEqual(rc, 0, proxy.stderr()[-3000:])
        test.assertEqual(proxy.sanitizer_reports(), [], proxy.stderr()[-4000:])
    finally:
        proxy.cleanup()


class ReloadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.origin = OriginServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.origin.stop()

    def start(self, policy):
        proxy = OpsAirlock(policy, name=self.id().rsplit(".", 1)[-1])
        proxy.start()
        self.addCleanup(stop_checked, self, proxy)
        return proxy

    def reload(self, proxy, policy):
        """Writes `policy`, POST /reload, waits until it is in force; returns the answer."""
        _, version = proxy.write_policy(policy, "inplace")
        r = proxy.admin_call("POST", "/reload")
        self.assertEqual(r.status, 200, r)
        proxy.wait_version(version)
        return r, version

    def test_request_in_flight_finishes_under_its_policy(self):
        p = self.origin.port
        before = ops_policy([origin_rule(p)])
        proxy = self.start(before)
        old_version = proxy.policy_version()
        m = marker()
        hold = int(env.t(3000))  # the origin answers after this long: the reload happens first
        result = {}

        def slow():
            result["r"] = clients.curl(self.origin.url("/slow/%d?%s" % (hold, m)),
                                       proxy_port=proxy.port, max_time=env.t(60))

        t = threading.Thread(target=slow)
        t.start()
        self.addCleanup(t.join, env.t(60))
        got = self.origin.wait_seen(m, env.t(10), complete=False)
        self.assertTrue(got, "the slow request never reached the origin")
        # The new policy refuses that very host: only the next request may feel it.
        after = ops_policy([origin_rule(p, name="other", hosts=["other.test"])])
        self.reload(proxy, after)
        refused = clients.curl(self.origin.url("/echo/next-%s" % m), proxy_port=proxy.port)
        self.assertEqual(refused.status, 403, refused)
        self.assertEqual(refused.header("X-Airlock-Reason"), "host_denied")
        t.join(env.t(60))
        self.assertFalse(t.is_alive(), "the request in flight never finished")
        r = result["r"]
        self.assertEqual(r.status, 200, r)
        rec = proxy.wait_audit(path="/slow/%d" % hold, client=lambda v: isinstance(v, str) and
                               v.endswith(":%d" % r.local_port))
        self.assertIsNotNone(rec, "no audit record for the request in flight")
        self.assertEqual((rec["decision"], rec["rule"]), ("allow", "origin"), rec)
        self.assertTrue(old_version.startswith(rec["policy_version"]) or
                        rec["policy_version"].startswith(old_version[:12]),
                        "recorded under %s, started under %s" % (rec["policy_version"],
                                                                 old_version))

    def test_idle_kept_alive_connection_gets_the_new_policy(self):
        """A connection that idled across a reload sends its next request under the new policy,
        not the one in force when its previous request ended."""
        p = self.origin.port
        proxy = self.start(ops_policy([origin_rule(p)]))
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=env.t(30))
        self.addCleanup(conn.close)
        conn.request("GET", self.origin.url("/echo/first-%s" % marker()))
        first = conn.getresponse()
        first.read()
        self.assertEqual(first.status, 200)
        self.assertFalse(first.will_close, "the proxy closed the connection after one request")
        self.reload(proxy, ops_policy([origin_rule(p, name="other", hosts=["other.test"])]))
        conn.request("GET", self.origin.url("/echo/second-%s" % marker()))
        second = conn.getresponse()
        second.read()
        self.assertEqual(second.status, 403)
        self.assertEqual(second.getheader("X-Airlock-Reason"), "host_denied")
        # Still the same connection: the refusal came on it, not on a new one.
        self.assertIsNotNone(conn.sock, "the refusal closed the kept-alive connection")

    def test_post_reload_says_what_changed(self):
        p = self.origin.port
        before = ops_policy(
            [origin_rule(p), origin_rule(p, name="keep", hosts=["keep.test"]),
             origin_rule(p, name="gone", hosts=["gone.test"])],
            agents={"default": {"rules": ["origin", "keep", "gone"]},
                    "steady": {"rules": ["keep"], "token_sha256": "0" * 64}})
        proxy = self.start(before)
        after = ops_policy(
            [origin_rule(p, methods=["GET"]), origin_rule(p, name="keep", hosts=["keep.test"]),
             origin_rule(p, name="fresh", hosts=["fresh.test"])],
            agents={"default": {"rules": ["origin", "keep", "fresh"]},
                    "steady": {"rules": ["keep"], "token_sha256": "0" * 64},
                    "coder": {"rules": ["fresh"], "token_sha256": "1" * 64}})
        r, version = self.reload(proxy, after)
        text = r.text()
        self.assertIn(version[:12], text)
        for part in ("rules added: fresh", "rules removed: gone", "rules modified: origin",
                     "agents added: coder", "agents modified: default"):
            self.assertIn(part, text, text)
        for unchanged in ("keep", "steady"):
            self.assertNotIn(unchanged, text, text)
        # The same policy again: nothing changed, and the answer does not claim otherwise.
        r, _ = self.reload(proxy, after)
        for word in ("added", "removed", "modified"):
            self.assertNotIn(word, r.text(), r.text())

    def test_a_refused_policy_is_quoted_printably(self):
        # The file's own text in an error (a key with a line break and a forged log prefix, a
        # value that is not UTF-8) is escaped: no forged line in the log or in `airlock check`'s
        # output, and GET /policy stays valid UTF-8 JSON.
        forged = "2030-01-01T00:00:00.000Z info policy: policy 0000deadbeef loaded (api)"
        proxy = self.start(ops_policy([origin_rule(self.origin.port)]))
        with open(proxy.config_path, "rb") as f:
            base = f.read()
        proxy.write_policy(base + b'blocklist: ["\xff\xfe.example"]\n"x\\n' + forged.encode() +
                           b'": 1\n', "inplace")
        r = proxy.admin_call("POST", "/reload")
        self.assertEqual(r.status, 422, r)
        self.assertIn("\\xff\\xfe.example", r.body.decode("utf-8"))
        self.assertIn("x\\n2030-01-01", r.body.decode("utf-8"))
        last_error = json.loads(proxy.admin_call("GET", "/policy").body)["last_error"]
        self.assertNotIn("\n2030", last_error)
        self.assertFalse([line for line in proxy.stderr().splitlines() if line.startswith(forged)])
        c = subprocess.run([os.environ["AIRLOCK_BIN"], "check", "--config", proxy.config_path],
                           capture_output=True, timeout=env.t(20))
        self.assertEqual(c.returncode, 1, c)
        self.assertFalse([line for line in c.stderr.splitlines() if line.startswith(forged.encode())])
        c.stderr.decode("utf-8")  # valid UTF-8


def expired_ca(directory):
    """A CA certificate and key whose validity ended in 2020 (openssl ca with explicit dates;
    `openssl req -days` takes no past)."""
    os.makedirs(directory)
    cnf = os.path.join(directory, "ca.cnf")
    with open(cnf, "w") as f:
        f.write("[ca]\ndefault_ca = d\n[d]\ndatabase = %s/index.txt\nnew_certs_dir = %s\n"
                "serial = %s/serial\ndefault_md = sha256\npolicy = p\nx509_extensions = v3\n"
                "[p]\ncommonName = supplied\n[v3]\nbasicConstraints = critical,CA:TRUE\n"
                "keyUsage = critical,keyCertSign,cRLSign\nsubjectKeyIdentifier = hash\n"
                % (directory, directory, directory))
    open(os.path.join(directory, "index.txt"), "w").close()
    with open(os.path.join(directory, "serial"), "w") as f:
        f.write("01\n")
    key, csr, crt = (os.path.join(directory, n) for n in ("ca.key", "ca.csr", "ca.crt"))

    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)

    run("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", key, "-out", csr, "-subj", "/CN=expired itest CA")
    run("ca", "-batch", "-config", cnf, "-selfsign", "-keyfile", key, "-in", csr, "-out", crt,
        "-startdate", "20200101000000Z", "-enddate", "20200201000000Z", "-notext")
    os.chmod(key, 0o600)
    return crt, key


class CaRotationTest(unittest.TestCase):
    """docs/operations.md, CA rotation: point the policy at the new files and reload."""

    @classmethod
    def setUpClass(cls):
        cls.certs = OriginCerts()
        cls.good = AlpnOrigin(OriginCerts.server_context(cls.certs.good)).start()
        cls.old_ca = AirlockCA()
        cls.new_ca = AirlockCA()

    @classmethod
    def tearDownClass(cls):
        cls.good.stop()
        for c in (cls.certs, cls.old_ca, cls.new_ca):
            c.cleanup()

    def policy(self, ca_cert, ca_key):
        return ops_policy([inspect_rule(self.good.port)],
                          tls={"ca_cert": ca_cert, "ca_key": ca_key,
                               "upstream_ca": self.certs.ca_cert})

    def tunnel(self, proxy, cafile):
        t = TlsTunnel(proxy.port, "insp.test:%d" % self.good.port, cafile)
        self.addCleanup(t.close)
        self.assertIsNotNone(t.tls, "no TLS session trusting %s" % cafile)
        return t

    def get(self, t, m):
        t.send("GET /echo/allowed-%s HTTP/1.1\r\nHost: insp.test\r\n\r\n" % m)
        r = t.read_responses(1)
        self.assertEqual(len(r), 1, bytes(t.buffer[-500:]))
        self.assertEqual(r[0].status, 200, r[0])

    def test_new_tunnels_get_the_new_ca_open_ones_keep_theirs(self):
        proxy = OpsAirlock(self.policy(self.old_ca.cert, self.old_ca.key), name="ca-rotation")
        proxy.start()
        self.addCleanup(stop_checked, self, proxy)
        old_tunnel = self.tunnel(proxy, self.old_ca.cert)
        self.get(old_tunnel, marker())
        old_leaf = old_tunnel.tls.getpeercert(binary_form=True)

        _, version = proxy.write_policy(self.policy(self.new_ca.cert, self.new_ca.key),
                                        "inplace")
        r = proxy.admin_call("POST", "/reload")
        self.assertEqual(r.status, 200, r)
        proxy.wait_version(version)

        # A new tunnel: a leaf from the new CA (trusting only the new CA works)...
        new_tunnel = self.tunnel(proxy, self.new_ca.cert)
        self.get(new_tunnel, marker())
        # ...and not one from the old CA: a client trusting only the old one refuses it.
        with self.assertRaises(ssl.SSLCertVerificationError):
            TlsTunnel(proxy.port, "insp.test:%d" % self.good.port, self.old_ca.cert)
        # The tunnel opened before the reload still works, with the leaf it had.
        self.get(old_tunnel, marker())
        self.assertEqual(old_tunnel.tls.getpeercert(binary_form=True), old_leaf)

    def test_expired_ca_refused_on_reload(self):
        proxy = OpsAirlock(self.policy(self.old_ca.cert, self.old_ca.key), name="ca-expired")
        proxy.start()
        self.addCleanup(stop_checked, self, proxy)
        before = proxy.policy_version()
        with tempfile.TemporaryDirectory(prefix="airlock-itest-expired-") as tmp:
            crt, key = expired_ca(os.path.join(tmp, "ca"))
            proxy.write_policy(self.policy(crt, key), "inplace")
            r = proxy.admin_call("POST", "/reload")
            self.assertEqual(r.status, 422, r)
            self.assertIn(crt, r.text())
            self.assertRegex(r.text(), "expired on 2020-02-01")
        status = proxy.policy_status()
        self.assertEqual(status["version"], before, "an expired CA replaced the policy")
        self.assertIsNotNone(status["last_error"])
        # Tunnels still get leaves from the CA in force.
        self.get(self.tunnel(proxy, self.old_ca.cert), marker())


if __name__ == "__main__":
    unittest.main()
