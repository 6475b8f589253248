"""Hostile values in the dashboard, in a real browser (headless chromium against
``mailbridge serve``): nothing they carry runs, the pages work under their own
Content-Security-Policy, and received mail loads no remote image until asked.

Members, contacts, a template, a campaign, an automation, a poll and a received message
are stored with values that try to break out into script (``tests.dashboard_payloads``);
every page showing them is opened with ``pwn`` and a ``securitypolicyviolation``
listener put into each document before its own script (DevTools'
``Page.addScriptToEvaluateOnNewDocument``, which no page policy stops). A payload that
ran would have called ``pwn``; a policy violation in a page is the dashboard's own
markup breaking its own policy, as is a "Content Security Policy" line in chromium's
console. A loopback HTTP server stands for the sender of the received mail and counts
what the browser asks it for.
"""

from __future__ import annotations

import asyncio
import base64
import json
import smtplib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select

from tests import dashboard_payloads as payloads
from tests.acceptance.conftest import Server, admin, start
from tests.acceptance.test_dashboard_browser import CHROMIUM, DRIVER, PASSWORD, acme_team, artifacts

# Put into every document before its own script; no page policy applies to it.
WATCH = """
window.__ran = [];
window.__violations = [];
window.pwn = (where) => window.__ran.push(where);
window.alert = (text) => window.__ran.push('alert: ' + text);
document.addEventListener('securitypolicyviolation', (event) => window.__violations.push({
    directive: event.violatedDirective, blocked: event.blockedURI,
    source: event.sourceFile, line: event.lineNumber, sample: event.sample,
}));
"""
GIF = base64.b64decode("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==")


class Sender(ThreadingHTTPServer):
    """The remote server a received message points at: answers anything, counts paths."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Counting)
        self.hits: list[str] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Counting(BaseHTTPRequestHandler):
    server: Sender

    def do_GET(self) -> None:
        self.server.hits.append(self.path)
        self.send_response(200)
        self.send_header("content-type", "image/gif")
        self.send_header("content-length", str(len(GIF)))
        self.end_headers()
        self.wfile.write(GIF)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def sender() -> Iterator[Sender]:
    server = Sender()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    assert Path(CHROMIUM).exists() and Path(DRIVER).exists(), (
        "chromium and chromium-driver are needed: apt-get install chromium chromium-driver"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1400,1000", "--disable-gpu"):  # fmt: skip
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(30)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH})
    try:
        yield driver
    finally:
        driver.quit()


def _wait(condition: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _seed(server: Server, team: str, sender: Sender) -> payloads.Seeded:
    key = json.loads(admin("keys", "create", "--name", "seed", "--team", team,
                                env=server.env).stdout)["token"]  # fmt: skip
    headers = {"authorization": f"Bearer {key}"}

    async def fill() -> payloads.Seeded:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
            seeded = await payloads.seed(client, headers, "shop.io")
            [domain] = (await client.get("/domains", headers=headers)).json()["data"]
            turned = await client.patch(
                f"/domains/{domain['id']}", json={"receiving": True}, headers=headers
            )
            assert turned.status_code == 200, turned.text
        return seeded

    seeded = asyncio.run(fill())
    message = payloads.received_message("hi@shop.io", sender.base_url)
    host, _, port = server.env["MAILBRIDGE_INBOUND_SMTP"].rpartition(":")
    with smtplib.SMTP(host, int(port), timeout=30) as smtp:
        smtp.send_message(message, "stranger@elsewhere.example", ["hi@shop.io"])
    _wait(
        lambda: httpx.get(f"{server.base_url}/emails/receiving", headers=headers).json()["data"],
        "the received message",
    )
    return seeded


@pytest.fixture
def site(
    environment: dict[str, str], tmp_path: Path, sender: Sender
) -> Iterator[tuple[Server, payloads.Seeded]]:
    team_id = acme_team(environment)
    server = start("serve", environment, tmp_path / "serve.log")
    try:
        for email, role in (("owner@acme.io", "owner"), (payloads.MEMBER_IN_A_STRING, "admin"),
                            (payloads.MEMBER_IN_MARKUP, "admin")):  # fmt: skip
            admin("members", "add", "--email", email, "--role", role,
                       "--password", PASSWORD, env=server.env)  # fmt: skip
        yield server, _seed(server, team_id, sender)
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


def _shot(browser: webdriver.Chrome, name: str) -> None:
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, max(900, min(int(height) + 40, 2400)))
    browser.save_screenshot(str(artifacts() / f"{name}.png"))
    browser.set_window_size(1400, 1000)


def _csp_lines(browser: webdriver.Chrome) -> list[str]:
    entries: list[dict[str, Any]] = browser.get_log("browser")  # type: ignore[no-untyped-call]
    return [entry["message"] for entry in entries if "Content Security Policy" in entry["message"]]


def _nothing_ran(browser: webdriver.Chrome, where: str) -> None:
    """Nothing hostile ran in the page or its frames, and the page kept its own policy."""
    _wait(lambda: browser.execute_script("return document.readyState") == "complete", where)
    _wait(lambda: browser.execute_script("return typeof htmx === 'object'"), f"htmx on {where}")
    assert browser.execute_script("return window.__ran") == [], where
    assert browser.execute_script("return window.__violations") == [], where
    assert _csp_lines(browser) == [], where
    for index, frame in enumerate(browser.find_elements(By.CSS_SELECTOR, "iframe.preview")):
        browser.switch_to.frame(frame)
        try:
            assert browser.execute_script("return document.documentElement.dataset.pwned") is None
            styled = browser.find_element(By.CSS_SELECTOR, "p.styled")  # the mail's own style
            assert styled.value_of_css_property("font-size") == "30px", (where, index)
        finally:
            browser.switch_to.default_content()


def _injected_markup_runs_nothing(browser: webdriver.Chrome, where: str) -> None:
    """Were a value ever to reach the page as markup, its handler would not run: the
    page's policy refuses it (and says so)."""
    browser.execute_script("""
        window.__violations = [];
        const probe = document.createElement('div');
        probe.innerHTML = '<img src="probe.png" onerror="pwn(\\'probe\\')">';
        document.body.append(probe);
    """)
    _wait(lambda: browser.execute_script("return window.__violations.length"), where, timeout=30)
    [refused] = browser.execute_script("return window.__violations")
    assert refused["directive"].startswith("script-src"), (where, refused)
    assert browser.execute_script("return window.__ran") == [], where
    assert len(_csp_lines(browser)) == 1, where  # chromium logs the refusal too


