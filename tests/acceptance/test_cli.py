"""The command-line tool as people use it: every command group against a real ``mailbridge
serve`` on a free port, stdout piped (so JSON), failures as error objects on stderr."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import smtplib
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.acceptance.conftest import Server, admin, free_port


class Cli:
    def __init__(self, server: Server, tmp_path: Path) -> None:
        self.server = server
        self.key = server.create_key()["token"]
        self.env = {
            **server.env,
            "MAILBRIDGE_API_KEY": self.key,
            "MAILBRIDGE_BASE_URL": server.base_url,
            "MAILBRIDGE_CONFIG_DIR": str(tmp_path / "config"),
        }
        self.http = httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {self.key}"}
        )

    def run(self, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:  # fmt: skip
        return subprocess.run(
            [sys.executable, "-m", "mailbridge", *args], env=env or self.env, input=stdin,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    def ok(self, *args: str, stdin: str | None = None) -> Any:
        """The command's JSON answer (it must succeed)."""
        done = self.run(*args, stdin=stdin)
        assert done.returncode == 0, (args, done.stderr)
        assert done.stderr == ""
        return json.loads(done.stdout)

    def fails(self, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        """The error object of a command that must fail (exit 1, nothing on stdout)."""
        done = self.run(*args, env=env)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert done.stdout == "" and "Traceback" not in done.stderr
        error: dict[str, Any] = json.loads(done.stderr)
        assert set(error) == {"statusCode", "name", "message"}
        return error

    def api(self, path: str) -> Any:
        return self.http.get(path).json()


@pytest.fixture
def cli(server: Server, tmp_path: Path) -> Iterator[Cli]:
    admin("domains", "add", "shop.io", "--verified", env=server.env)
    made = Cli(server, tmp_path)
    yield made
    made.http.close()


def test_every_group_answers_the_apis_json_when_piped(cli: Cli, tmp_path: Path) -> None:
    # domains
    domain = cli.ok("domains", "create", "--name", "mail.example.org")
    assert cli.ok("domains", "get", domain["id"]) == cli.api(f"/domains/{domain['id']}")
    assert cli.ok("domains", "list") == cli.api("/domains")
    cli.ok("domains", "update", domain["id"], "--set", "open_tracking=true")
    assert cli.ok("domains", "delete", domain["id"], "--yes")["deleted"] is True
    # emails, with an idempotency key
    sent = cli.ok("emails", "send", "--from", "Shop <hi@shop.io>", "--to", "ann@corp.io",
                  "--subject", "Hi", "--text", "Hello", "--idempotency-key", "k-1")  # fmt: skip
    again = cli.ok("emails", "send", "--from", "Shop <hi@shop.io>", "--to", "ann@corp.io",
                   "--subject", "Hi", "--text", "Hello", "--idempotency-key", "k-1")  # fmt: skip
    assert again["id"] == sent["id"]
    assert cli.ok("emails", "get", sent["id"]) == cli.api(f"/emails/{sent['id']}")
    assert cli.ok("emails", "list")["data"][0]["id"] == sent["id"]
    # contacts, properties, audiences, segments, topics
    cli.ok("contact-properties", "create", "--key", "plan", "--type", "string")
    contact = cli.ok("contacts", "create", "--email", "ann@corp.io", "--first-name", "Ann",
                     "--set", "properties.plan=pro")  # fmt: skip
    assert cli.ok("contacts", "get", "ann@corp.io") == cli.api("/contacts/ann@corp.io")
    assert cli.ok("contacts", "get", contact["id"])["properties"]["plan"]["value"] == "pro"
    cli.ok("contacts", "update", "ann@corp.io", "--last-name", "Lee")
    audience = cli.ok("audiences", "create", "--name", "Newsletter")
    cli.ok("audiences", "add-contact", audience["id"], "--email", "bo@corp.io")
    assert [c["email"] for c in cli.ok("audiences", "contacts", audience["id"])["data"]] == [
        "bo@corp.io"
    ]
    segment = cli.ok("segments", "create", "--name", "VIP")
    cli.ok("segments", "add-member", segment["id"], "ann@corp.io")
    assert cli.ok("segments", "members", segment["id"]) == cli.api(
        f"/segments/{segment['id']}/contacts"
    )
    assert cli.ok("contacts", "segments", "ann@corp.io")["data"][0]["id"] == segment["id"]
    topic = cli.ok("topics", "create", "--name", "Product news", "--default-subscription", "opt_in")
    assert cli.ok("topics", "list") == cli.api("/topics")
    cli.ok("topics", "delete", topic["id"], "--yes")
    # templates, automations (from a JSON file), events
    template = cli.ok("templates", "create", "--name", "Welcome", "--subject", "Welcome!",
                      "--html", "<p>Hi {{{FIRST_NAME}}}</p>")  # fmt: skip
    cli.ok("templates", "publish", template["id"])
    graph = tmp_path / "welcome.json"
    graph.write_text(json.dumps({
        "name": "Welcome", "domain": "shop.io",
        "steps": [
            {"key": "start", "type": "trigger", "config": {"event_name": "user.signed_up"}},
            {"key": "welcome", "type": "send_email",
             "config": {"template": {"id": template["id"]}, "from": "Shop <hi@shop.io>"}},
        ],
        "connections": [{"from": "start", "to": "welcome"}],
    }))  # fmt: skip
    automation = cli.ok("automations", "create", "--file", str(graph))
    assert cli.ok("automations", "enable", automation["id"])["status"] == "enabled"
    cli.ok("events", "send", "--event", "user.signed_up", "--email", "ann@corp.io")
    assert cli.ok("automations", "runs", automation["id"]) == cli.api(
        f"/automations/{automation['id']}/runs"
    )
    assert cli.ok("automations", "disable", automation["id"])["status"] == "disabled"
    # campaigns, broadcasts, webhooks, suppressions, keys, logs, receiving, health
    campaign = cli.ok("campaigns", "create", "--name", "Launch", "--from", "Shop <hi@shop.io>",
                      "--subject", "We launched", "--html", "<p>Hi</p>")  # fmt: skip
    assert cli.ok("campaigns", "get", campaign["id"]) == cli.api(f"/campaigns/{campaign['id']}")
    assert cli.ok("broadcasts", "list") == cli.api("/broadcasts")
    hook = cli.ok("webhooks", "create", "--endpoint", "https://hooks.example.org/mb",
                  "--events", "email.sent")  # fmt: skip
    assert cli.ok("webhooks", "deliveries", hook["id"]) == cli.api(
        f"/webhooks/{hook['id']}/deliveries"
    )
    cli.ok("suppressions", "add", "--email", "gone@corp.io")
    assert cli.ok("suppressions", "get", "gone@corp.io")["email"] == "gone@corp.io"
    keys = cli.ok("api-keys", "list")["data"]  # (last_used_at moves with each call)
    assert [key["id"] for key in keys] == [key["id"] for key in cli.api("/api-keys")["data"]]
    log = cli.ok("logs", "list")["data"][0]
    assert cli.ok("logs", "get", log["id"]) == cli.api(f"/logs/{log['id']}")
    assert cli.ok("receiving", "list") == cli.api("/emails/receiving")
    assert cli.ok("health")["status"] == "ok"


def test_lists_follow_their_cursors_and_quiet_prints_only_ids(cli: Cli) -> None:
    emails = [f"c{n}@corp.io" for n in range(7)]
    for email in emails:
        cli.ok("contacts", "create", "--email", email)
    streamed = cli.run("contacts", "list", "--all", "--limit", "3")
    assert streamed.returncode == 0, streamed.stderr
    lines = [json.loads(line) for line in streamed.stdout.splitlines()]  # NDJSON
    assert sorted(item["email"] for item in lines) == sorted(emails)
    quiet = cli.run("contacts", "list", "--all", "-q", "--limit", "2")
    assert quiet.stdout.split() == [item["id"] for item in lines]


def test_failures_are_error_objects_on_stderr_with_exit_1(cli: Cli, server: Server) -> None:
    assert cli.fails("domains", "get", "no-such-domain") == {
        "statusCode": 404, "name": "not_found", "message": "Domain not found.",
    }  # fmt: skip
    down = {**cli.env, "MAILBRIDGE_BASE_URL": f"http://127.0.0.1:{free_port()}"}
    error = cli.fails("domains", "list", env=down)
    assert (error["statusCode"], error["name"]) == (0, "network_error")
    for args in (
        ["domains", "list", "--no-such-flag"],
        ["domains", "get"],  # a missing argument
        ["emails", "send", "--set", "no-equals-sign"],
        ["automations", "create", "--file", "/no/such/file.json"],
        ["no-such-group"],
    ):
        error = cli.fails(*args)
        assert (error["statusCode"], error["name"]) == (None, "cli_error"), args
    keyless = {k: v for k, v in cli.env.items() if k != "MAILBRIDGE_API_KEY"}
    assert cli.fails("domains", "list", env=keyless)["name"] == "cli_error"


def test_a_delete_off_a_terminal_needs_yes_and_deletes_nothing_without(cli: Cli) -> None:
    audience = cli.ok("audiences", "create", "--name", "Keep me")
    error = cli.fails("audiences", "delete", audience["id"])
    assert error["name"] == "cli_error" and "--yes" in error["message"]
    assert cli.http.get(f"/audiences/{audience['id']}").status_code == 200
    assert cli.ok("audiences", "delete", audience["id"], "-y")["deleted"] is True
    assert cli.http.get(f"/audiences/{audience['id']}").status_code == 404


def test_login_keeps_the_key_in_a_0600_profile_and_never_echoes_it(cli: Cli) -> None:
    env = {
        k: v for k, v in cli.env.items() if k not in ("MAILBRIDGE_API_KEY", "MAILBRIDGE_BASE_URL")
    }
    done = cli.run("login", "--profile", "ops", "--base-url", cli.server.base_url,
                   env=env, stdin=cli.key + "\n")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert cli.key not in done.stdout + done.stderr
    path = Path(json.loads(done.stdout)["config"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    listed = cli.run("domains", "list", "--profile", "ops", env=env)
    assert listed.returncode == 0 and json.loads(listed.stdout)["object"] == "list"
    wrong = cli.run("login", "--api-key", "mb_wrong", "--base-url", cli.server.base_url, env=env)
    assert wrong.returncode == 1 and json.loads(wrong.stderr)["name"] == "invalid_api_key"


def test_doctor_says_what_works(cli: Cli) -> None:
    done = cli.run("doctor")
    report = json.loads(done.stdout)
    checks = {check["check"]: check["ok"] for check in report["checks"]}
    assert checks["api"] is True and checks["database"] is True and checks["key valid"] is True
    assert checks["dns shop.io"] is True
    # serve runs the runner: its heartbeat is there
    assert checks["runner"] is True, report
    assert done.returncode == (0 if report["ok"] else 1)


def test_a_10000_row_import_left_half_way_is_followed_again_not_uploaded_again(
    cli: Cli, tmp_path: Path
) -> None:
    source = tmp_path / "customers.csv"
    with source.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Email", "First Name", "Last Name"])
        for number in range(10_000):
            writer.writerow([f"customer{number}@corp.io", f"C{number}", "Lee"])
        writer.writerow(["not an address", "X", "Y"])
    progress = source.with_name(source.name + ".import-progress.json")
    log = tmp_path / "import.log"
    with log.open("w") as output:
        first = subprocess.Popen(
            [sys.executable, "-m", "mailbridge", "contacts", "import", str(source)],
            env=cli.env, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    deadline = time.monotonic() + 120
    while not progress.exists():
        assert first.poll() is None, log.read_text()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    import_id = json.loads(progress.read_text())["import_id"]
    summary = cli.ok("contacts", "import", str(source))
    assert summary["id"] == import_id and summary["resumed"] is True
    assert summary["status"] == "completed"
    assert summary["counts"] == {"total": 10_001, "created": 10_000, "updated": 0,
                                 "skipped": 0, "failed": 1}  # fmt: skip
    assert summary["errors"][0]["row"] == 10_002
    assert not progress.exists()
    assert [job["id"] for job in cli.ok("contacts", "imports")["data"]] == [import_id]
    listed = cli.run("contacts", "list", "--all", "-q")
    assert len(set(listed.stdout.split())) == 10_000
    exported = cli.run("contacts", "export")
    rows = list(csv.DictReader(exported.stdout.splitlines()))
    assert len(rows) == 10_000 and rows[0]["last_name"] == "Lee"


def _tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout


def test_a_terminal_gets_a_table_and_a_progress_bar(cli: Cli, tmp_path: Path) -> None:
    """In tmux, as a person sees it: a table for a list, a bar while an import runs."""
    source = tmp_path / "people.csv"
    source.write_text("email\n" + "".join(f"p{n}@corp.io\n" for n in range(6_000)))
    session = f"mailbridge-{os.getpid()}"
    exports = " ".join(f"{k}={v!r}" for k, v in cli.env.items() if k.startswith("MAILBRIDGE_"))
    binary = Path(sys.executable).with_name("mailbridge")
    _tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "bash", "--norc")
    try:
        _tmux("send-keys", "-t", session, f"export {exports}; clear", "Enter")
        _tmux("send-keys", "-t", session, f"{binary} domains list", "Enter")
        screen = _wait_for(session, "shop.io")
        assert re.search(r"┃\s*id\s*┃\s*name\s*┃\s*status", screen), screen  # rich's table
        _tmux("send-keys", "-t", session, f"clear; {binary} contacts import {source}", "Enter")
        screen = _wait_for(session, "importing")
        assert re.search(r"importing\s+[━╸╺ ]+\s+\d[\d,]*/6000", screen), screen
        done = _wait_for(session, "completed", timeout=120)
        assert "6000" in done
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False, timeout=30)


def _wait_for(session: str, text: str, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        screen = _tmux("capture-pane", "-p", "-t", session)
        if text in screen:
            return screen
        assert time.monotonic() < deadline, screen
        time.sleep(0.05)


def test_received_mail_downloads_byte_for_byte(cli: Cli, tmp_path: Path) -> None:
    [shop] = cli.ok("domains", "list")["data"]
    assert cli.ok("domains", "update", shop["id"], "--set", "receiving=true")["receiving"] is True
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "ann@corp.io", "hi@shop.io", "Quote"
    message.set_content("Here it is.")
    pdf = bytes(range(256)) * 12
    message.add_attachment(pdf, maintype="application", subtype="pdf", filename="quote.pdf")
    host, _, port = cli.env["MAILBRIDGE_INBOUND_SMTP"].rpartition(":")
    with smtplib.SMTP(host, int(port), timeout=30) as smtp:
        smtp.send_message(message)
    [received] = cli.ok("receiving", "list")["data"]
    [attachment] = cli.ok("receiving", "attachments", received["id"])["data"]
    raw = cli.run("receiving", "download", received["id"], "-o", str(tmp_path / "m.eml"))
    assert raw.returncode == 0, raw.stderr
    assert b"Subject: Quote" in (tmp_path / "m.eml").read_bytes()
    # the attachment to stdout, byte for byte
    done = subprocess.run(
        [sys.executable, "-m", "mailbridge", "receiving", "download", received["id"],
         "--attachment", attachment["id"]],
        env=cli.env, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == pdf
