"""The Resend SDK duplicates a broadcast, lists who it reached and what was clicked, and
reads the team's usage, on a real `mailbridge serve`."""

from __future__ import annotations

import time
from typing import Any

import pytest
import resend

from tests.acceptance.conftest import Server, admin

WAIT = 60.0


def test_sdk_reads_a_broadcasts_recipients_and_the_usage(sdk: Server) -> None:
    admin("domains", "add", "shop.io", "--verified", env=sdk.env)
    with pytest.warns(DeprecationWarning):
        audience = resend.Audiences.create({"name": "Newsletter"})
    resend.Contacts.create({"audience_id": audience["id"], "email": "ann@corp.io"})
    created = resend.Broadcasts.create({
        "audience_id": audience["id"], "from": "Shop <news@shop.io>", "subject": "News",
        "html": "<p>Hello</p>", "name": "November",
    })  # fmt: skip
    resend.Broadcasts.send({"broadcast_id": created["id"]})

    rows: list[Any] = []
    deadline = time.monotonic() + WAIT
    while not rows and time.monotonic() < deadline:  # the runner fans out and delivers
        rows = list(resend.Broadcasts.recipients(created["id"], {"type": "sent"})["data"])
        time.sleep(0.2)
    [row] = rows
    assert row["email"] == "ann@corp.io" and row["count"] == 1
    assert resend.Broadcasts.clicked_links(created["id"])["data"] == []

    copy = resend.Broadcasts.duplicate(created["id"])
    duplicate: dict[str, Any] = dict(resend.Broadcasts.get(copy["id"]))
    assert duplicate["status"] == "draft" and duplicate["name"] == "November (copy)"

    usage: dict[str, Any] = dict(resend.Usage.get())
    assert usage["object"] == "usage" and usage["emails"]["daily"]["used"] >= 1
    assert usage["domains"]["used"] == 1 and usage["contacts"]["used"] == 1
    assert sdk.stop() == 0
