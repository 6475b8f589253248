"""The dashboard in a real browser: Debian's chromium, headless, driven by Selenium
through chromium-driver, against ``mailbridge serve`` over real HTTP.

A team with a verified domain, contacts, a template, an automation with a run, an A/B
campaign with opens on one arm, a poll and a webhook is set up first; then a person
signs in, walks every page (a screenshot of each lands in the artifacts folder,
``MAILBRIDGE_ARTIFACTS`` or ``.artifacts/dashboard``), creates a key and sees its token
once, and a view-only member finds every write control disabled and a forged write
refused by the server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import smtplib
import time
from collections.abc import Iterator
from email import message_from_bytes
from email.message import EmailMessage, Message
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from tests.acceptance.conftest import Server, admin, start
from tests.integration.automation_setup import FIVE_STEP_CONNECTIONS
from tests.integration.email_factory import add_domain
from tests.webhook_receiver import webhook_receiver

PASSWORD = "browsers are people too"
# The inbox agent's signing secret (serve is started with a fake agent on loopback).
AGENT_SECRET = "whsec_" + "QWdlbnQgc2VjcmV0IGZvciB0aGUgYnJvd3NlciB3YWxr"
AGENT_ANSWER = {"actions": [
    {"type": "add_labels", "labels": ["Shipping"]},
    {"type": "draft_reply", "subject": "Re: Where is my order #4521?",
     "text": "Hi Ann, your order left our warehouse on Monday; it arrives tomorrow."},
    {"type": "archive"},
]}  # fmt: skip
REPOSITORY = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def artifacts() -> Path:
    folder = Path(os.environ.get("MAILBRIDGE_ARTIFACTS", REPOSITORY / ".artifacts")) / "dashboard"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    assert Path(CHROMIUM).exists() and Path(DRIVER).exists(), (
        "chromium and chromium-driver are needed: apt-get install chromium chromium-driver "
        "(.ci/run installs them)"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1400,1000", "--disable-gpu"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


class Site:
    def __init__(self, server: Server, key: str) -> None:
        self.server = server
        self.http = httpx.Client(
            base_url=server.base_url, headers={"authorization": f"Bearer {key}"}, timeout=30
        )

    def call(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        answer = self.http.request(method, path, json=body)
        assert answer.status_code == status, (method, path, answer.text)
        return answer.json()


def _member(server: Server, email: str, role: str) -> None:
    admin("members", "add", "--email", email, "--role", role,
               "--password", PASSWORD, env=server.env)  # fmt: skip


def _wait(condition: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except StaleElementReferenceException:
            value = None  # htmx swapped the element between finding and reading it
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _outbox(server: Server) -> list[Message]:
    folder = Path(server.env["MAILBRIDGE_DATA_DIR"]) / "outbox"
    return [message_from_bytes(path.read_bytes()) for path in sorted(folder.glob("*.eml"))]


def _seed(server: Server, team_id: str) -> dict[str, str]:
    """A team worth looking at; the ids the pages are reached by."""
    key = json.loads(admin("keys", "create", "--name", "seed", "--team", team_id,
                                env=server.env).stdout)["token"]  # fmt: skip
    site = Site(server, key)
    try:
        return _fill(server, site)
    finally:
        site.http.close()


def _fill(server: Server, site: Site) -> dict[str, str]:
    domain = site.call("GET", "/domains")["data"][0]
    site.call("PATCH", f"/domains/{domain['id']}", {"open_tracking": True})
    audience = site.call("POST", "/audiences", {"name": "Newsletter"}, 201)
    for n in range(16):
        site.call("POST", "/contacts", {"email": f"reader{n}@mail.net", "first_name": f"R{n}",
                                        "audience_id": audience["id"]}, 201)  # fmt: skip
    segment = site.call("POST", "/segments", {"name": "Everyone", "audience_id": audience["id"],
                        "filter": {"type": "rule", "field": "email", "operator": "contains",
                                   "value": "@"}}, 201)  # fmt: skip
    template = site.call("POST", "/templates", {
        "name": "Welcome", "from": "Shop <news@shop.io>", "subject": "Welcome aboard",
        "html": "<h1 style='font-family:sans-serif'>Welcome, {{{contact.first_name|friend}}}!</h1>"
                "<p>Thanks for joining the shop.</p>",
    }, 201)  # fmt: skip
    site.call("POST", f"/templates/{template['id']}/publish")
    steps = [
        {"key": "start", "type": "trigger", "config": {"event_name": "signed_up"}},
        {"key": "welcome", "type": "send_email", "config": {"template": {"id": template["id"]}}},
        {"key": "greet", "type": "contact_update", "config": {"first_name": "Greeted"}},
        {"key": "check", "type": "condition",
         "config": {"type": "rule", "field": "contact.first_name", "operator": "eq",
                    "value": "Greeted"}},
        {"key": "mark", "type": "contact_update", "config": {"last_name": "Done"}},
        {"key": "join", "type": "add_to_segment", "config": {"segment_id": segment["id"]}},
        {"key": "nudge", "type": "contact_update", "config": {"last_name": "Later"}},
    ]  # fmt: skip
    connections = [*FIVE_STEP_CONNECTIONS,
                   {"from": "check", "to": "nudge", "type": "condition_not_met"}]  # fmt: skip
    automation = site.call("POST", "/automations", {
        "name": "Onboarding", "audience_id": audience["id"], "domain": "shop.io",
        "status": "enabled", "steps": steps, "connections": connections,
    }, 201)  # fmt: skip
    site.call("POST", "/events/send", {"event": "signed_up", "email": "reader1@mail.net",
                                       "audience_id": audience["id"]}, 202)  # fmt: skip
    runs = _wait(lambda: site.call("GET", f"/automations/{automation['id']}/runs")["data"],
                 "an automation run")  # fmt: skip
    campaign = site.call("POST", "/campaigns", {
        "name": "November news", "from": "Shop <news@shop.io>", "subject": "News",
        "html": "<p>Hello {{{FIRST_NAME|there}}}</p>", "audience_id": audience["id"],
        "ab": {"metric": "open", "test_fraction": 1.0, "decide_after": "1h",
               "variants": [{"subject": "Our November news"}, {"subject": "You will like this"}]},
    }, 201)  # fmt: skip
    site.call("POST", f"/campaigns/{campaign['id']}/send", {})
    sent = _wait(lambda: [m for m in _outbox(server) if m["Subject"] == "You will like this"],
                 "the campaign's B arm in the outbox")  # fmt: skip
    for message in sent[:3]:  # opens on arm B only: B wins
        pixel = re.search(r"(https?://[^\s\"']+/t/o/[^\s\"']+)", _html(message))
        assert pixel is not None
        path = pixel.group(1).split("/t/o/", 1)[1]
        httpx.get(f"{server.base_url}/t/o/{path}", timeout=10)
    site.call("POST", "/emails", {"from": "Shop <news@shop.io>", "to": ["ann@mail.net"],
                                  "subject": "Your order shipped",
                                  "html": "<p>It is on its way.</p>"})  # fmt: skip
    poll = site.call("POST", "/polls", {"question": "What should we stock next?",
                                        "options": ["Tea", "Coffee", "Cocoa"]}, 201)  # fmt: skip
    site.call("POST", "/webhooks", {"endpoint": "https://hooks.example.com/mailbridge",
                                    "events": ["email.delivered"]}, 201)  # fmt: skip
    thread = _inbox(server, site, domain["id"])
    return {"automation": automation["id"], "run": runs[0]["id"], "campaign": campaign["id"],
            "template": template["id"], "domain": domain["id"], "poll": poll["id"],
            "audience": audience["id"], "thread": thread}  # fmt: skip


def _inbox(server: Server, site: Site, domain_id: str) -> str:
    """support@shop.io, a customer's question in it (over SMTP) with a label; the thread."""
    site.call("PATCH", f"/domains/{domain_id}", {"receiving": True})
    site.call("POST", "/inboxes", {"email_address": "support@shop.io", "name": "Support",
                                   "from_name": "Shop Support"}, 201)  # fmt: skip
    site.call("PATCH", "/inboxes/support@shop.io/agent", {
        "instructions": "Label shipping questions and draft an answer.",
        "actions": ["add_labels", "draft_reply"],
    })  # fmt: skip
    question = EmailMessage()
    question["From"], question["To"] = "Ann Customer <ann@mail.net>", "support@shop.io"
    question["Subject"] = "Where is my order #4521?"
    question.set_content("Hello, my order has not arrived yet. Can you check?")
    question.add_alternative("<p>Hello, my order <b>has not arrived</b> yet. Can you check?</p>",
                             subtype="html")  # fmt: skip
    host, _, port = server.env["MAILBRIDGE_INBOUND_SMTP"].rpartition(":")
    with smtplib.SMTP(host, int(port), timeout=30) as smtp:
        smtp.send_message(question)
    threads = _wait(lambda: site.call("GET", "/inboxes/support@shop.io/threads")["data"],
                    "the question filed in the inbox")  # fmt: skip
    _wait(lambda: site.call("GET", f"/inboxes/support@shop.io/threads/{threads[0]['id']}")[
        "labels"], "the agent's label")  # fmt: skip
    label = site.call("POST", "/inboxes/support@shop.io/labels",
                      {"name": "Orders", "color": "#2563EB"}, 201)  # fmt: skip
    site.call("POST", f"/inboxes/support@shop.io/threads/{threads[0]['id']}/labels",
              {"labels": [label["id"]]})  # fmt: skip
    return str(threads[0]["id"])


