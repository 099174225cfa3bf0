"""The admin port against a web page the operator's browser has open (docs/operations.md "The
admin listener", docs/threat-model.md): a request whose Host does not name the listener (DNS
rebinding: the page's own name re-pointed at 127.0.0.1) is 421, reads included; a browser's
request from another site or from a page element (<img src=.../events>) is 403 and takes no
/events slot; a refused POST leaves exactly one operator audit record, outcome `refused`.
Probes, scrapes and curl (no Fetch Metadata, Host = the address they connected to, localhost, or
a name in listen.admin_hosts) are served as before. The policy has no `operators:`, the case
where a loopback peer acts as operator `local`."""

import http.client
import json
import http.server
import shutil
import socket
import threading
import time
import unittest

from harness import env
from harness.base import ProxyTestCase
from harness.proxy import make_policy, origin_rule

EVENT_SLOTS = 8  # telemetry/event_hub.hpp default_max_subscribers


class AdminGateCase(ProxyTestCase):
    @classmethod
    def policy(cls):
        p = make_policy([origin_rule(cls.origin.port, name="open")],
                        agents={"default": {"rules": ["open"]}})
        p["listen"]["admin"] = "127.0.0.1:0"
        p["listen"]["admin_hosts"] = ["Airlock-Admin.Internal"]
        return p

    @property
    def admin_port(self):
        return int(self.proxy.admin.rsplit(":", 1)[1])

    def admin(self, method, path, headers=None, body=None):
        """(status, body) of one request with exactly these headers (Host included)."""
        host, _, port = self.proxy.admin.rpartition(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=env.t(10))
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for k, v in (headers or {}).items():
                conn.putheader(k, v)
            if method == "POST":
                conn.putheader("Content-Length", str(len(body or b"")))
            conn.endheaders(body)
            r = conn.getresponse()
            if "event-stream" in (r.getheader("Content-Type") or ""):
                return r.status, ""  # a live stream: it never ends
            return r.status, r.read().decode()
        finally:
            conn.close()

    def stopped(self):
        _, body = self.admin("GET", "/agents", {"Host": self.proxy.admin})
        return [a["name"] for a in json.loads(body)["agents"] if a["stopped"]]

    def records(self, path, after):
        return [r for r in self.proxy.audit()[after:]
                if r.get("type") == "operator" and r.get("path") == path]

    def settle(self, after):
        """Waits for a known later record, so every record of what came before is written."""
        status, _ = self.admin("POST", "/agents/settle/stop",
                               {"Host": "rebind.test", "Origin": "http://rebind.test"})
        self.assertEqual(status, 421)
        self.assertIsNotNone(self.proxy.wait_audit(timeout=env.t(10), after=after,
                                                   path="/agents/settle/stop"))


class RebindingTest(AdminGateCase):
    def test_foreign_host_is_misdirected_and_the_post_recorded_once(self):
        port = self.admin_port
        rebind = {"Host": "rebind.test:%d" % port, "Origin": "http://rebind.test:%d" % port,
                  "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors",
                  "Sec-Fetch-Dest": "empty"}
        for path in ("/approvals", "/agents", "/events", "/metrics"):
            with self.subTest(path=path):
                status, body = self.admin("GET", path, rebind)
                self.assertEqual(status, 421, body)
                self.assertIn("is not an address of this admin listener", body)
        mark = self.proxy.audit_mark()
        status, body = self.admin("POST", "/agents/default/stop", rebind)
        self.assertEqual(status, 421, body)
        self.assertEqual(self.stopped(), [])
        self.settle(mark)
        [rec] = self.records("/agents/default/stop", mark)
        self.assertEqual((rec["action"], rec["by"], rec["outcome"]), ("stop", "", "refused"))
        self.assertIn("Host rebind.test:%d is not" % port, rec["detail"])
        self.assertTrue(rec["client"].startswith("127.0.0.1:"), rec)
        self.assertIn("refused: Host rebind.test", self.proxy.stderr())

    def test_the_listeners_names_are_served(self):
        port = self.admin_port
        for host in ("127.0.0.1:%d" % port, "127.0.0.1", "localhost:%d" % port,
                     "localhost:19464", "airlock-admin.internal:%d" % port):
            for path in ("/healthz", "/readyz", "/metrics"):
                with self.subTest(host=host, path=path):
                    status, body = self.admin("GET", path, {"Host": host})
                    self.assertEqual(status, 200, body)
        # The console opened as http://localhost:PORT/console acts same-origin.
        here = "localhost:%d" % port
        status, body = self.admin("POST", "/agents/default/stop",
                                  {"Host": here, "Origin": "http://" + here,
                                   "Sec-Fetch-Site": "same-origin"})
        self.assertEqual(status, 200, body)
        status, body = self.admin("POST", "/agents/default/resume", {"Host": here})
        self.assertEqual(status, 200, body)


