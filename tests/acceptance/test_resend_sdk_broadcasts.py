"""The Resend SDK sends a broadcast to an audience it made, on a real `mailbridge serve`.

SDK 2.x's ``Audiences.create`` makes a segment (``POST /segments``, with a deprecation
warning) and names it as the audience of its contacts and broadcasts.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
import resend
import resend.exceptions

from tests.acceptance.conftest import Server, admin

SENT_TIMEOUT = 60.0


@pytest.fixture
def sender(sdk: Server) -> Server:
    admin("domains", "add", "shop.io", "--verified", env=sdk.env)
    return sdk


def wait_until_sent(broadcast_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + SENT_TIMEOUT
    while True:
        found: dict[str, Any] = dict(resend.Broadcasts.get(broadcast_id))
        if found["status"] == "sent" or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_sdk_creates_sends_and_removes_a_broadcast(sender: Server) -> None:
    with pytest.warns(DeprecationWarning):
        audience = resend.Audiences.create({"name": "Newsletter"})
    for address in ("ann@corp.io", "bob@corp.io"):
        resend.Contacts.create({"audience_id": audience["id"], "email": address})
    listed = resend.Contacts.list(audience_id=audience["id"])
    assert sorted(item["email"] for item in listed["data"]) == ["ann@corp.io", "bob@corp.io"]

    created = resend.Broadcasts.create({
        "audience_id": audience["id"], "from": "Shop <news@shop.io>", "subject": "News",
        "html": "<p>Hello</p>", "text": "Hello", "name": "November", "reply_to": "help@shop.io",
        "preview_text": "Inside: news",
    })  # fmt: skip
    broadcast_id = created["id"]
    draft: dict[str, Any] = dict(resend.Broadcasts.get(broadcast_id))
    assert draft["object"] == "broadcast" and draft["status"] == "draft"
    assert draft["segment_id"] == audience["id"] and draft["from"] == "Shop <news@shop.io>"
    assert draft["reply_to"] == ["help@shop.io"] and draft["preview_text"] == "Inside: news"
    updated = resend.Broadcasts.update({"broadcast_id": broadcast_id, "subject": "Big news"})
    assert updated["id"] == broadcast_id
    assert [item["id"] for item in resend.Broadcasts.list()["data"]] == [broadcast_id]

    sent = resend.Broadcasts.send({"broadcast_id": broadcast_id})
    assert sent["id"] == broadcast_id
    done = wait_until_sent(broadcast_id)
    assert done["status"] == "sent" and done["sent_at"] is not None
    with pytest.raises(resend.exceptions.ResendError) as too_late:
        resend.Broadcasts.update({"broadcast_id": broadcast_id, "subject": "Again"})
    assert too_late.value.code == 422

    answer = httpx.get(
        f"{sender.base_url}/emails",
        headers={"Authorization": f"Bearer {resend.api_key}", "User-Agent": "acceptance"},
    )
    assert answer.status_code == 200, answer.text
    news = [item for item in answer.json()["data"] if item["subject"] == "Big news"]
    assert sorted(address for item in news for address in item["to"]) == [
        "ann@corp.io",
        "bob@corp.io",
    ]

    removed = resend.Broadcasts.remove(broadcast_id)
    assert (removed["object"], removed["id"], removed["deleted"]) == (
        "broadcast",
        broadcast_id,
        True,
    )
    with pytest.raises(resend.exceptions.ResendError) as missing:
        resend.Broadcasts.get(broadcast_id)
    assert missing.value.code == 404
    assert sender.stop() == 0
