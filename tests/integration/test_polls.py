"""Polls over HTTP: create, read with counts, list, change, close, delete; bad input is the
spec's envelope; another team's poll is not found; a view-only member only reads."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
import pytest

from mailbridge.services.accounts._teams import Role
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.poll_setup import click, counts, create_poll, get_poll, signed_link
from tests.integration.sending import START, Sending
from tests.integration.test_auth import assert_error


async def test_a_poll_is_created_read_listed_changed_and_deleted(sending: Sending) -> None:
    client, headers = sending.client, sending.tenant.headers
    closes_at = (START + timedelta(days=2)).isoformat()
    poll_id = await create_poll(
        client, headers, question="  Which day?  ", options=[" Monday", "Friday "],
        closes_at=closes_at, allow_change=True,
    )  # fmt: skip
    found = await get_poll(client, headers, poll_id)
    assert found == {
        "object": "poll", "id": poll_id, "question": "Which day?",
        "options": ["Monday", "Friday"], "allow_change": True,
        "closes_at": "2026-11-04T09:30:00.000Z", "closed": False, "closed_at": None,
        "results": [{"option": 0, "label": "Monday", "votes": 0},
                    {"option": 1, "label": "Friday", "votes": 0}],
        "total_votes": 0, "created_at": "2026-11-02T09:30:00.000Z",
        "updated_at": "2026-11-02T09:30:00.000Z",
    }  # fmt: skip
    plain = await create_poll(client, headers)
    assert (await get_poll(client, headers, plain))["allow_change"] is False

    listed = await client.get("/polls?limit=1", headers=headers)
    assert listed.status_code == 200, listed.text
    assert listed.json()["object"] == "list" and listed.json()["has_more"] is True
    [newest] = listed.json()["data"]
    assert newest["id"] == plain and newest["total_votes"] == 0
    rest = await client.get(f"/polls?limit=5&after={plain}", headers=headers)
    assert [item["id"] for item in rest.json()["data"]] == [poll_id]

    changed = await client.patch(
        f"/polls/{poll_id}",
        json={"question": "Which weekday?", "options": ["Mon", "Tue", "Fri"], "closes_at": None},
        headers=headers,
    )
    assert changed.json() == {"object": "poll", "id": poll_id}
    found = await get_poll(client, headers, poll_id)
    assert (found["question"], found["options"], found["closes_at"]) == (
        "Which weekday?", ["Mon", "Tue", "Fri"], None,
    )  # fmt: skip
    assert counts(found) == [0, 0, 0]

    deleted = await client.delete(f"/polls/{poll_id}", headers=headers)
    assert deleted.json() == {"object": "poll", "id": poll_id, "deleted": True}
    assert_error(await client.get(f"/polls/{poll_id}", headers=headers), 404, "not_found")
    assert_error(await client.delete(f"/polls/{poll_id}", headers=headers), 404, "not_found")


async def test_closing_by_hand_or_by_time_and_reopening(sending: Sending) -> None:
    client, headers = sending.client, sending.tenant.headers
    poll_id = await create_poll(client, headers)
    closed = await client.patch(f"/polls/{poll_id}", json={"closed": True}, headers=headers)
    assert closed.status_code == 200, closed.text
    found = await get_poll(client, headers, poll_id)
    assert found["closed"] is True and found["closed_at"] == "2026-11-02T09:30:00.000Z"
    await client.patch(f"/polls/{poll_id}", json={"closed": False}, headers=headers)
    assert (await get_poll(client, headers, poll_id))["closed"] is False

    in_an_hour = (START + timedelta(hours=1)).isoformat()
    await client.patch(f"/polls/{poll_id}", json={"closes_at": in_an_hour}, headers=headers)
    assert (await get_poll(client, headers, poll_id))["closed"] is False
    sending.clock.advance(timedelta(hours=1))
    assert (await get_poll(client, headers, poll_id))["closed"] is True
    reopen = await client.patch(f"/polls/{poll_id}", json={"closed": False}, headers=headers)
    assert_error(reopen, 422, "validation_error")
    later = (START + timedelta(days=1)).isoformat()
    reopened = await client.patch(
        f"/polls/{poll_id}", json={"closed": False, "closes_at": later}, headers=headers
    )
    assert reopened.status_code == 200, reopened.text
    assert (await get_poll(client, headers, poll_id))["closed"] is False


async def test_question_and_options_are_fixed_once_a_vote_exists(sending: Sending) -> None:
    client, headers = sending.client, sending.tenant.headers
    poll_id = await create_poll(client, headers)
    link = await signed_link(sending.context, sending.tenant.team_id, poll_id, 1)
    assert (await click(client, link)).status_code == 200
    for change in ({"question": "Another?"}, {"options": ["Monday", "Sunday"]}):
        refused = await client.patch(f"/polls/{poll_id}", json=change, headers=headers)
        assert_error(refused, 422, "validation_error")
    # Repeating them as they are, closes_at and allow_change still may.
    same = {"question": "Which day suits you?", "options": ["Monday", "Friday"]}
    later = (START + timedelta(days=3)).isoformat()
    answer = await client.patch(
        f"/polls/{poll_id}", json={**same, "allow_change": True, "closes_at": later},
        headers=headers,
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    found = await get_poll(client, headers, poll_id)
    assert found["allow_change"] is True and counts(found) == [0, 1]
    assert found["total_votes"] == 1


BAD_BODIES: list[dict[str, Any]] = [
    {"options": ["a", "b"]},  # no question
    {"question": "q?"},  # no options
    {"question": "", "options": ["a", "b"]},
    {"question": "   ", "options": ["a", "b"]},
    {"question": "q" * 501, "options": ["a", "b"]},
    {"question": "line\nbreak?", "options": ["a", "b"]},
    {"question": "q?", "options": ["only one"]},
    {"question": "q?", "options": [str(n) for n in range(11)]},
    {"question": "q?", "options": ["a", " "]},
    {"question": "q?", "options": ["Yes", "yes "]},
    {"question": "q?", "options": ["a", "b" * 201]},
    {"question": "q?", "options": ["a", 2]},
    {"question": "q?", "options": "a,b"},
    {"question": "q?", "options": ["a", "\ud83d"]},
    {"question": "q?", "options": ["a", "b"], "closes_at": "2026-11-01T00:00:00Z"},
    {"question": "q?", "options": ["a", "b"], "closes_at": "next week-ish"},
    {"question": "q?", "options": ["a", "b"], "closes_at": "9999-12-31T23:59:59-01:00"},
    {"question": "q?", "options": ["a", "b"], "allow_change": "yes"},
    {"question": ["q?"], "options": ["a", "b"]},
]


@pytest.mark.parametrize("body", BAD_BODIES)
async def test_bad_input_is_the_spec_envelope(sending: Sending, body: dict[str, Any]) -> None:
    response = await sending.client.post(
        "/polls", content=json.dumps(body),  # ASCII: a lone surrogate travels escaped
        headers={**sending.tenant.headers, "Content-Type": "application/json"},
    )  # fmt: skip
    assert response.status_code == 422, response.text
    assert response.json()["name"] in ("validation_error", "missing_required_field")
    assert set(response.json()) == {"statusCode", "name", "message"}


async def test_bad_changes_and_bodies_are_refused(sending: Sending) -> None:
    client, headers = sending.client, sending.tenant.headers
    poll_id = await create_poll(client, headers)
    for change in (
        {"closes_at": "2020-01-01T00:00:00Z"}, {"options": ["a"]}, {"question": None},
        {"closed": "yes"}, {"allow_change": None}, {"options": ["a", "A"]},
    ):  # fmt: skip
        answer = await client.patch(f"/polls/{poll_id}", json=change, headers=headers)
        assert_error(answer, 422, "validation_error")
    for raw in (b"", b"{", b"[]", b"null"):
        answer = await client.post(
            "/polls", content=raw, headers={**headers, "Content-Type": "application/json"}
        )
        assert answer.status_code == 422, answer.text
    assert_error(await client.get("/polls?limit=0", headers=headers), 422, "validation_error")
    assert_error(await client.get("/polls?after=nope", headers=headers), 422, "validation_error")


async def test_another_teams_poll_is_not_found(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    other = await tenants.create()
    theirs = await create_poll(client, other.headers)
    for response in (
        await client.get(f"/polls/{theirs}", headers=tenant.headers),
        await client.get(f"/polls/{theirs}/votes", headers=tenant.headers),
        await client.patch(f"/polls/{theirs}", json={"closed": True}, headers=tenant.headers),
        await client.delete(f"/polls/{theirs}", headers=tenant.headers),
        await client.get("/polls/not-an-id", headers=tenant.headers),
        await client.get(f"/polls/{theirs[:-1]}0/votes", headers=tenant.headers),
    ):
        assert_error(response, 404, "not_found")
    listed = await client.get(f"/polls?after={theirs}", headers=tenant.headers)
    assert_error(listed, 422, "validation_error")
    assert (await client.get("/polls", headers=tenant.headers)).json()["data"] == []
    assert (await get_poll(client, other.headers, theirs))["closed"] is False


async def test_a_view_only_member_reads_polls_but_never_writes(
    client: httpx.AsyncClient, tenants: Tenants, tenant: Tenant
) -> None:
    poll_id = await create_poll(client, tenant.headers)
    viewer = bearer(await tenants.member(tenant, Role.VIEW_ONLY))
    assert (await client.get(f"/polls/{poll_id}", headers=viewer)).status_code == 200
    assert (await client.get(f"/polls/{poll_id}/votes", headers=viewer)).status_code == 200
    assert (await client.get("/polls", headers=viewer)).status_code == 200
    for response in (
        await client.post("/polls", json={"question": "q?", "options": ["a", "b"]}, headers=viewer),
        await client.post("/polls", content=b"{", headers=viewer),
        await client.patch(f"/polls/{poll_id}", json={"closed": True}, headers=viewer),
        await client.delete(f"/polls/{poll_id}", headers=viewer),
    ):
        assert_error(response, 403, "view_only_member")
    found = await get_poll(client, tenant.headers, poll_id)
    assert found["closed"] is False
    admin = bearer(await tenants.member(tenant, Role.ADMIN))
    assert (
        await client.patch(f"/polls/{poll_id}", json={"closed": True}, headers=admin)
    ).is_success
