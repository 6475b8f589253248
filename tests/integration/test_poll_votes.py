"""Vote links: one vote a voter under any number of concurrent clicks, changes only with
allow_change, nothing on a closed poll, nothing for a forged, foreign or dead link, and
nothing for a HEAD; the votes listed."""

from __future__ import annotations

import asyncio
import base64
from datetime import timedelta

import pytest

from mailbridge.services.polls import Voter
from mailbridge.services.polls._links import vote_url
from tests.integration.poll_setup import (
    click,
    counts,
    create_poll,
    get_poll,
    path_of,
    signed_link,
    vote_count,
    vote_rows,
    voted_events,
)
from tests.integration.sending import START, Sending
from tests.integration.test_auth import assert_error


async def contact(sending: Sending, email: str) -> str:
    response = await sending.client.post(
        "/contacts", json={"email": email}, headers=sending.tenant.headers
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def test_a_click_records_a_vote_and_lands_on_a_thank_you_page(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    poll_id = await create_poll(sending.client, sending.tenant.headers)
    ann = await contact(sending, "Ann@Corp.io")
    link = await signed_link(context, team_id, poll_id, 1, contact_id=ann, email="x@y.z")

    page = await sending.client.get(path_of(link), headers={})  # no key, no User-Agent
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Thank you" in page.text and "Friday" in page.text
    assert "no-store" in page.headers["cache-control"]
    [vote] = await vote_rows(context, poll_id)
    assert (vote.voter, vote.contact_id, vote.email, vote.option) == (ann, ann, "ann@corp.io", 1)
    assert await voted_events(context, team_id) == [
        {"poll_id": poll_id, "option": 1, "label": "Friday", "contact_id": ann,
         "email": "ann@corp.io"},
    ]  # fmt: skip
    found = await get_poll(sending.client, sending.tenant.headers, poll_id)
    assert counts(found) == [0, 1] and found["total_votes"] == 1

    listed = await sending.client.get(f"/polls/{poll_id}/votes", headers=sending.tenant.headers)
    assert listed.json() == {"object": "list", "has_more": False, "data": [{
        "object": "poll_vote", "id": vote.id, "poll_id": poll_id, "contact_id": ann,
        "email": "ann@corp.io", "option": 1, "label": "Friday",
        "voted_at": "2026-11-02T09:30:00.000Z", "created_at": "2026-11-02T09:30:00.000Z",
    }]}  # fmt: skip


async def test_an_address_votes_once_whatever_its_case(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    poll_id = await create_poll(sending.client, sending.tenant.headers)
    first = await signed_link(context, team_id, poll_id, 0, email="Bob@Corp.io")
    again = await signed_link(context, team_id, poll_id, 1, email="bob@corp.io")
    assert "Thank you" in (await click(sending.client, first)).text
    kept = await click(sending.client, again)
    assert "already counted" in kept.text and "Monday" in kept.text
    [vote] = await vote_rows(context, poll_id)
    assert (vote.voter, vote.contact_id, vote.email, vote.option) == (
        "bob@corp.io", None, "bob@corp.io", 0,
    )  # fmt: skip
    assert len(await voted_events(context, team_id)) == 1


async def test_twenty_concurrent_clicks_count_once(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    poll_id = await create_poll(sending.client, sending.tenant.headers)
    ann = await contact(sending, "ann@corp.io")
    link = await signed_link(context, team_id, poll_id, 0, contact_id=ann)
    pages = await asyncio.gather(*(click(sending.client, link) for _ in range(20)))
    assert [page.status_code for page in pages] == [200] * 20
    assert sum("Thank you" in page.text for page in pages) == 1
    assert sum("already counted" in page.text for page in pages) == 19
    assert [vote.option for vote in await vote_rows(context, poll_id)] == [0]
    assert len(await voted_events(context, team_id)) == 1

    # Twenty clicks spread over both options of another voter: one vote still.
    links = [
        await signed_link(context, team_id, poll_id, option, email="bob@corp.io")
        for option in (0, 1)
    ]
    pages = await asyncio.gather(*(click(sending.client, links[n % 2]) for n in range(20)))
    assert [page.status_code for page in pages] == [200] * 20
    assert sum("Thank you" in page.text for page in pages) == 1
    assert len(await vote_rows(context, poll_id)) == 2
    found = await get_poll(sending.client, sending.tenant.headers, poll_id)
    assert found["total_votes"] == 2
    assert len(await voted_events(context, team_id)) == 2


async def test_concurrent_changes_with_allow_change_leave_one_vote(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    poll_id = await create_poll(
        sending.client, sending.tenant.headers, options=["a", "b", "c"], allow_change=True
    )
    links = [await signed_link(context, team_id, poll_id, n, email="cy@corp.io") for n in range(3)]
    pages = await asyncio.gather(*(click(sending.client, links[n % 3]) for n in range(20)))
    assert [page.status_code for page in pages] == [200] * 20
    [vote] = await vote_rows(context, poll_id)
    events = await voted_events(context, team_id)
    # Every event is a recorded or changed vote; the last one is the vote that stands.
    assert 1 <= len(events) <= 20 and events[-1]["option"] == vote.option
    assert sum(counts(await get_poll(sending.client, sending.tenant.headers, poll_id))) == 1


async def test_allow_change_lets_a_later_click_change_the_vote(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    headers = sending.tenant.headers
    poll_id = await create_poll(sending.client, headers, allow_change=True)
    monday, friday = [
        await signed_link(context, team_id, poll_id, option, email="ann@corp.io")
        for option in (0, 1)
    ]
    assert "Thank you" in (await click(sending.client, monday)).text
    sending.clock.advance(timedelta(minutes=5))
    changed = await click(sending.client, friday)
    assert "changed" in changed.text and "Friday" in changed.text
    same = await click(sending.client, friday)  # the same choice again: nothing changes
    assert "already counted" in same.text
    assert counts(await get_poll(sending.client, headers, poll_id)) == [0, 1]
    assert [event["option"] for event in await voted_events(context, team_id)] == [0, 1]
    [vote] = (await sending.client.get(f"/polls/{poll_id}/votes", headers=headers)).json()["data"]
    assert (vote["option"], vote["label"]) == (1, "Friday")
    assert (vote["created_at"], vote["voted_at"]) == (
        "2026-11-02T09:30:00.000Z", "2026-11-02T09:35:00.000Z",
    )  # fmt: skip


async def test_a_closed_poll_records_nothing(sending: Sending) -> None:
    context, team_id, headers = sending.context, sending.tenant.team_id, sending.tenant.headers
    by_hand = await create_poll(sending.client, headers)
    await sending.client.patch(f"/polls/{by_hand}", json={"closed": True}, headers=headers)
    by_time = await create_poll(
        sending.client, headers, closes_at=(START + timedelta(hours=1)).isoformat()
    )
    sending.clock.advance(timedelta(hours=1))
    for poll_id in (by_hand, by_time):
        link = await signed_link(context, team_id, poll_id, 0)
        page = await click(sending.client, link)
        assert page.status_code == 200 and "closed" in page.text
        assert await vote_rows(context, poll_id) == []
    assert await voted_events(context, team_id) == []


async def test_a_head_request_never_votes(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    poll_id = await create_poll(sending.client, sending.tenant.headers)
    link = await signed_link(context, team_id, poll_id, 0)
    looked = await sending.client.head(path_of(link))
    assert looked.status_code == 200
    forged = await sending.client.head(path_of(link)[:-2] + "xx")
    assert forged.status_code == 404
    assert await vote_rows(context, poll_id) == [] and await voted_events(context, team_id) == []


def _tampered(token: str) -> list[str]:
    """The token with each part changed: each byte of the payload, the MAC, the layout."""
    payload_text, mac = token.split(".")
    payload = base64.urlsafe_b64decode(payload_text + "=" * (-len(payload_text) % 4))
    changed = []
    for index in range(len(payload)):
        altered = bytearray(payload)
        altered[index] = (altered[index] + 1) % 256
        encoded = base64.urlsafe_b64encode(bytes(altered)).rstrip(b"=").decode()
        changed.append(f"{encoded}.{mac}")
    flipped = mac[:-1] + ("A" if mac[-1] != "A" else "B")
    return [*changed, f"{payload_text}.{flipped}", payload_text, f"{payload_text}.", token + "x"]


async def test_a_forged_link_counts_nothing(sending: Sending) -> None:
    context, team_id, headers = sending.context, sending.tenant.team_id, sending.tenant.headers
    poll_id = await create_poll(sending.client, headers)
    ann = await contact(sending, "ann@corp.io")
    link = await signed_link(context, team_id, poll_id, 0, contact_id=ann)
    base, token = link.rsplit("/", 1)
    for forged in _tampered(token):
        page = await sending.client.get(path_of(f"{base}/{forged}"))
        assert page.status_code == 404, forged
        assert page.headers["content-type"].startswith("text/html") and "not found" in page.text
    # Signed with another secret; a path beneath the link.
    other = vote_url(
        context.settings.public_url, b"not the secret", poll_id, team_id, 0, Voter.of(ann, "")
    )
    assert (await click(sending.client, other)).status_code == 404
    assert (await sending.client.get(path_of(link) + "/more")).status_code == 404
    assert await vote_rows(context, poll_id) == [] and await voted_events(context, team_id) == []


@pytest.mark.parametrize("case", ["other team", "deleted poll", "no such option", "gone contact"])
async def test_a_link_to_nothing_of_this_team_counts_nothing(sending: Sending, case: str) -> None:
    context, team_id, headers = sending.context, sending.tenant.team_id, sending.tenant.headers
    poll_id = await create_poll(sending.client, headers)
    ann = await contact(sending, "ann@corp.io")
    if case == "other team":  # signed by us, but naming a team the poll is not of
        other = await sending.tenants.create()
        link = await signed_link(context, other.team_id, poll_id, 0, contact_id=ann)
    elif case == "deleted poll":
        link = await signed_link(context, team_id, poll_id, 0, contact_id=ann)
        await sending.client.delete(f"/polls/{poll_id}", headers=headers)
    elif case == "no such option":
        link = await signed_link(context, team_id, poll_id, 2, contact_id=ann)
    else:
        link = await signed_link(context, team_id, poll_id, 0, contact_id=ann)
        assert (await sending.client.delete(f"/contacts/{ann}", headers=headers)).is_success
    page = await click(sending.client, link)
    assert page.status_code == 404 and "not found" in page.text
    assert await vote_count(context) == 0 and await voted_events(context, team_id) == []


async def test_votes_are_listed_newest_first_a_page_at_a_time(sending: Sending) -> None:
    context, team_id, headers = sending.context, sending.tenant.team_id, sending.tenant.headers
    poll_id = await create_poll(sending.client, headers)
    for n in range(3):
        link = await signed_link(context, team_id, poll_id, n % 2, email=f"v{n}@corp.io")
        await click(sending.client, link)
        sending.clock.advance(timedelta(seconds=1))
    first = await sending.client.get(f"/polls/{poll_id}/votes?limit=2", headers=headers)
    assert first.json()["has_more"] is True
    assert [vote["email"] for vote in first.json()["data"]] == ["v2@corp.io", "v1@corp.io"]
    after = first.json()["data"][-1]["id"]
    rest = await sending.client.get(f"/polls/{poll_id}/votes?after={after}", headers=headers)
    assert [vote["email"] for vote in rest.json()["data"]] == ["v0@corp.io"]
    other_poll = await create_poll(sending.client, headers)
    foreign_cursor = await sending.client.get(
        f"/polls/{other_poll}/votes?after={after}", headers=headers
    )
    assert_error(foreign_cursor, 422, "validation_error")
