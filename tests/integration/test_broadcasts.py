"""Broadcasts: Resend's shapes over the campaigns service; segment ids where audiences go."""

from __future__ import annotations

from typing import Any

from mailbridge.services import email as emails
from mailbridge.services.email._reports import BouncedAddress
from mailbridge.storage.tables import Campaign
from tests.integration.campaign_setup import SENDER, Campaigns
from tests.integration.test_auth import assert_error

LISTED = {
    "id", "name", "audience_id", "segment_id", "topic_id", "status", "created_at",
    "scheduled_at", "sent_at",
}  # fmt: skip


async def create(shop: Campaigns, **fields: Any) -> str:
    body: dict[str, Any] = {
        "name": "November news", "from": SENDER, "subject": "Hello", "html": "<p>Hi</p>",
        "text": "Hi", "reply_to": "help@shop.io", "preview_text": "Big news inside",
        "audience_id": shop.audience_id,
    }  # fmt: skip
    body.update(fields)
    answer = await shop.client.post("/broadcasts", json=body, headers=shop.headers)
    assert answer.status_code == 201, answer.text
    assert set(answer.json()) == {"id"}
    return str(answer.json()["id"])


async def get(shop: Campaigns, broadcast_id: str) -> dict[str, Any]:
    answer = await shop.client.get(f"/broadcasts/{broadcast_id}", headers=shop.headers)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


