"""Plain HTTP inside a CONNECT tunnel (issue 17, item 1). Node's undici `EnvHttpProxyAgent`
sends `CONNECT host:80` for http:// URLs and speaks plain HTTP/1.1 inside. Airlock serves such a
tunnel (under an inspecting rule, and under an opaque rule to a host name) as plain HTTP
requests, each decided and recorded on its own as scheme http.

The client is Node's own fetch (undici) with an undici Agent whose connector opens the socket
through `CONNECT host:port`, as undici's ProxyAgent does (`require('undici')` is not importable
from Node itself, and the tests reach nothing but loopback). An opaque tunnel to an IP literal
still relays whatever it carries."""

import json
import subprocess
import time
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
from harness.origin import RawOrigin
from harness.proxy import make_policy, tunnel_rule
from harness.tls_support import AirlockCA

# argv: proxy port, then the URLs to fetch in turn through one undici Agent (keep-alive: later
# requests to the same origin reuse the tunnel). Prints one JSON list of results.
NODE_FETCH = r"""
const net = require('net');
const [proxyPort, ...urls] = process.argv.slice(1);
function connectThroughProxy(opts, cb) {
  const port = opts.port || (opts.protocol === 'https:' ? 443 : 80);
  const sock = net.connect(+proxyPort, '127.0.0.1');
  let head = '';
  const fail = (e) => cb(e);
  sock.once('error', fail);
  sock.on('connect', () => sock.write(
      `CONNECT ${opts.hostname}:${port} HTTP/1.1\r\nHost: ${opts.hostname}:${port}\r\n\r\n`));
  const onData = (d) => {
    head += d.toString('latin1');
    if (head.indexOf('\r\n\r\n') < 0) return;
    sock.removeListener('data', onData);
    sock.removeListener('error', fail);
    sock.pause();
    if (!/^HTTP\/1\.[01] 200/.test(head)) {
      sock.destroy();
      return cb(new Error('CONNECT answered ' + head.split('\r\n')[0]));
    }
    cb(null, sock);
  };
  sock.on('data', onData);
}
(async () => {
  // fetch's undici Agent class is reachable once fetch has made its global dispatcher.
  try { await fetch('http://127.0.0.1:1/'); } catch (e) {}
  const Agent = globalThis[Symbol.for('undici.globalDispatcher.1')].constructor;
  const dispatcher = new Agent({ connect: connectThroughProxy });
  const out = [];
  for (const u of urls) {
    try {
      const r = await fetch(u, { dispatcher });
      out.push({ status: r.status, body: await r.text(),
                 proxy_status: r.headers.get('proxy-status') });
    } catch (e) {
      out.push({ error: String(e.cause || e) });
    }
  }
  console.log(JSON.stringify(out));
  await dispatcher.close();
})();
"""


def node_fetch(proxy_port, *urls):
    out = subprocess.run(["node", "-e", NODE_FETCH, str(proxy_port), *urls],
                         capture_output=True, text=True, timeout=env.t(30))
    if out.returncode != 0:
        raise AssertionError("node failed (%d): %s %s" % (out.returncode, out.stdout,
                                                          out.stderr))
    return json.loads(out.stdout.strip().splitlines()[-1])


