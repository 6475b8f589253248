"""The Resend SDK authors an automation on `mailbridge serve` as it does on Resend: no
`domain` in the body (it is derived), an event starts a run, and the runs routes
answer the SDK's shapes (started_at, created_at on step records, a status list)."""

from __future__ import annotations

import time
from typing import Any

import resend

from tests.acceptance.conftest import Server, admin

STEPS: list[Any] = [
    {"key": "start", "type": "trigger", "config": {"event_name": "user.signed_up"}},
    {"key": "welcome", "type": "send_email", "config": {"template": {"id": "welcome"}}},
    {"key": "pause", "type": "delay", "config": {"duration": "2 days"}},
]
CONNECTIONS: list[Any] = [
    {"from": "start", "to": "welcome"},
    {"from": "welcome", "to": "pause", "type": "default"},
]


def _runs(automation_id: str, status: str) -> list[dict[str, Any]]:
    listed = resend.Automations.Runs.list(automation_id, {"status": status})
    return [dict(item) for item in listed["data"]]


def test_sdk_authors_an_automation_and_reads_its_runs(sdk: Server) -> None:
    admin("domains", "add", "shop.io", "--verified", env=sdk.env)
    template = resend.Templates.create({
        "name": "Welcome", "alias": "welcome", "from": "Shop <news@shop.io>",
        "subject": "Welcome", "html": "<p>Hi {{{contact.first_name|there}}}</p>",
    })  # fmt: skip
    resend.Templates.publish(template["id"])

    created = resend.Automations.create(
        {"name": "Onboarding", "steps": STEPS, "connections": CONNECTIONS, "status": "enabled"}
    )
    assert created["object"] == "automation"
    automation: dict[str, Any] = dict(resend.Automations.get(created["id"]))
    assert automation["status"] == "enabled" and automation["domain"] == "shop.io"
    assert [step["key"] for step in automation["steps"]] == ["start", "welcome", "pause"]
    assert [item["id"] for item in resend.Automations.list({"status": "enabled"})["data"]] == [
        created["id"]
    ]
    assert resend.Automations.list({"status": "disabled"})["data"] == []

    resend.Events.send({"event": "user.signed_up", "email": "ann@corp.io"})
    deadline = time.monotonic() + 60
    while not (runs := _runs(created["id"], "running,completed")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(runs) == 1 and runs[0]["status"] == "running"
    assert runs[0]["started_at"] == runs[0]["created_at"] and runs[0]["completed_at"] is None
    assert _runs(created["id"], "failed,cancelled") == []
    run: dict[str, Any] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the send step done, the delay begun
        run = dict(resend.Automations.Runs.get(created["id"], runs[0]["id"]))
        if [step["key"] for step in run["steps"]] == ["welcome", "pause"]:
            break
        time.sleep(0.2)
    assert [(step["key"], step["type"]) for step in run["steps"]] == [
        ("welcome", "send_email"), ("pause", "delay"),
    ]  # fmt: skip
    assert all(step["created_at"] == step["started_at"] for step in run["steps"])

    updated = resend.Automations.update({"automation_id": created["id"], "name": "Renamed"})
    assert updated["id"] == created["id"]
    copy = resend.Automations.duplicate(created["id"])
    assert dict(resend.Automations.get(copy["id"]))["status"] == "disabled"
    stopped = resend.Automations.stop(created["id"])
    assert stopped["id"] == created["id"]
    assert _runs(created["id"], "cancelled")[0]["id"] == runs[0]["id"]
    removed = resend.Automations.remove(copy["id"])
    assert removed["deleted"] is True
    assert sdk.stop() == 0