class CrossSiteTest(AdminGateCase):
    def test_cross_site_post_leaves_one_refused_record(self):
        here = self.proxy.admin
        for path, headers in (
                ("/agents/default/stop", {"Origin": "http://evil.example"}),
                ("/agents/default/resume", {"Sec-Fetch-Site": "cross-site"}),
                ("/reload", {"Origin": "http://127.0.0.1:8000", "Sec-Fetch-Site": "same-site"})):
            with self.subTest(path=path):
                mark = self.proxy.audit_mark()
                status, body = self.admin("POST", path, dict(headers, Host=here))
                self.assertEqual(status, 403, body)
                self.assertIn("cross-site request refused", body)
                self.settle(mark)
                [rec] = self.records(path, mark)
                self.assertEqual((rec["by"], rec["outcome"]), ("", "refused"))
                self.assertEqual(rec["action"], path.rsplit("/", 1)[1])
                self.assertIn("cross-site request refused", rec["detail"])
        self.assertEqual(self.stopped(), [])

    def test_page_elements_take_no_event_slot(self):
        here = self.proxy.admin
        img = ("GET /events?%d HTTP/1.1\r\nHost: " + here + "\r\nSec-Fetch-Site: cross-site\r\n"
               "Sec-Fetch-Mode: no-cors\r\nSec-Fetch-Dest: image\r\n\r\n")
        held = []
        for i in range(EVENT_SLOTS + 4):
            s = socket.create_connection(("127.0.0.1", self.admin_port),
                                         timeout=env.t(10))
            self.addCleanup(s.close)
            s.sendall((img % i).encode())
            held.append(s)  # kept open, as a page keeps its images' streams
        for s in held:
            head = self.read_head(s)
            self.assertTrue(head.startswith("HTTP/1.1 403"), head)
        # The operator's console (EventSource, same origin) still gets its live view.
        s = socket.create_connection(("127.0.0.1", self.admin_port), timeout=env.t(10))
        self.addCleanup(s.close)
        s.sendall(("GET /events HTTP/1.1\r\nHost: %s\r\nSec-Fetch-Site: same-origin\r\n"
                   "Sec-Fetch-Mode: cors\r\nSec-Fetch-Dest: empty\r\n\r\n" % here).encode())
        status_line = self.read_head(s).split("\r\n")[0]
        self.assertEqual(status_line, "HTTP/1.1 200 OK")

    @staticmethod
    def read_head(s):
        seen = b""
        deadline = time.monotonic() + env.t(10)
        while b"\r\n\r\n" not in seen and time.monotonic() < deadline:
            chunk = s.recv(4096)
            if not chunk:
                break
            seen += chunk
        return seen.decode("latin-1")


@unittest.skipUnless(shutil.which("chromium") and shutil.which("chromedriver"),
                     "chromium and chromedriver are needed")
class BrowserTest(AdminGateCase):
    """Real Chromium: a page on another origin (127.0.0.2) points <img> elements at /events, and
    a name that resolves to 127.0.0.1 (--host-resolver-rules) opens the admin port."""

    @classmethod
    def extra_setup(cls):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
        options = Options()
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--no-proxy-server", "--host-resolver-rules=MAP rebind.test 127.0.0.1"):
            options.add_argument(arg)
        options.binary_location = shutil.which("chromium")
        cls.browser = webdriver.Chrome(service=Service(shutil.which("chromedriver")),
                                       options=options)
        cls.browser.set_page_load_timeout(env.t(30))
        cls.page = b""

        class Page(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(cls.page)))
                self.end_headers()
                self.wfile.write(cls.page)

        cls.evil = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Page)
        cls.evil.daemon_threads = True
        threading.Thread(target=cls.evil.serve_forever, daemon=True).start()

    @classmethod
    def extra_teardown(cls):
        cls.browser.quit()
        cls.evil.shutdown()
        cls.evil.server_close()

    def test_images_on_another_site_leave_the_live_view_open(self):
        port = self.admin_port
        imgs = "".join('<img src="http://%s:%d/events?%d">' % (h, port, i)
                       for h in ("127.0.0.1", "localhost") for i in range(6))
        type(self).page = ("<html><body>cats%s</body></html>" % imgs).encode()
        self.browser.get("http://127.0.0.2:%d/" % self.evil.server_address[1])
        # Every image request has been answered once the page's load event fired.
        self.assertEqual(self.browser.execute_script("return document.readyState"), "complete")
        s = socket.create_connection(("127.0.0.1", port), timeout=env.t(10))
        self.addCleanup(s.close)
        s.sendall(("GET /events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port).encode())
        self.assertTrue(CrossSiteTest.read_head(s).startswith("HTTP/1.1 200 OK"))
        self.assertIn("cross-site request refused (Sec-Fetch-Site: cross-site)",
                      self.proxy.stderr())

    def test_a_rebound_name_gets_421(self):
        self.browser.get("http://rebind.test:%d/approvals" % self.admin_port)
        text = self.browser.find_element("tag name", "body").text
        self.assertIn("Host rebind.test:%d is not an address of this admin listener"
                      % self.admin_port, text)


if __name__ == "__main__":
    unittest.main()