def _html(message: Message) -> str:
    for part in message.walk():
        if part.get_content_type() == "text/html":
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            return payload.decode(part.get_content_charset() or "utf-8")
    return ""


def acme_team(environment: dict[str, str]) -> str:
    """A team ``acme`` on plan pro with a verified sending domain; its id."""
    team = json.loads(admin("teams", "create", "--name", "acme", "--plan", "pro",
                                 env=environment).stdout)  # fmt: skip
    settings = Settings(data_dir=Path(environment["MAILBRIDGE_DATA_DIR"]))

    async def verified_domain() -> None:
        context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
        try:
            await add_domain(context, team["id"])
        finally:
            await context.database.dispose()

    asyncio.run(verified_domain())
    return str(team["id"])


@pytest.fixture
def dashboard(
    environment: dict[str, str], tmp_path: Path
) -> Iterator[tuple[Server, dict[str, str]]]:
    team_id = acme_team(environment)
    with webhook_receiver() as agent:  # a fake inbox agent: labels, drafts, tries to archive
        agent.responder = lambda _request: json.dumps(AGENT_ANSWER).encode()
        environment = {**environment, "MAILBRIDGE_INBOX_AGENT_URL": agent.url("/agent"),
                       "MAILBRIDGE_INBOX_AGENT_SECRET": AGENT_SECRET}  # fmt: skip
        server = start("serve", environment, tmp_path / "serve.log")
        try:
            _member(server, "owner@acme.io", "owner")
            _member(server, "viewer@acme.io", "view_only")
            yield server, _seed(server, team_id)
            assert [request.signed_with(AGENT_SECRET) for request in agent.requests()] == [True]
        finally:
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait()


