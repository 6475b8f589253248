"""`mailbridge serve` with MAILBRIDGE_LOG_FORMAT=json at debug level: every line of its log
is one JSON object, request lines carry their request and team ids, and none of the keys,
tokens and secrets the run used appears anywhere in it."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import httpx

from tests.acceptance.conftest import admin, free_port, mailbridge, start

UA = {"User-Agent": "acceptance/1.0"}
SMTP_PASSWORD = "Relay-Pa55word-9f3k"
# Well formed, never issued: refused, and must not be logged either.
UNKNOWN_KEY = "mb_ZZZZZZZZZZ_" + "q" * 32


def _wait_for(condition: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def _logged_with(log: Path, field: str) -> bool:
    """A line so far has ``field`` (the last line may be half written)."""
    for text in log.read_text().splitlines():
        try:
            if field in json.loads(text):
                return True
        except json.JSONDecodeError:
            pass
    return False


def test_json_logs_carry_ids_and_no_secrets(environment: dict[str, str], tmp_path: Path) -> None:
    env = {
        **environment,
        "MAILBRIDGE_LOG_FORMAT": "json",
        "MAILBRIDGE_LOG_LEVEL": "debug",
        "MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE": "true",
        # Nobody listens there: deliveries fail and are logged, with the relay's password
        # in the settings of the process.
        "MAILBRIDGE_SMTP_URL": f"smtp://mailer:{SMTP_PASSWORD}@127.0.0.1:{free_port()}",
    }
    team = json.loads(admin("teams", "create", "--name", "acme", env=env).stdout)
    admin("domains", "add", "example-shop.io", "--verified", env=env)
    made_key = admin("keys", "create", "--name", "logs", env=env)
    key = json.loads(made_key.stdout)["token"]
    session = json.loads(
        mailbridge(
            "admin", "members", "add", "--email", "ops@example-shop.io", "--role", "owner",
            env=env,
        ).stdout
    )["session_token"]  # fmt: skip
    assert key.startswith("mb_") and session.startswith("mbs_")

    server = start("serve", env, tmp_path / "serve.log")
    base = server.base_url
    as_key = {**UA, "Authorization": f"Bearer {key}"}
    as_member = {**UA, "Authorization": f"Bearer {session}"}
    secrets = [key, session, SMTP_PASSWORD, UNKNOWN_KEY]
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            # a sane incoming id is kept; an insane one is replaced
            listed = http.get("/api-keys", headers={**as_key, "X-Request-Id": "acceptance-1"})
            assert listed.status_code == 200
            assert listed.headers["x-request-id"] == "acceptance-1"
            odd = http.get("/api-keys", headers={**as_key, "X-Request-Id": "not sane;" * 9})
            assert odd.status_code == 200
            assert odd.headers["x-request-id"] != "acceptance-1"
            assert len(odd.headers["x-request-id"]) == 32

            hook = http.post(
                "/webhooks",
                headers=as_key,
                json={
                    "endpoint": f"http://127.0.0.1:{free_port()}/hook",
                    "events": ["email.sent", "email.delivered", "email.delivery_delayed"],
                },
            )
            assert hook.status_code == 201, hook.text
            secrets.append(hook.json()["signing_secret"])

            # a key made by a member session: its token is a secret too
            made = http.post("/api-keys", headers=as_member, json={"name": "made by a member"})
            assert made.status_code == 201, made.text
            secrets.append(made.json()["token"])
            assert http.get("/members", headers=as_member).status_code == 200

            for to in ("delivered@simulator.mailbridge.dev", "someone@yourmail.io"):
                sent = http.post(
                    "/emails",
                    headers=as_key,
                    json={
                        "from": "Shop <hello@example-shop.io>",
                        "to": [to],
                        "subject": "Hello",
                        "text": "It works.",
                    },
                )
                assert sent.status_code == 200, sent.text

            # errors: an unknown key, the key in a query string, a member's session in
            # a header it does not belong in, a 422
            assert http.get("/emails", headers={**UA, "Authorization": f"Bearer {UNKNOWN_KEY}"}
                            ).status_code in (401, 403)  # fmt: skip
            assert http.get(f"/api-keys?api_key={key}", headers=as_key).status_code in (200, 422)
            assert http.get("/emails", headers={**UA, "X-Api-Key": session}).status_code == 401
            invalid = http.post("/emails", headers=as_key, json={"to": ["a@b.io"]})
            assert invalid.status_code == 422
            assert http.get("/no-such-route", headers=as_key).status_code == 404

        # the runner has tried the relay and the webhook by now
        _wait_for(lambda: _logged_with(server.log, "email_id"))
        _wait_for(lambda: _logged_with(server.log, "webhook_delivery_id"))
        assert server.stop(signal.SIGTERM) == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()

    text = server.log.read_text()
    lines = [json.loads(line) for line in text.splitlines()]  # every line parses
    assert all(isinstance(line, dict) for line in lines)
    for line in lines:
        assert {"timestamp", "level", "logger", "message"} <= line.keys(), line
        assert line["timestamp"].endswith("Z")

    access = [line for line in lines if line["logger"] == "uvicorn.access"]
    assert access, "uvicorn's access lines go through the JSON rendering"
    assert all(line.get("request_id") for line in access)
    first = [line for line in access if line["request_id"] == "acceptance-1"]
    assert first and first[0]["team_id"] == team["id"]
    assert first[0]["method"] == "GET" and first[0]["status"] == 200
    refused = [line for line in access if line.get("status") in (401, 403)]
    assert refused and all("team_id" not in line for line in refused)
    assert any(line.get("status") == 422 and line.get("team_id") for line in access)
    assert any(line.get("email_id") for line in lines)
    assert any(line.get("webhook_delivery_id") for line in lines)

    for secret in secrets:
        assert secret not in text, f"{secret[:6]}… appears in the log"
