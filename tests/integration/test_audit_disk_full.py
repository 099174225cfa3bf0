"""The audit log's disk fills up (a small tmpfs in the proxy's own mount namespace, as
`unshare -Urm` gives it): the proxy must not go on serving what it cannot record. While the log
cannot be written, new requests are refused `503 audit_unavailable` with an RFC 9209
Proxy-Status, /readyz answers 503 with the reason, and /metrics says so; no line of the file is
ever a record cut in the middle (or glued to the next one). Once space comes back, service and
readiness return by themselves and every record, including the refusals', is in the file,
whole. The same holds for a new stream on an HTTP/2 connection opened before the disk filled.
With `audit.on_failure: continue` requests go on being served and their records wait."""

import errno
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import capabilities, clients, env
from harness.base import marker, parse_proxy_status
from harness.h2_client import H2Tunnel
from harness.h2_origin import H2Origin
from harness.ops_admin import Metrics, admin_call, ops_policy
from harness.origin import OriginServer
from harness.proxy import Airlock, REASONS, origin_rule, read_audit
from harness.tls_support import AirlockCA, OriginCerts

TMPFS_SIZE = "64k"


class TmpfsAuditAirlock(Airlock):
    """A proxy whose audit file lies on a tmpfs of TMPFS_SIZE mounted in a mount namespace of
    its own; the test reaches that tmpfs through /proc/PID/root."""

    def __init__(self, policy, mount_dir, **kw):
        self.mount_dir = mount_dir
        policy = dict(policy)
        policy["audit"] = dict(policy.get("audit", {}), path=os.path.join(mount_dir, "audit.jsonl"))
        super().__init__(policy, **kw)

    def command(self):
        return ["unshare", "-Urm", "sh", "-c",
                'mount -t tmpfs -o size=%s tmpfs "$0" && exec "$@"' % TMPFS_SIZE,
                self.mount_dir] + super().command()

    def start(self, timeout=None):
        super().start(timeout)
        # `exec` kept the pid: the proxy's view of the mount.
        self.volume = "/proc/%d/root%s" % (self.pid, self.mount_dir)
        self.audit_path = os.path.join(self.volume, "audit.jsonl")
        return self

    def fill_volume(self):
        """Writes a filler file until the tmpfs is full."""
        path = os.path.join(self.volume, "filler")
        with open(path, "wb", buffering=0) as f:
            for size in (65536, 4096, 512, 64, 1):
                try:
                    while True:
                        f.write(b"\0" * size)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
        return path


