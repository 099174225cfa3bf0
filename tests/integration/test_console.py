"""The operator's console (GET /console on the admin port) in a real browser: headless
Chromium driven by Selenium (Debian's chromium, chromium-driver, python3-selenium) loads the
page, sees a live decision appear (GET /events), sees a held request appear, approves it by
clicking with the operator token entered (the request then goes through; without the token the
click is refused with 401), and stops an agent by clicking. Screenshots of the views are taken
(to docs/console/*.png, linked from the README, when AIRLOCK_CONSOLE_SHOTS=docs/console). Also: the page's headers (CSP, no framing) and that an agent's reason is shown
as text, never as HTML."""

import concurrent.futures
import hashlib
import os
import shutil
import tempfile
import time
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
from harness.ops_admin import admin_call
from harness.proxy import make_policy, origin_rule

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

# Screenshots go to a directory of the run's own unless AIRLOCK_CONSOLE_SHOTS names one (set it
# to docs/console to refresh the README's pictures), so a test run leaves the tree as it was.
_OWN_SHOTS = tempfile.TemporaryDirectory(prefix="airlock-console-")  # removed at exit
SHOTS = os.environ.get("AIRLOCK_CONSOLE_SHOTS") or _OWN_SHOTS.name
XSS = '<img src=x onerror="document.title=\'pwned\'">'
TOKEN = "console-operator-" + "3b8e51"