def _member_row(browser: webdriver.Chrome, email: str) -> WebElement | None:
    for row in browser.find_elements(By.CSS_SELECTOR, "#members tbody tr"):
        if row.find_element(By.TAG_NAME, "td").text.startswith(email):
            return row
    return None


def _sign_in(browser: webdriver.Chrome, base: str, email: str) -> None:
    browser.get(f"{base}/dashboard/login")
    browser.find_element(By.NAME, "email").send_keys(email)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(lambda: browser.current_url.rstrip("/").endswith("/dashboard"), "the overview")


def test_hostile_values_run_nowhere_and_the_pages_keep_their_policy(
    browser: webdriver.Chrome, site: tuple[Server, payloads.Seeded]
) -> None:
    server, seeded = site
    base = server.base_url
    _sign_in(browser, base, "owner@acme.io")
    _nothing_ran(browser, "the overview")
    for path in [*seeded.pages(), "/dashboard/received"]:
        browser.get(base + path)
        _nothing_ran(browser, path)
        assert "pwn(" in browser.find_element(By.TAG_NAME, "main").text, path  # shown as text
        _injected_markup_runs_nothing(browser, path)

    # htmx works under script-src 'self': filtering the runs swaps them in place.
    browser.get(f"{base}/dashboard/automations/{seeded.automation}")
    browser.execute_script(
        "document.body.addEventListener('htmx:afterSwap', () => document.body.dataset.swapped = 1)"
    )
    Select(browser.find_element(By.NAME, "status")).select_by_visible_text("running")
    _wait(lambda: browser.execute_script("return document.body.dataset.swapped"), "htmx's swap")
    _nothing_ran(browser, "the automation's runs")


def test_removing_a_member_asks_first_and_runs_nothing_of_their_address(
    browser: webdriver.Chrome, site: tuple[Server, payloads.Seeded]
) -> None:
    server, _seeded = site
    base = server.base_url
    _sign_in(browser, base, "owner@acme.io")
    browser.get(f"{base}/dashboard/members")
    _nothing_ran(browser, "the members page")
    _shot(browser, "31-members-hostile")
    for email in (payloads.MEMBER_IN_A_STRING, payloads.MEMBER_IN_MARKUP):
        browser.get(f"{base}/dashboard/members")
        row = _member_row(browser, email)
        assert row is not None, email
        row.find_element(By.CSS_SELECTOR, "button.danger").click()
        asked = browser.switch_to.alert
        assert asked.text == f"Remove {email}?"  # the address as text
        asked.dismiss()  # Cancel: nothing happens
        time.sleep(0.5)
        assert browser.current_url == f"{base}/dashboard/members"
        _nothing_ran(browser, f"the members page, {email} kept")
        assert _member_row(browser, email) is not None

        row = _member_row(browser, email)
        assert row is not None
        row.find_element(By.CSS_SELECTOR, "button.danger").click()
        browser.switch_to.alert.accept()
        _wait(lambda: "flash=Member+removed" in browser.current_url, f"{email} removed")
        _nothing_ran(browser, f"the members page, {email} removed")
        assert _member_row(browser, email) is None


def test_received_mail_loads_remote_images_only_when_asked(
    browser: webdriver.Chrome, site: tuple[Server, payloads.Seeded], sender: Sender
) -> None:
    server, _seeded = site
    base = server.base_url
    _sign_in(browser, base, "owner@acme.io")
    browser.get(f"{base}/dashboard/received")
    browser.find_element(By.CSS_SELECTOR, "table tbody tr td a").click()
    _nothing_ran(browser, "the received message")
    time.sleep(2)  # time for anything the frame would fetch
    assert sender.hits == []
    assert "Remote images are blocked" in browser.find_element(By.ID, "images").text
    _shot(browser, "32-received-images-blocked")

    browser.find_element(By.CSS_SELECTOR, "#images button").click()
    _wait(lambda: "/img.png" in sender.hits, "the remote image, once asked for")
    assert "images=1" in browser.current_url
    _nothing_ran(browser, "the received message with its images")
    time.sleep(1)
    assert set(sender.hits) <= payloads.IMAGE_PATHS  # images only: no stylesheet, frame, object
    _shot(browser, "33-received-images-loaded")

    browser.find_element(By.LINK_TEXT, "Block them").click()
    _wait(lambda: "images=1" not in browser.current_url, "images blocked again")
    before = len(sender.hits)
    _nothing_ran(browser, "the received message blocked again")
    time.sleep(1)
    assert len(sender.hits) == before
