"""The Resend SDK manages segments on a real `mailbridge serve`."""

from __future__ import annotations

from typing import Any

import pytest
import resend

from tests.acceptance.conftest import Server


def test_sdk_creates_lists_gets_updates_and_removes_segments(sdk: Server) -> None:
    created = resend.Segments.create({"name": "Newsletter"})
    assert created["object"] == "segment" and created["name"] == "Newsletter"
    listed = resend.Segments.list()
    assert [item["id"] for item in listed["data"]] == [created["id"]]
    fetched: dict[str, Any] = dict(resend.Segments.get(created["id"]))
    # made with a name alone: the contacts added to it, as a Resend segment
    assert fetched["name"] == "Newsletter" and fetched["filter"]["status"] == "members_only"
    updated = resend.Segments.update(created["id"], {"name": "Weekly"})
    assert updated["id"] == created["id"] and updated["object"] == "segment"
    assert resend.Segments.get(created["id"])["name"] == "Weekly"

    contact = resend.Contacts.create({"email": "reader@shop.io", "first_name": "Rea"})
    resend.Contacts.Segments.add({"segment_id": created["id"], "contact_id": contact["id"]})
    members = resend.Contacts.list(segment_id=created["id"])
    assert [item["email"] for item in members["data"]] == ["reader@shop.io"]
    mine = resend.Contacts.Segments.list({"contact_id": contact["id"]})
    assert [item["id"] for item in mine["data"]] == [created["id"]]

    removed = resend.Segments.remove(created["id"])
    assert removed["deleted"] is True
    with pytest.raises(resend.exceptions.ResendError) as missing:
        resend.Segments.get(created["id"])
    assert missing.value.code == 404
    assert sdk.stop() == 0