class ConsoleTest(ProxyTestCase):
    @classmethod
    def policy(cls):
        p = make_policy([origin_rule(cls.origin.port, name="asked", ask={"timeout": "60s"})],
                        agents={"default": {"rules": ["asked"]},
                                "builder": {"rules": [], "rate": {"requests_per_second": 5,
                                                                   "concurrent": 2},
                                            "breaker": {"max_failures": 20}}})
        p["listen"]["admin"] = "127.0.0.1:0"
        p["approvals"] = {"access_requests": True}
        p["operators"] = {"carol": {"token_sha256": hashlib.sha256(TOKEN.encode()).hexdigest()}}
        return p

    @classmethod
    def extra_setup(cls):
        options = Options()
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1280,900", "--no-proxy-server"):
            options.add_argument(arg)
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
        cls.browser = webdriver.Chrome(service=service, options=options)
        cls.browser.set_page_load_timeout(env.t(30))

    @classmethod
    def extra_teardown(cls):
        cls.browser.quit()

    def setUp(self):
        super().setUp()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
        self.addCleanup(self.pool.shutdown, wait=True)
        self.browser.get("http://%s/console" % self.proxy.admin)
        # The token lives in the tab's sessionStorage: each test starts without one.
        self.browser.execute_script("sessionStorage.clear()")

    def wait_for(self, what, condition):
        # The page redraws rows whose data changed: a row read as it goes is tried again.
        return WebDriverWait(self.browser, env.t(20), poll_frequency=0.1,
                             ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: condition(d), "console: " + what)

    def click_until(self, what, button, done):
        """Clicks the button at CSS `button` until the element at CSS `done` shows. A row the
        page redraws (its data changed: the agent's requests in flight ended) may take a click
        as it is replaced, and the click is lost; it is clicked again, at most every 2 s."""
        last = [0.0]

        def clicked(d):
            if d.find_elements(By.CSS_SELECTOR, done):
                return True
            if time.monotonic() - last[0] >= env.t(2):
                buttons = d.find_elements(By.CSS_SELECTOR, button)
                if buttons:
                    last[0] = time.monotonic()
                    buttons[0].click()
            return False
        self.wait_for(what, clicked)

    def enabled(self, row, name):
        """The control `name` in `row` once it can be clicked: a row that has just taken another
        row's place (a new one appears, one above it ends) settles for a moment first."""
        return self.wait_for(name + " enabled", lambda d: [
            b for b in row.find_elements(By.NAME, name) if b.is_enabled()])[0]

    def pending_row(self, text):
        return self.wait_for("the row of " + text, lambda d: [
            r for r in d.find_elements(By.CSS_SELECTOR, "#pending tbody tr") if text in r.text])[0]

    def shot(self, name, section=None):
        if section:  # the view's section at the top of the window
            self.browser.execute_script(
                "document.getElementById(arguments[0]).closest('section').scrollIntoView()",
                section)
        os.makedirs(SHOTS, exist_ok=True)
        path = os.path.join(SHOTS, name)
        self.assertTrue(self.browser.save_screenshot(path), path)
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", path)

    def enter_token(self, token=TOKEN):
        self.browser.find_element(By.ID, "token").send_keys(token)
        self.browser.find_element(By.ID, "token-set").click()

    def test_live_decision_and_rule_hits(self):
        m = marker()
        path = "/echo/live-%s" % m
        # The page subscribes to GET /events when it loads: wait for it to say so.
        self.wait_for("the live stream", lambda d: d.find_element(
            By.ID, "live-status").text == "(live)")
        refused = self.curl(self.url(path, host="elsewhere.test"))
        self.assertEqual(refused.status, 403)
        row = self.wait_for("the live decision", lambda d: [
            r for r in d.find_elements(By.CSS_SELECTOR, "#live tbody tr") if path in r.text])[0]
        self.assertIn("deny 403", row.text)
        self.assertIn("host_denied", row.text)
        self.wait_for("the rules' hits", lambda d: d.find_elements(
            By.CSS_SELECTOR, '#rules tbody tr[data-rule="asked"]'))
        self.shot("live.png")

    def test_headers(self):
        r = admin_call(self.proxy.admin, "GET", "/console")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("Content-Type").startswith("text/html"))
        self.assertIn("frame-ancestors 'none'", r.header("Content-Security-Policy"))
        self.assertEqual(r.header("X-Frame-Options"), "DENY")
        self.assertNotIn(b"http://", r.body.replace(b"http://www.w3.org", b""))  # no CDN

    def test_policy_section(self):
        version = admin_call(self.proxy.admin, "GET", "/policy").json()["version"]
        self.wait_for("the policy's version", lambda d: d.find_element(
            By.ID, "p-version").text == version)
        self.assertEqual(self.browser.find_element(By.ID, "p-ca").text, "no interception CA")
        self.assertEqual(self.browser.find_element(By.ID, "p-error").text, "none")
        self.shot("policy.png", "policy")

    def test_approve_held_request_and_stop_agent_by_clicking(self):
        m = marker()
        path = "/echo/console-%s" % m

        def held():
            return self.curl(self.url(path), max_time=env.t(50))
        f = self.pool.submit(held)
        # An access request whose reason is markup: shown as text.
        self.pool.submit(self.curl, "http://airlock.internal/request-access",
                         args=["--data", '{"host":"pypi.org","port":443,"reason":%s}'
                               % __import__("json").dumps(XSS)]).result(env.t(20))
        row = self.pending_row(path)
        reason = self.pending_row("access_request")
        self.assertIn(XSS, reason.text)  # the markup as text
        self.assertEqual(self.browser.find_elements(By.CSS_SELECTOR, "#pending img"), [])
        self.assertNotEqual(self.browser.title, "pwned")
        self.shot("approvals.png")
        self.assertEqual(self.origin.seen(m), [])
        # Without the operator token the click is refused (401) and the request stays held.
        self.enabled(row, "approve").click()
        self.wait_for("the 401", lambda d: "401" in d.find_element(By.ID, "status").text)
        self.assertEqual(self.origin.seen(m), [])
        self.enter_token()
        row = self.pending_row(path)
        Select(self.enabled(row, "scope")).select_by_value("once")
        self.enabled(row, "approve").click()
        self.assertEqual(f.result(env.t(30)).status, 200)
        self.assertEqual(len(self.origin.seen(m)), 1)
        self.wait_for("the row gone", lambda d: not [
            r for r in d.find_elements(By.CSS_SELECTOR, "#pending tbody tr") if path in r.text])

        builder = '#agents tbody tr[data-agent="builder"]'
        self.click_until("builder stopped", builder + ' button[name="stop"]',
                         builder + ' button[name="resume"]')
        agents = admin_call(self.proxy.admin, "GET", "/agents").json()["agents"]
        self.assertTrue([a for a in agents if a["name"] == "builder" and a["stopped"]], agents)
        # The audit names the operator whose token the console sent.
        self.assertIsNotNone(self.proxy.wait_audit(type="operator", action="stop",
                                                   agent="builder", by="carol", outcome="ok"))
        self.shot("agents.png", "agents")
        self.click_until("builder resumed", builder + ' button[name="resume"]',
                         builder + ' button[name="stop"]')
        # The access request is refused from the console too; "once" is not offered for it (it
        # would grant the host for an hour all the same).
        reason = self.pending_row("access_request")
        self.assertEqual([o.get_attribute("value") for o in
                          Select(reason.find_element(By.NAME, "scope")).options],
                         ["agent_host", "permanent"])
        self.enabled(reason, "refuse").click()
        self.wait_for("nothing pending", lambda d: not [
            r for r in d.find_elements(By.CSS_SELECTOR, "#pending tbody tr")
            if "access_request" in r.text])

    def test_grant_narrowed_to_method_and_path_prefix_by_clicking(self):
        self.enter_token()
        m = marker()
        prefix = "/echo/narrow-%s/" % m
        first = self.pool.submit(lambda: self.curl(self.url(prefix + "a"), max_time=env.t(50)))
        row = self.pending_row(prefix + "a")
        # The narrowing controls show for agent_host (method also for permanent), not once.
        scope = Select(self.enabled(row, "scope"))
        scope.select_by_value("once")
        self.assertFalse(row.find_element(By.NAME, "path_prefix").is_displayed())
        self.assertFalse(row.find_element(By.NAME, "method").is_displayed())
        scope.select_by_value("agent_host")
        Select(self.enabled(row, "method")).select_by_value("same")
        self.enabled(row, "path_prefix").send_keys(prefix)
        self.enabled(row, "approve").click()
        self.assertEqual(first.result(env.t(30)).status, 200)
        grants = [g for g in admin_call(self.proxy.admin, "GET", "/approvals").json()["grants"]
                  if g["path_prefix"] == prefix]
        self.assertEqual(len(grants), 1, grants)
        self.assertEqual((grants[0]["method"], grants[0]["by"]), ("GET", "carol"))
        self.wait_for("the grant's row", lambda d: [
            r for r in d.find_elements(By.CSS_SELECTOR, "#grants tbody tr") if prefix in r.text])
        # Covered: a GET under the prefix goes at once. Not covered: a POST under it, and a
        # GET beside it, are held for a decision of their own (refused here by clicking).
        self.assertEqual(self.curl(self.url(prefix + "b"), max_time=env.t(20)).status, 200)
        for method, path in (("POST", prefix + "c"), ("GET", "/echo/narrow-%s-not/d" % m)):
            held = self.pool.submit(lambda method=method, path=path: self.curl(
                self.url(path), max_time=env.t(50),
                args=["-X", method] + (["--data", "x"] if method == "POST" else [])))
            self.enabled(self.pending_row(path), "refuse").click()
            self.assertEqual(held.result(env.t(30)).status, 403, path)
        self.assertEqual(len(self.origin.seen("narrow-%s/" % m)), 2)
        self.assertEqual(self.origin.seen("narrow-%s-not" % m), [])

    def test_row_that_moves_under_the_pointer_settles_before_a_click(self):
        # Two held requests, A above B. A's agent closes A's connection: the proxy drops it and
        # B moves up into A's place. A click aimed at A's Approve button that lands just then
        # must not approve B: B's controls are disabled until it has stood still for a moment.
        self.enter_token()
        m = marker()
        a_path, b_path = "/echo/shift-a-%s" % m, "/echo/shift-b-%s" % m
        a = self.raw(timeout=env.t(40))
        self.addCleanup(a.close)
        a.send(self.request("GET", self.url(a_path), headers=[("Connection", "close")]))
        self.pending_row(a_path)
        b = self.pool.submit(lambda: self.curl(self.url(b_path), max_time=env.t(50)))
        self.enabled(self.pending_row(b_path), "approve")
        # Clicked from inside the page the moment the list redraws without A (as a person's
        # click at that instant would land): records whether the button there was disabled.
        self.browser.execute_script("""
            const body = document.querySelector("#pending tbody");
            window.shiftClick = null;
            new MutationObserver((changes, observer) => {
              const first = body.querySelector("tr");
              if (!first || first.textContent.includes(arguments[0]) ||
                  !first.textContent.includes(arguments[1])) return;
              observer.disconnect();
              const approve = first.querySelector('button[name="approve"]');
              window.shiftClick = {disabled: approve.disabled};
              approve.click();
            }).observe(body, {childList: true});""", a_path, b_path)
        a.close()
        shift = self.wait_for("the redraw without A",
                              lambda d: d.execute_script("return window.shiftClick"))
        self.assertEqual(shift, {"disabled": True})
        # Once B has stood still its button works, and B was still pending: the click at the
        # shift did nothing (had it approved B, this one would answer 404).
        row = self.pending_row(b_path)
        self.enabled(row, "approve").click()
        self.assertEqual(b.result(env.t(30)).status, 200)
        self.wait_for("the 200", lambda d: "approve: 200" in d.find_element(By.ID, "status").text)
        self.assertEqual(len(self.origin.seen("shift-b-%s" % m)), 1)
        self.assertEqual(self.origin.seen("shift-a-%s" % m), [])


if __name__ == "__main__":
    unittest.main()