class PlainHttpInTunnelTest(ProxyTestCase):
    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.sink = RawOrigin(RawOrigin.record_only).start()

    @classmethod
    def extra_teardown(cls):
        cls.sink.stop()
        cls.ica.cleanup()

    @classmethod
    def policy(cls):
        port = cls.origin.port
        return make_policy([
            tunnel_rule(port, name="inspected", hosts=["insp.test"], inspect=True,
                        methods=["GET"], paths=[r"^/echo/allowed.*"]),
            tunnel_rule(port, name="opaque", hosts=["opaque.test"]),
            tunnel_rule(cls.sink.port, name="sink-ip", hosts=["127.0.0.1"], addresses=None),
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key})

    def http_url(self, host, path):
        return "http://%s:%d%s" % (host, self.origin.port, path)

    def records_for(self, mark, path_marker):
        return [r for r in self.proxy.audit()[mark:] if path_marker in r.get("path", "")]

    def test_node_fetch_through_inspected_rule_each_request_decided(self):
        m = marker()
        mark = self.proxy.audit_mark()
        allowed = self.http_url("insp.test", "/echo/allowed-%s" % m)
        denied = self.http_url("insp.test", "/echo/denied-%s" % m)
        got = node_fetch(self.proxy.port, allowed, denied, allowed + "-again")
        self.assertEqual(got[0].get("status"), 200, got)
        echo = json.loads(got[0]["body"])
        self.assertEqual(echo["path"], "/echo/allowed-%s" % m)
        # The origin saw a plain request for the CONNECT host (Host from the tunnel target).
        headers = {k.lower(): v for k, v in echo["headers"]}
        self.assertEqual(headers["host"], "insp.test:%d" % self.origin.port)
        # The denied path is refused on its own; the tunnel goes on.
        self.assertEqual(got[1].get("status"), 403, got)
        self.assertIn("path_denied", got[1].get("body", ""), got)
        self.assertEqual(got[2].get("status"), 200, got)
        allowed_rec = self.proxy.wait_audit(after=mark, path="/echo/allowed-%s" % m)
        self.assertIsNotNone(allowed_rec, self.proxy.audit()[mark:])
        self.assertEqual((allowed_rec["scheme"], allowed_rec["host"], allowed_rec["decision"],
                          allowed_rec["rule"]), ("http", "insp.test", "allow", "inspected"))
        denied_rec = self.proxy.wait_audit(after=mark, path="/echo/denied-%s" % m)
        self.assertIsNotNone(denied_rec)
        self.assertEqual((denied_rec["scheme"], denied_rec["decision"], denied_rec["reason"],
                          denied_rec["status"]), ("http", "deny", "path_denied", 403))
        self.assertIsNotNone(self.proxy.wait_audit(after=mark,
                                                   path="/echo/allowed-%s-again" % m))
        # One record per request; the tunnel that carried them is recorded by them.
        self.assertEqual(len(self.records_for(mark, m)), 3, self.proxy.audit()[mark:])
        self.assertEqual([r for r in self.proxy.audit()[mark:]
                          if r["scheme"] == "connect" and r["host"] == "insp.test"], [])

    def test_node_fetch_through_opaque_rule(self):
        m = marker()
        mark = self.proxy.audit_mark()
        got = node_fetch(self.proxy.port, self.http_url("opaque.test", "/echo/%s" % m))
        self.assertEqual(got[0].get("status"), 200, got)
        self.assertEqual(json.loads(got[0]["body"])["path"], "/echo/%s" % m)
        rec = self.proxy.wait_audit(after=mark, path="/echo/%s" % m)
        self.assertIsNotNone(rec, self.proxy.audit()[mark:])
        self.assertEqual((rec["scheme"], rec["host"], rec["rule"], rec["status"]),
                         ("http", "opaque.test", "opaque", 200))

    def test_opaque_tunnel_to_ip_literal_still_relays_plain_text(self):
        before = len(self.sink.connections)
        c = self.raw()
        self.addCleanup(c.close)
        c.send("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % self.sink.port)
        r = c.read_response(tunnel=True)
        self.assertEqual(r.status, 200, r)
        data = ("GET /%s HTTP/1.1\r\nHost: x\r\n\r\n" % marker()).encode()
        c.send(data)
        end = time.monotonic() + env.t(5)
        while time.monotonic() < end:
            got = b"".join(bytes(x["data"]) for x in self.sink.connections[before:])
            if got == data:
                break
            time.sleep(0.05)
        got = b"".join(bytes(x["data"]) for x in self.sink.connections[before:])
        self.assertEqual(got, data)


if __name__ == "__main__":
    unittest.main()