class AuditDiskFullBase(unittest.TestCase):
    """Helpers; no tests of its own."""
    on_failure = None  # the default: deny

    def setUp(self):
        capabilities.require(self, "userns")
        if shutil.which("unshare") is None:
            self.skipTest("lacks unshare")
        self.origin = OriginServer().start()
        self.addCleanup(self.origin.stop)
        self.mount_dir = tempfile.mkdtemp(prefix="airlock-itest-auditfs-")
        self.addCleanup(shutil.rmtree, self.mount_dir, True)
        policy = self.make_policy()
        if self.on_failure:
            policy["audit"] = {"on_failure": self.on_failure}
        self.proxy = TmpfsAuditAirlock(policy, self.mount_dir)
        try:
            self.proxy.start()
        except Exception as e:  # noqa: a machine whose user namespaces cannot mount tmpfs
            out = subprocess.run(["unshare", "-Urm", "mount", "-t", "tmpfs", "tmpfs", "/mnt"],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                self.skipTest("lacks a tmpfs mount in a user namespace: %s" % out.stderr.strip())
            raise e
        self.addCleanup(self.proxy.cleanup)

    def make_policy(self):
        return ops_policy([origin_rule(self.origin.port)])

    def get(self, path):
        """One GET through the proxy on a connection of its own: (status, reason, response)."""
        client = clients.RawClient(self.proxy.port)
        try:
            client.send(("GET %s HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n"
                         % self.origin.url(path)).encode())
            r = client.read_responses(1)[0]
        finally:
            client.close()
        return r.status, r.header("X-Airlock-Reason") or "", r

    def admin(self, path):
        return admin_call(self.proxy.admin, "GET", path)

    def metrics(self):
        return Metrics(self.admin("/metrics").text())

    def wait_until(self, what, predicate, timeout=None):
        deadline = time.monotonic() + (env.t(10) if timeout is None else timeout)
        while True:
            value = predicate()
            if value or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertTrue(value, "%s did not happen in time; stderr:\n%s"
                        % (what, self.proxy.stderr()[-3000:]))
        return value

    def assert_whole_lines(self):
        with open(self.proxy.audit_path, "rb") as f:
            data = f.read()
        if data:
            self.assertTrue(data.endswith(b"\n"), "the audit file ends in a cut record: %r"
                            % data[-200:])
        bad = [r for r in read_audit(self.proxy.audit_path) if "_unparsable" in r]
        self.assertEqual(bad, [], "unparsable audit lines")
        return read_audit(self.proxy.audit_path)

    def fill_until_refused(self, tag):
        """Fills the volume, then sends requests until one is refused; returns the paths
        answered 200 and those refused."""
        filler = self.proxy.fill_volume()
        self.addCleanup(lambda: os.path.exists(filler) and os.unlink(filler))
        served, refused = [], []

        def refused_once():
            path = "/echo/%s-%d" % (tag, len(served) + len(refused))
            status, reason, r = self.get(path)
            if status == 200:
                served.append(path)
                return False
            refused.append((path, status, reason, r))
            return True

        self.wait_until("a request refused once the audit disk is full", refused_once)
        return filler, served, refused


class AuditDiskFullTest(AuditDiskFullBase):
    def test_full_disk_refuses_requests_until_space_returns(self):
        tag = marker()
        self.assertEqual(self.get("/echo/%s-first" % tag)[0], 200)
        filler, served, refused = self.fill_until_refused(tag)
        path, status, reason, r = refused[0]
        self.assertEqual((status, reason), (503, "audit_unavailable"), r)
        self.assertEqual(REASONS["audit_unavailable"], (503, "proxy_internal_response"))
        self.assertIn("error=proxy_internal_response", r.header("Proxy-Status") or "")
        self.assertIn(b"audit log", r.body)
        ready = self.admin("/readyz")
        self.assertEqual(ready.status, 503)
        self.assertIn("audit log", ready.text())
        m = self.metrics()
        self.assertEqual(m.value("airlock_audit_log_writable"), 0)
        self.assertGreaterEqual(m.value("airlock_audit_write_errors_total"), 1)
        self.assertTrue(m.has("airlock_audit_records_dropped_total"))
        # Still refused (the retries every 100 ms find no room), and no line is cut.
        status, reason, _ = self.get("/echo/%s-again" % tag)
        self.assertEqual((status, reason), (503, "audit_unavailable"))
        self.assert_whole_lines()

        os.unlink(filler)
        self.wait_until("readiness back after space returned",
                        lambda: self.admin("/readyz").status == 200)
        status, _, _ = self.get("/echo/%s-after" % tag)
        self.assertEqual(status, 200)
        self.assertEqual(self.metrics().value("airlock_audit_log_writable"), 1)
        # Every exchange has its one record, whole: those served before the refusals (they
        # waited in memory), the refusals, and the first one after.
        want = {"/echo/%s-first" % tag, "/echo/%s-again" % tag, "/echo/%s-after" % tag}
        want |= set(served) | {p for p, _, _, _ in refused}
        self.wait_until("every record written", lambda: want <= {
            rec.get("path") for rec in read_audit(self.proxy.audit_path)})
        records = [rec for rec in self.assert_whole_lines() if tag in rec.get("path", "")]
        self.assertEqual(sorted(rec["path"] for rec in records), sorted(want))
        for rec in records:
            expected = "audit_unavailable" if rec["status"] == 503 else "ok"
            self.assertEqual(rec["reason"], expected, rec)
        self.assertEqual(self.metrics().value("airlock_audit_records_dropped_total"), 0)
        stderr = self.proxy.stderr()
        self.assertEqual(stderr.count("writing the audit log failed"), 1, stderr[-3000:])
        self.assertEqual(stderr.count("writing the audit log works again"), 1, stderr[-3000:])


class AuditDiskFullH2Test(AuditDiskFullBase):
    """An HTTP/2 client's connection stays open while the disk fills: each new stream is a
    request of its own and is refused as an HTTP/1.1 request is (h2_stream.cpp)."""
    NAME = "h2audit.test"

    def setUp(self):
        self.ica = AirlockCA()
        self.addCleanup(self.ica.cleanup)
        self.certs = OriginCerts(names=(self.NAME,))
        self.addCleanup(self.certs.cleanup)
        self.h2o = H2Origin(*self.certs.good)
        self.addCleanup(self.h2o.stop)
        super().setUp()

    def make_policy(self):
        inspected = {"name": "h2origin", "hosts": [self.NAME], "addresses": ["127.0.0.1"],
                     "allow_cidrs": ["127.0.0.1/32"], "ports": [self.h2o.port],
                     "inspect": True, "methods": ["GET"]}
        return ops_policy([origin_rule(self.origin.port), inspected],
                          tls={"ca_cert": self.ica.cert, "ca_key": self.ica.key,
                               "upstream_ca": self.certs.ca_cert})

    def h2_get(self, tunnel, path):
        (r,) = tunnel.wait(tunnel.request(path))
        self.assertTrue(r["ended"], r)
        return r

    def test_new_streams_refused_until_space_returns(self):
        tag = marker()
        tunnel = H2Tunnel(self.proxy.port, "%s:%d" % (self.NAME, self.h2o.port), self.ica.cert)
        self.addCleanup(tunnel.close)
        self.assertEqual(tunnel.alpn, "h2")
        before, during, after = ("/h2/%s-%s" % (tag, w) for w in ("before", "during", "after"))
        self.assertEqual(self.h2_get(tunnel, before)["headers"][":status"], "200")

        filler, _, _ = self.fill_until_refused(tag)  # HTTP/1.1 requests find the log unwritable
        r = self.h2_get(tunnel, during)
        self.assertEqual(r["headers"][":status"], "503", r)
        self.assertEqual(r["headers"].get("x-airlock-reason"), "audit_unavailable", r)
        self.assertEqual(parse_proxy_status(r["headers"].get("proxy-status", ""))["error"],
                         "proxy_internal_response", r)
        self.assertIn(b"audit log", r["body"])
        self.assertEqual(self.h2o.outcomes(during), [], "a refused stream reached the origin")

        os.unlink(filler)
        self.wait_until("readiness back after space returned",
                        lambda: self.admin("/readyz").status == 200)
        self.assertEqual(self.h2_get(tunnel, after)["headers"][":status"], "200")
        self.wait_until("the three streams' records written", lambda: {before, during, after} <= {
            rec.get("path") for rec in read_audit(self.proxy.audit_path)})
        records = {rec["path"]: rec for rec in self.assert_whole_lines()
                   if rec.get("path") in (before, during, after)}
        self.assertEqual(len(records), 3, records)
        outcomes = [(records[p]["status"], records[p]["reason"]) for p in (before, during, after)]
        self.assertEqual(outcomes, [(200, "ok"), (503, "audit_unavailable"), (200, "ok")], records)


class AuditDiskFullContinueTest(AuditDiskFullBase):
    on_failure = "continue"

    def test_continue_serves_and_records_wait(self):
        tag = marker()
        filler = self.proxy.fill_volume()
        self.wait_until("the metric to show the audit log unwritable", lambda: (
            self.get("/echo/%s-%d" % (tag, time.monotonic_ns()))[0] == 200
            and self.metrics().value("airlock_audit_log_writable") == 0))
        status, _, _ = self.get("/echo/%s-during" % tag)
        self.assertEqual(status, 200)
        self.assertEqual(self.admin("/readyz").status, 200)
        self.assert_whole_lines()
        os.unlink(filler)
        self.wait_until("the record served while full written", lambda: any(
            rec.get("path") == "/echo/%s-during" % tag
            for rec in read_audit(self.proxy.audit_path)))
        self.assert_whole_lines()
        self.assertEqual(self.metrics().value("airlock_audit_log_writable"), 1)


if __name__ == "__main__":
    unittest.main()