async def segment(shop: Campaigns, name: str = "Joined") -> str:
    answer = await shop.client.post(
        "/segments",
        json={"name": name, "audience_id": shop.audience_id, "filter": {"status": "members_only"}},
        headers=shop.headers,
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


async def test_a_broadcast_is_created_read_listed_updated_and_removed(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    broadcast_id = await create(shop)
    found = await get(shop, broadcast_id)
    assert found == {
        "object": "broadcast", "id": broadcast_id, "name": "November news",
        "audience_id": shop.audience_id, "segment_id": None, "topic_id": None, "from": SENDER,
        "subject": "Hello", "reply_to": ["help@shop.io"], "preview_text": "Big news inside",
        "html": "<p>Hi</p>", "text": "Hi", "status": "draft",
        "created_at": found["created_at"], "scheduled_at": None, "sent_at": None,
    }  # fmt: skip
    listed = await shop.client.get("/broadcasts", headers=shop.headers)
    assert listed.status_code == 200, listed.text
    assert listed.json()["object"] == "list" and listed.json()["has_more"] is False
    [item] = listed.json()["data"]
    assert set(item) == LISTED
    assert (item["id"], item["status"]) == (broadcast_id, "draft")

    # The SDK sends the id in the body too; `{}` bodies come with its GET and DELETE.
    patched = await shop.client.patch(
        f"/broadcasts/{broadcast_id}",
        json={"broadcast_id": broadcast_id, "subject": "Bigger news"},
        headers=shop.headers,
    )
    assert patched.status_code == 200, patched.text
    assert patched.json() == {"id": broadcast_id}
    assert (await get(shop, broadcast_id))["subject"] == "Bigger news"
    removed = await shop.client.request(
        "DELETE", f"/broadcasts/{broadcast_id}", json={}, headers=shop.headers
    )
    assert removed.status_code == 200, removed.text
    assert removed.json() == {"object": "broadcast", "id": broadcast_id, "deleted": True}
    gone = await shop.client.request(
        "GET", f"/broadcasts/{broadcast_id}", json={}, headers=shop.headers
    )
    assert_error(gone, 404, "not_found")


async def test_a_sent_broadcast_reaches_its_audience_and_cannot_be_updated(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io", "bob@corp.io")
    broadcast_id = await create(shop)
    sent = await shop.client.post(
        f"/broadcasts/{broadcast_id}/send", json={"broadcast_id": broadcast_id},
        headers=shop.headers,
    )  # fmt: skip
    assert sent.status_code == 200, sent.text
    assert sent.json() == {"id": broadcast_id}
    assert (await get(shop, broadcast_id))["status"] == "queued"
    await shop.run()
    assert sorted(email.to[0] for email in await shop.emails(broadcast_id)) == [
        "ann@corp.io",
        "bob@corp.io",
    ]
    found = await get(shop, broadcast_id)
    assert found["status"] == "sent" and found["sent_at"] is not None

    patched = await shop.client.patch(
        f"/broadcasts/{broadcast_id}", json={"subject": "Too late"}, headers=shop.headers
    )
    assert_error(patched, 422, "validation_error")
    again = await shop.client.post(f"/broadcasts/{broadcast_id}/send", headers=shop.headers)
    assert_error(again, 422, "validation_error")


async def test_statuses_are_told_in_resends_words(shop_campaigns: Campaigns) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io")
    scheduled = await create(shop)
    answer = await shop.client.post(
        f"/broadcasts/{scheduled}/send", json={"scheduled_at": "in 1 hour"}, headers=shop.headers
    )
    assert answer.status_code == 200, answer.text
    found = await get(shop, scheduled)
    assert found["status"] == "scheduled" and found["scheduled_at"] is not None

    recurring = await create(shop, recurrence="FREQ=DAILY;BYHOUR=10;BYMINUTE=0;BYSECOND=0")
    assert (
        await shop.client.post(f"/broadcasts/{recurring}/send", headers=shop.headers)
    ).is_success
    assert (await shop.campaign(recurring)).status == "recurring"
    assert (await get(shop, recurring))["status"] == "scheduled"

    sending = await create(shop)
    async with shop.context.database.session() as session:
        row = await session.get(Campaign, sending)
        assert row is not None
        row.status = "sending"
        await session.commit()
    assert (await get(shop, sending))["status"] == "queued"

    canceled = await shop.client.post(f"/broadcasts/{scheduled}/cancel", headers=shop.headers)
    assert canceled.json() == {"object": "broadcast", "id": scheduled}
    assert (await get(shop, scheduled))["status"] == "canceled"

    # Removing a scheduled broadcast cancels it first, as Resend does.
    removed = await shop.client.delete(f"/broadcasts/{recurring}", headers=shop.headers)
    assert removed.json() == {"object": "broadcast", "id": recurring, "deleted": True}
    assert_error(await shop.client.get(f"/broadcasts/{recurring}", headers=shop.headers), 404,
                 "not_found")  # fmt: skip


async def test_a_broadcast_can_be_sent_on_creation_or_leaves_nothing(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io")
    broadcast_id = await create(shop, send=True, scheduled_at="in 2 hours")
    assert (await get(shop, broadcast_id))["status"] == "scheduled"
    refused = await shop.client.post(
        "/broadcasts",
        json={"from": "news@elsewhere.io", "subject": "x", "html": "<p>x</p>",
              "audience_id": shop.audience_id, "send": True},
        headers=shop.headers,
    )  # fmt: skip
    assert_error(refused, 422, "validation_error")
    listed = await shop.client.get("/broadcasts", headers=shop.headers)
    assert [item["id"] for item in listed.json()["data"]] == [broadcast_id]


async def test_a_broadcast_to_a_segment_alone_reaches_its_members(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    ann, _bob = await shop.contacts("ann@corp.io", "bob@corp.io")
    segment_id = await segment(shop)
    added = await shop.client.post(f"/segments/{segment_id}/contacts/{ann}", headers=shop.headers)
    assert added.status_code == 200, added.text
    broadcast_id = await create(shop, audience_id=None, segment_id=segment_id)
    found = await get(shop, broadcast_id)
    assert (found["segment_id"], found["audience_id"]) == (segment_id, shop.audience_id)
    sent = await shop.client.post(f"/broadcasts/{broadcast_id}/send", headers=shop.headers)
    assert sent.status_code == 200, sent.text
    await shop.run()
    assert [email.to[0] for email in await shop.emails(broadcast_id)] == ["ann@corp.io"]


async def test_contacts_added_through_a_segment_id_join_its_audience_and_it(
    shop_campaigns: Campaigns,
) -> None:
    """SDK 2.x: ``Audiences.create`` makes a segment; contacts and broadcasts name it as
    an audience."""
    shop = shop_campaigns
    await shop.contacts("outsider@corp.io")
    segment_id = await segment(shop)
    base = f"/audiences/{segment_id}/contacts"
    created = await shop.client.post(
        base, json={"audience_id": segment_id, "email": "Ann@Corp.io", "first_name": "Ann"},
        headers=shop.headers,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    contact_id = created.json()["id"]

    listed = await shop.client.get(base, headers=shop.headers)
    assert [item["id"] for item in listed.json()["data"]] == [contact_id]
    members = await shop.client.get(f"/segments/{segment_id}/contacts", headers=shop.headers)
    assert [item["id"] for item in members.json()["data"]] == [contact_id]
    in_audience = await shop.client.get(
        f"/audiences/{shop.audience_id}/contacts", params={"email": "ann@corp.io"},
        headers=shop.headers,
    )  # fmt: skip
    assert [item["id"] for item in in_audience.json()["data"]] == [contact_id]
    found = await shop.client.get(f"{base}/ann@corp.io", headers=shop.headers)
    assert found.status_code == 200 and found.json()["id"] == contact_id
    patched = await shop.client.patch(
        f"{base}/{contact_id}", json={"last_name": "Lee"}, headers=shop.headers
    )
    assert patched.status_code == 200, patched.text

    # A broadcast naming the segment as its audience reaches the segment alone.
    broadcast_id = await create(shop, audience_id=segment_id)
    found_broadcast = await get(shop, broadcast_id)
    assert (found_broadcast["audience_id"], found_broadcast["segment_id"]) == (
        shop.audience_id,
        segment_id,
    )
    assert (
        await shop.client.post(f"/broadcasts/{broadcast_id}/send", headers=shop.headers)
    ).is_success
    await shop.run()
    assert [email.to[0] for email in await shop.emails(broadcast_id)] == ["ann@corp.io"]

    removed = await shop.client.delete(f"{base}/ann@corp.io", headers=shop.headers)
    assert removed.status_code == 200 and removed.json()["deleted"] is True
    unknown = await shop.client.get(
        "/audiences/00000000-0000-4000-8000-000000000000/contacts", headers=shop.headers
    )
    assert_error(unknown, 404, "not_found")


async def test_a_duplicate_is_a_new_draft_with_the_same_content_and_recipients(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io")
    broadcast_id = await create(shop)
    sent = await shop.client.post(f"/broadcasts/{broadcast_id}/send", headers=shop.headers)
    assert sent.status_code == 200, sent.text
    await shop.run()

    answer = await shop.client.post(f"/broadcasts/{broadcast_id}/duplicate", headers=shop.headers)
    assert answer.status_code == 201, answer.text
    copy_id = answer.json()["id"]
    assert answer.json() == {"object": "broadcast", "id": copy_id} and copy_id != broadcast_id
    original, copy = await get(shop, broadcast_id), await get(shop, copy_id)
    assert copy["status"] == "draft" and copy["sent_at"] is None
    assert copy["name"] == "November news (copy)"
    same = ("from", "subject", "html", "text", "reply_to", "preview_text", "audience_id")
    assert {k: copy[k] for k in same} == {k: original[k] for k in same}
    sent = await shop.client.post(f"/broadcasts/{copy_id}/send", headers=shop.headers)
    assert sent.status_code == 200, sent.text
    await shop.run()
    assert [email.to[0] for email in await shop.emails(copy_id)] == ["ann@corp.io"]

    # Through /campaigns too; another team's, or an unknown id, is not found.
    again = await shop.client.post(f"/campaigns/{broadcast_id}/duplicate", headers=shop.headers)
    assert again.status_code == 201 and again.json()["status"] == "draft"
    other = await shop.tenants.create()
    for headers, path in (
        (other.headers, f"/broadcasts/{broadcast_id}/duplicate"),
        (shop.headers, "/broadcasts/nope/duplicate"),
    ):
        assert_error(await shop.client.post(path, headers=headers), 404, "not_found")


async def test_recipients_by_event_and_the_links_clicked(shop_campaigns: Campaigns) -> None:
    """Resend's `GET /broadcasts/:id/recipients?type=` and `/clicked-links`."""
    shop = shop_campaigns
    await shop.contacts("ann@corp.io", "bob@corp.io", "cy@corp.io")
    broadcast_id = await create(shop)
    assert (
        await shop.client.post(f"/broadcasts/{broadcast_id}/send", headers=shop.headers)
    ).is_success
    await shop.run()
    by_address = {email.to[0]: email for email in await shop.emails(broadcast_id)}
    ann, bob, cy = (by_address[f"{name}@corp.io"] for name in ("ann", "bob", "cy"))
    async with shop.context.database.session() as session:
        for url in ("https://shop.io/deal", "https://shop.io/deal", "https://shop.io/faq"):
            await emails.record_click(session, shop.clock, ann.id, url)
        await emails.record_click(session, shop.clock, bob.id, "https://shop.io/deal")
        await emails.record_bounce(
            session, shop.clock, cy, [BouncedAddress("cy@corp.io", hard=False)]
        )
        await emails.unsubscribe(session, shop.clock, bob.id)
        await session.commit()
    base = f"/broadcasts/{broadcast_id}"

    async def listed(query: str) -> Any:
        answer = await shop.client.get(f"{base}/{query}", headers=shop.headers)
        assert answer.status_code == 200, answer.text
        return answer.json()

    clicked = await listed("recipients?type=clicked")
    assert clicked["object"] == "list" and clicked["has_more"] is False
    rows = {row["email"]: row for row in clicked["data"]}
    assert set(rows) == {"ann@corp.io", "bob@corp.io"}
    assert rows["ann@corp.io"]["count"] == 3 and rows["ann@corp.io"]["contact_id"] == ann.contact_id
    assert rows["ann@corp.io"]["clicked_links"] == [
        {"url": "https://shop.io/deal", "clicks": 2}, {"url": "https://shop.io/faq", "clicks": 1},
    ]  # fmt: skip
    [only_ann] = (await listed("recipients?type=clicked&email=ANN@"))["data"]
    assert only_ann["email"] == "ann@corp.io"
    [bounced] = (await listed("recipients?type=bounced"))["data"]
    assert (bounced["email"], bounced["bounce_type"]) == ("cy@corp.io", "transient")
    assert (await listed("recipients?type=bounced&bounce_type=permanent"))["data"] == []
    [unsubscribed] = (await listed("recipients?type=unsubscribed"))["data"]
    assert unsubscribed["email"] == "bob@corp.io"
    assert (await listed("recipients?type=complained"))["data"] == []
    first = await listed("recipients?type=clicked&limit=1")
    assert first["has_more"] is True
    rest = await listed(f"recipients?type=clicked&after={first['data'][0]['id']}")
    assert [r["id"] for r in first["data"] + rest["data"]] == [r["id"] for r in clicked["data"]]

    links = await listed("clicked-links")
    assert [(link["url"], link["clicks"], link["unique_clicks"]) for link in links["data"]] == [
        ("https://shop.io/deal", 3, 2), ("https://shop.io/faq", 1, 1),
    ]  # fmt: skip
    page = await listed(f"clicked-links?limit=1&after={links['data'][0]['id']}")
    assert [link["url"] for link in page["data"]] == ["https://shop.io/faq"]
    assert (await listed("clicked-links"))["data"][0]["id"] == links["data"][0]["id"]

    for query in (
        "recipients", "recipients?type=read", "recipients?type=sent&bounce_type=permanent",
        "recipients?type=bounced&bounce_type=hard", "clicked-links?after=nope",
    ):  # fmt: skip
        answer = await shop.client.get(f"{base}/{query}", headers=shop.headers)
        assert answer.status_code == 422, (query, answer.text)
    other = await shop.tenants.create()
    answer = await shop.client.get(f"{base}/clicked-links", headers=other.headers)
    assert_error(answer, 404, "not_found")