def _sign_in(browser: webdriver.Chrome, base: str, email: str) -> None:
    browser.get(f"{base}/dashboard")
    assert "/dashboard/login" in browser.current_url
    browser.find_element(By.NAME, "email").send_keys(email)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    # The overview's own element, not only its URL: the URL changes before the page is in.
    _wait(lambda: browser.current_url.rstrip("/").endswith("/dashboard")
          and browser.find_elements(By.ID, "sent-today"), "the overview")  # fmt: skip


def _shot(browser: webdriver.Chrome, name: str) -> None:
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, max(900, min(int(height) + 40, 2400)))
    browser.save_screenshot(str(artifacts() / f"{name}.png"))
    browser.set_window_size(1400, 1000)


def _post_without_csrf(browser: webdriver.Chrome, path: str) -> dict[str, Any]:
    """A form post another site could make: the browser's cookie, no CSRF token."""
    result: dict[str, Any] = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        fetch(arguments[0], {method: 'POST', credentials: 'include',
              body: new URLSearchParams(arguments[1])})
          .then(async r => done({status: r.status, text: await r.text()}));""",
        path, {"name": "sneaky", "permission": "full_access"},
    )  # fmt: skip
    return result


def test_a_person_walks_the_dashboard(
    browser: webdriver.Chrome, dashboard: tuple[Server, dict[str, str]]
) -> None:
    server, ids = dashboard
    base = server.base_url
    browser.get(f"{base}/dashboard/login")
    _shot(browser, "01-sign-in")
    _sign_in(browser, base, "owner@acme.io")
    assert browser.find_element(By.ID, "sent-today").text.isdigit()
    _shot(browser, "02-overview")

    pages = [
        ("03-emails", "/dashboard/emails"), ("04-domain", f"/dashboard/domains/{ids['domain']}"),
        ("05-audience", f"/dashboard/audiences/{ids['audience']}"),
        ("06-segments", "/dashboard/segments"),
        ("07-template", f"/dashboard/templates/{ids['template']}"),
        ("08-campaigns", "/dashboard/campaigns"), ("10-automations", "/dashboard/automations"),
        ("13-webhooks", "/dashboard/webhooks"), ("14-received", "/dashboard/received"),
        ("15-logs", "/dashboard/logs"), ("17-members", "/dashboard/members"),
        ("19-account", "/dashboard/account"), ("20-audit-log", "/dashboard/members/audit"),
        ("21-inboxes", "/dashboard/inboxes"), ("22-inbox", "/dashboard/inboxes/support@shop.io"),
    ]  # fmt: skip
    for name, path in pages:
        browser.get(base + path)
        assert browser.find_element(By.TAG_NAME, "h1").text, path
        assert "Not done" not in browser.page_source, path
        _shot(browser, name)

    browser.get(f"{base}/dashboard/emails")
    browser.find_element(By.CSS_SELECTOR, "table tbody tr td a").click()
    assert browser.find_elements(By.CSS_SELECTOR, "ol.timeline li.event")
    _shot(browser, "03b-email-timeline")

    browser.get(f"{base}/dashboard/campaigns/{ids['campaign']}")
    arms = browser.find_elements(By.CSS_SELECTOR, "#ab-result svg rect.arm")
    assert [arm.get_attribute("data-variant") for arm in arms] == ["A", "B"]
    assert "Winner: B" in browser.find_element(By.CSS_SELECTOR, "#ab-result figcaption").text
    _shot(browser, "09-campaign-ab")

    browser.get(f"{base}/dashboard/inboxes/support@shop.io/threads/{ids['thread']}")
    assert "Where is my order #4521?" in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_element(By.CSS_SELECTOR, "iframe.preview").get_attribute("sandbox") == ""
    labels = browser.find_element(By.CSS_SELECTOR, "p.labels").text
    assert "Orders" in labels and "Shipping" in labels  # a member's label and the agent's
    agent = browser.find_element(By.CSS_SELECTOR, "section.agent").text
    assert "did add_labels, draft_reply" in agent and "refused archive" in agent
    assert "arrives tomorrow" in browser.find_element(By.CSS_SELECTOR, "section.draft").text
    _shot(browser, "23-inbox-thread")
    browser.find_element(By.CSS_SELECTOR, "section.reply textarea").send_keys(
        "It left our warehouse today. Sorry!"
    )
    browser.find_element(By.CSS_SELECTOR, "section.reply button[type=submit]").click()
    _wait(lambda: "Reply queued" in browser.page_source, "the reply queued")
    _wait(lambda: [m for m in _outbox(server) if m["Subject"] == "Re: Where is my order #4521?"],
          "the reply in the outbox")  # fmt: skip
    browser.find_element(By.CSS_SELECTOR, "section.forward input[name=to]").send_keys(
        "warehouse@shop.io"
    )
    browser.find_element(By.CSS_SELECTOR, "section.forward textarea").send_keys("Please check.")
    browser.find_element(By.CSS_SELECTOR, "section.forward button[type=submit]").click()
    _wait(lambda: "Forward queued" in browser.page_source, "the forward queued")
    _wait(lambda: [m for m in _outbox(server) if m["Subject"] == "Fwd: Where is my order #4521?"],
          "the forward in the outbox")  # fmt: skip
    browser.get(f"{base}/dashboard/inboxes/support@shop.io/drafts")
    assert "arrives tomorrow" in browser.page_source
    _shot(browser, "24-inbox-drafts")

    browser.get(f"{base}/dashboard/automations/{ids['automation']}?run={ids['run']}")
    steps = browser.find_elements(By.CSS_SELECTOR, "#graph svg g.step")
    assert len(steps) == 7
    walked = browser.find_elements(By.CSS_SELECTOR, "#graph svg g.step.on")
    assert {step.get_attribute("data-key") for step in walked} == {
        "start",
        "welcome",
        "greet",
        "check",
        "mark",
        "join",
    }  # the branch not taken (nudge) stays grey
    assert browser.find_elements(By.CSS_SELECTOR, "#graph svg path.edge.on")
    _shot(browser, "11-automation-run")
    # htmx: filtering the runs swaps the table in place, the page (and its URL) stays.
    where = browser.current_url
    browser.execute_script("document.body.dataset.stay = 'yes'")
    Select(browser.find_element(By.NAME, "status")).select_by_visible_text("running")
    _wait(lambda: "No run yet." in browser.find_element(By.ID, "runs").text, "the runs swapped")
    assert browser.current_url == where
    assert browser.execute_script("return document.body.dataset.stay") == "yes"

    browser.get(f"{base}/dashboard/polls/{ids['poll']}")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#poll-results svg rect")) == 3
    _shot(browser, "12-poll")

    browser.get(f"{base}/dashboard/api-keys")
    form = browser.find_element(By.CSS_SELECTOR, "form[action='/dashboard/api-keys']")
    form.find_element(By.NAME, "name").send_keys("from the browser")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    token = _wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#new-token code"), "the token")
    shown = token[0].text
    assert shown.startswith("mb_")
    _shot(browser, "16-api-key-created")
    assert (
        httpx.get(f"{base}/domains", headers={"authorization": f"Bearer {shown}"}).status_code
        == 200
    )
    browser.get(f"{base}/dashboard/api-keys")
    assert shown not in browser.page_source and "from the browser" in browser.page_source

    refused = _post_without_csrf(browser, "/dashboard/api-keys")
    assert refused["status"] == 403 and "invalid_csrf_token" in refused["text"]

    browser.find_element(By.CSS_SELECTOR, "header form button").click()
    _wait(lambda: "/dashboard/login" in browser.current_url, "signing out")

    _sign_in(browser, base, "viewer@acme.io")
    for _name, path in pages:  # a view-only member sees every page but the owners' audit log
        browser.get(base + path)
        if path == "/dashboard/members/audit":
            assert "Only owners read the audit log." in browser.page_source
            continue
        assert browser.find_element(By.TAG_NAME, "h1").text, path
        assert "Not done" not in browser.page_source, path
    browser.get(f"{base}/dashboard/api-keys")
    create = browser.find_element(By.CSS_SELECTOR, "form[action='/dashboard/api-keys'] button")
    assert not create.is_enabled()
    _shot(browser, "18-view-only-keys")
    csrf = browser.find_element(By.NAME, "csrf").get_attribute("value")
    forged: dict[str, Any] = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        fetch('/dashboard/api-keys', {method: 'POST', credentials: 'include',
              body: new URLSearchParams({csrf: arguments[0], name: 'forged'})})
          .then(async r => done({status: r.status, text: await r.text()}));""",
        csrf,
    )
    assert forged["status"] == 403 and "view_only_member" in forged["text"]
    browser.get(f"{base}/dashboard/domains/{ids['domain']}")
    assert (
        not browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").is_enabled()
        or "Verify" not in browser.page_source
    )
