"""Campaigns: the record, sending (spec §3.1, §4.5), the fan-out into emails, canceling."""

from __future__ import annotations

from datetime import timedelta
from email.message import EmailMessage
from email.parser import BytesParser

import aiosmtplib
import pytest

from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.services import accounts, inbound
from mailbridge.services import email as emails
from mailbridge.services.kernel import ServiceContext
from tests.integration.campaign_setup import Campaigns
from tests.integration.sending import add_domain
from tests.integration.test_auth import assert_error


async def test_a_draft_is_created_read_changed_listed_and_deleted(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    campaign_id = await shop.create(subject=None)
    found = await shop.get(campaign_id)
    assert found["object"] == "campaign"
    assert found["status"] == "draft"
    assert found["subject"] is None
    assert found["counts"] == {
        "recipients": 0, "sent": 0, "delivered": 0, "opened": 0, "clicked": 0,
        "bounced": 0, "complained": 0, "unsubscribed": 0,
    }  # fmt: skip
    answer = await shop.client.patch(
        f"/campaigns/{campaign_id}", json={"subject": "Big news"}, headers=shop.headers
    )
    assert answer.status_code == 200, answer.text
    assert (await shop.get(campaign_id))["subject"] == "Big news"
    listed = await shop.client.get("/campaigns?limit=1", headers=shop.headers)
    assert listed.json()["object"] == "list"
    assert [item["id"] for item in listed.json()["data"]] == [campaign_id]
    deleted = await shop.client.delete(f"/campaigns/{campaign_id}", headers=shop.headers)
    assert deleted.json() == {"object": "campaign", "id": campaign_id, "deleted": True}
    gone = await shop.client.get(f"/campaigns/{campaign_id}", headers=shop.headers)
    assert_error(gone, 404, "not_found")


async def test_sending_reaches_subscribed_unsuppressed_contacts_once_each(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io", first_name="Ann")
    await shop.contacts("bob@corp.io")
    await shop.contacts("gone@corp.io", unsubscribed=True)
    await shop.contacts("bounced@corp.io")
    answer = await shop.client.post(
        "/suppressions", json={"email": "bounced@corp.io"}, headers=shop.headers
    )
    assert answer.status_code in (200, 201), answer.text
    campaign_id = await shop.create()
    sent = await shop.send(campaign_id)
    assert sent.status_code == 200, sent.text
    assert sent.json() == {"id": campaign_id}
    assert (await shop.get(campaign_id))["status"] == "queued"
    await shop.run()
    emails = await shop.emails(campaign_id)
    assert sorted(email.to[0] for email in emails) == ["ann@corp.io", "bob@corp.io"]
    by_address = {email.to[0]: email for email in emails}
    assert by_address["ann@corp.io"].subject == "Hello Ann"
    assert by_address["bob@corp.io"].html == "<p>Hi there</p>"
    assert all(email.marketing and email.status == "queued" for email in emails)
    found = await shop.get(campaign_id)
    assert found["status"] == "sent"
    assert found["counts"]["recipients"] == 2
    assert len(await shop.activity("campaign.sent")) == 1
    await shop.run()  # nothing more: exactly one email each
    assert len(await shop.emails(campaign_id)) == 2

    again = await shop.send(campaign_id)
    assert_error(again, 422, "validation_error")
    patched = await shop.client.patch(
        f"/campaigns/{campaign_id}", json={"subject": "x"}, headers=shop.headers
    )
    assert_error(patched, 422, "validation_error")


@pytest.mark.parametrize(
    ("fields", "body"),
    [
        ({"from": None}, {}),
        ({"subject": None}, {}),
        ({"html": None}, {}),
        ({"from": "news@elsewhere.io"}, {}),
        ({}, {"scheduled_at": "in 45 days"}),
        ({}, {"scheduled_at": "not a time at all"}),
        ({}, {"scheduled_at": "2026-11-03T09:00:00", "schedule_timezone": "Mars/Olympus"}),
    ],
)
async def test_a_send_that_cannot_go_is_refused_and_stays_a_draft(
    shop_campaigns: Campaigns, fields: dict[str, object], body: dict[str, object]
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io")
    campaign_id = await shop.create(**fields)
    answer = await shop.send(campaign_id, **body)
    assert_error(answer, 422, "validation_error")
    assert (await shop.get(campaign_id))["status"] == "draft"


async def test_another_teams_campaign_is_not_found(shop_campaigns: Campaigns) -> None:
    shop = shop_campaigns
    campaign_id = await shop.create()
    other = await shop.tenants.create(plan="pro")
    for answer in (
        await shop.client.get(f"/campaigns/{campaign_id}", headers=other.headers),
        await shop.client.post(f"/campaigns/{campaign_id}/send", json={}, headers=other.headers),
        await shop.client.post(f"/campaigns/{campaign_id}/cancel", headers=other.headers),
        await shop.client.get(f"/campaigns/{campaign_id}/ab", headers=other.headers),
    ):
        assert_error(answer, 404, "not_found")


async def test_a_scheduled_campaign_starts_at_its_time_in_its_timezone(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io")
    campaign_id = await shop.create()
    # 12:00 in Berlin on 2 November is 11:00Z; the clock reads 09:30Z.
    answer = await shop.send(
        campaign_id, scheduled_at="2026-11-02T12:00:00", schedule_timezone="Europe/Berlin"
    )
    assert answer.status_code == 200, answer.text
    found = await shop.get(campaign_id)
    assert found["status"] == "scheduled"
    assert found["scheduled_at"] == "2026-11-02T11:00:00.000Z"
    await shop.later(timedelta(minutes=89))
    assert await shop.emails(campaign_id) == []
    await shop.later(timedelta(minutes=1))
    assert len(await shop.emails(campaign_id)) == 1
    assert (await shop.get(campaign_id))["status"] == "sent"


async def test_canceling_a_scheduled_campaign_means_it_never_starts(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io")
    campaign_id = await shop.create()
    await shop.send(campaign_id, scheduled_at="in 1 hour")
    answer = await shop.client.post(f"/campaigns/{campaign_id}/cancel", headers=shop.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "canceled"
    await shop.later(timedelta(hours=2))
    assert await shop.emails(campaign_id) == []
    twice = await shop.client.post(f"/campaigns/{campaign_id}/cancel", headers=shop.headers)
    assert_error(twice, 422, "validation_error")
    deleted = await shop.client.delete(f"/campaigns/{campaign_id}", headers=shop.headers)
    assert deleted.status_code == 200


async def test_a_campaign_over_the_quota_is_refused_with_nothing_queued(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    free = await shop.tenants.create(plan="free")
    shop.tenant = free
    await add_domain(shop.context, free.team_id, "free.io")
    audience = await shop.client.post("/audiences", json={"name": "All"}, headers=free.headers)
    shop.audience_id = audience.json()["id"]
    await shop.contacts(*(f"person{number}@corp.io" for number in range(101)))
    campaign_id = await shop.create(**{"from": "news@free.io"})
    answer = await shop.send(campaign_id)
    assert_error(answer, 429, "daily_quota_exceeded")
    assert (await shop.get(campaign_id))["status"] == "draft"
    await shop.run()
    assert await shop.emails(campaign_id) == []


async def test_a_topic_reaches_only_its_subscribers(shop_campaigns: Campaigns) -> None:
    shop = shop_campaigns
    topic = await shop.client.post(
        "/topics", json={"name": "Deals", "default_subscription": "opt_out"}, headers=shop.headers
    )
    topic_id = topic.json()["id"]
    ann, _bob = await shop.contacts("ann@corp.io", "bob@corp.io")
    chosen = await shop.client.patch(
        f"/contacts/{ann}/topics", json=[{"id": topic_id, "subscription": "opt_in"}],
        headers=shop.headers,
    )  # fmt: skip
    assert chosen.status_code == 200, chosen.text
    campaign_id = await shop.create(topic_id=topic_id)
    assert (await shop.send(campaign_id)).status_code == 200
    await shop.run()
    assert [email.to for email in await shop.emails(campaign_id)] == [["ann@corp.io"]]


async def test_daily_batches_roll_over_at_local_midnight(shop_campaigns: Campaigns) -> None:
    shop = shop_campaigns
    await shop.contacts(*(f"person{number}@corp.io" for number in range(5)))
    campaign_id = await shop.create(batch_size_per_day=2)
    # 09:30Z is 04:30 in New York: the next batch is due at 05:00Z (midnight there).
    assert (await shop.send(campaign_id, schedule_timezone="America/New_York")).status_code == 200
    await shop.run()
    assert len(await shop.emails(campaign_id)) == 2
    await shop.later(timedelta(hours=19, minutes=29))  # 04:59Z on 3 November
    assert len(await shop.emails(campaign_id)) == 2
    assert (await shop.get(campaign_id))["status"] == "sending"
    await shop.later(timedelta(minutes=1))
    assert len(await shop.emails(campaign_id)) == 4
    await shop.later(timedelta(days=1))
    assert len(await shop.emails(campaign_id)) == 5
    assert (await shop.get(campaign_id))["status"] == "sent"


async def test_a_recurring_campaign_sends_each_occurrence_as_a_child_once(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io")
    campaign_id = await shop.create(recurrence="FREQ=DAILY;BYHOUR=10;BYMINUTE=0;BYSECOND=0")
    answer = await shop.send(campaign_id, schedule_timezone="Europe/Berlin")
    assert answer.status_code == 200, answer.text
    parent = await shop.get(campaign_id)
    assert parent["status"] == "recurring"
    # 10:00 in Berlin is 09:00Z in November: the first occurrence is tomorrow's.
    assert parent["next_occurrence_at"] == "2026-11-03T09:00:00.000Z"
    await shop.later(timedelta(days=1))  # 3 November, 09:30Z
    children = await shop.client.get(f"/campaigns?parent_id={campaign_id}", headers=shop.headers)
    assert [child["occurrence_at"] for child in children.json()["data"]] == [
        "2026-11-03T09:00:00.000Z"
    ]
    child_id = children.json()["data"][0]["id"]
    assert (await shop.get(child_id))["status"] == "sent"
    assert len(await shop.emails(child_id)) == 1
    await shop.run()
    # Three days down: only the latest missed occurrence is sent, once.
    await shop.later(timedelta(days=3))
    children = await shop.client.get(f"/campaigns?parent_id={campaign_id}", headers=shop.headers)
    occurrences = sorted(child["occurrence_at"] for child in children.json()["data"])
    assert occurrences == ["2026-11-03T09:00:00.000Z", "2026-11-06T09:00:00.000Z"]
    assert (await shop.get(campaign_id))["next_occurrence_at"] == "2026-11-07T09:00:00.000Z"
    canceled = await shop.client.post(f"/campaigns/{campaign_id}/cancel", headers=shop.headers)
    assert canceled.json()["status"] == "canceled"
    await shop.later(timedelta(days=2))
    children = await shop.client.get(f"/campaigns?parent_id={campaign_id}", headers=shop.headers)
    assert len(children.json()["data"]) == 2


async def test_an_ab_test_sends_the_winner_to_the_rest(shop_campaigns: Campaigns) -> None:
    shop = shop_campaigns
    await shop.contacts(*(f"person{number}@corp.io" for number in range(60)))
    campaign_id = await shop.create(ab={
        "metric": "open", "test_fraction": 0.5, "decide_after": "2h",
        "variants": [{"subject": "Subject A"}, {"subject": "Subject B"}],
    })  # fmt: skip
    not_yet = await shop.client.get(f"/campaigns/{campaign_id}/ab", headers=shop.headers)
    assert not_yet.status_code == 200  # before sending: nothing sent, A by fallback
    assert not_yet.json()["fallback"] is True
    assert (await shop.send(campaign_id)).status_code == 200
    await shop.run()
    tested = await shop.emails(campaign_id)
    subjects = {email.subject for email in tested}
    assert subjects == {"Subject A", "Subject B"}
    assert 15 <= len(tested) <= 45  # about half of 60
    async with shop.context.database.session() as session:
        for email in tested:  # everyone who got B opens it
            if email.subject == "Subject B":
                await emails.record_open(session, shop.context.clock, email.id)
    result = (await shop.client.get(f"/campaigns/{campaign_id}/ab", headers=shop.headers)).json()
    assert result["object"] == "campaign_ab"
    assert result["metric"] == "open"
    assert result["winner"] == "B"
    assert result["b"]["rate"] == 1.0
    assert result["a"]["rate"] == 0.0
    assert (await shop.get(campaign_id))["status"] == "sending"
    await shop.later(timedelta(hours=2))
    everyone = await shop.emails(campaign_id)
    assert len(everyone) == 60
    assert len({email.to[0] for email in everyone}) == 60
    rest = [email for email in everyone if email.id not in {e.id for e in tested}]
    assert {email.subject for email in rest} == {"Subject B"}
    found = await shop.get(campaign_id)
    assert found["status"] == "sent"
    assert found["ab_winner"] == "B"
    assert found["counts"]["opened"] == sum(1 for e in tested if e.subject == "Subject B")
    decided = await shop.activity("campaign.ab_decided")
    assert [event.data["winner"] for event in decided] == ["B"]


async def test_the_ab_result_of_a_campaign_without_a_test_is_refused(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    campaign_id = await shop.create()
    answer = await shop.client.get(f"/campaigns/{campaign_id}/ab", headers=shop.headers)
    assert_error(answer, 422, "validation_error")


async def test_campaign_emails_are_delivered_counted_and_feed_engagement_segments(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io", "bob@corp.io", "cy@corp.io")
    campaign_id = await shop.create()
    assert (await shop.send(campaign_id)).status_code == 200
    await shop.run()
    async with DeliveryWorker(shop.context) as worker:  # the file outbox
        assert await worker.deliver_due() == 3
    found = await shop.get(campaign_id)
    assert found["counts"] == {
        "recipients": 3, "sent": 3, "delivered": 3, "opened": 0, "clicked": 0,
        "bounced": 0, "complained": 0, "unsubscribed": 0,
    }  # fmt: skip
    emails_by_address = {email.to[0]: email for email in await shop.emails(campaign_id)}
    message = BytesParser().parsebytes(
        (
            shop.context.settings.data_dir / "outbox" / f"{emails_by_address['ann@corp.io'].id}.eml"
        ).read_bytes()
    )
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert message["List-Unsubscribe"]
    async with shop.context.database.session() as session:
        await emails.record_open(session, shop.clock, emails_by_address["ann@corp.io"].id)
        await emails.record_click(
            session, shop.clock, emails_by_address["bob@corp.io"].id, "https://shop.io/deal"
        )
        await emails.unsubscribe(session, shop.clock, emails_by_address["cy@corp.io"].id)
    counts = (await shop.get(campaign_id))["counts"]
    assert (counts["opened"], counts["clicked"], counts["unsubscribed"]) == (2, 1, 1)
    segment = await shop.client.post(
        "/segments",
        json={"name": "Opened November news", "audience_id": shop.audience_id,
              "filter": {"engagement": {"event": "opened", "campaign_id": campaign_id}}},
        headers=shop.headers,
    )  # fmt: skip
    assert segment.status_code == 201, segment.text
    members = await shop.client.get(
        f"/segments/{segment.json()['id']}/contacts", headers=shop.headers
    )
    assert sorted(item["email"] for item in members.json()["data"]) == [
        "ann@corp.io", "bob@corp.io"
    ]  # fmt: skip


async def test_the_team_timezone_rolls_daily_batches_over_without_a_send_timezone(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    async with shop.context.database.session() as session:
        team = await accounts.resolve_team(session, shop.tenant.team_id)
        await accounts.update_team(session, team, timezone="Europe/Berlin")
    await shop.contacts("ann@corp.io", "bob@corp.io")
    campaign_id = await shop.create(batch_size_per_day=1)
    assert (await shop.send(campaign_id)).status_code == 200
    await shop.run()
    assert len(await shop.emails(campaign_id)) == 1
    # 2 November 09:30Z; midnight in Berlin is 23:00Z (CET).
    await shop.later(timedelta(hours=13, minutes=29))
    assert len(await shop.emails(campaign_id)) == 1
    await shop.later(timedelta(minutes=1))
    assert len(await shop.emails(campaign_id)) == 2


async def test_campaign_webhook_events_can_be_subscribed(shop_campaigns: Campaigns) -> None:
    shop = shop_campaigns
    answer = await shop.client.post(
        "/webhooks",
        json={"endpoint": "https://hooks.shop.io/in", "events": ["campaign.sent",
              "campaign.ab_decided"]},
        headers=shop.headers,
    )  # fmt: skip
    assert answer.status_code == 201, answer.text


async def test_a_recurring_campaign_starts_at_its_scheduled_at(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io")
    campaign_id = await shop.create(recurrence="FREQ=HOURLY")
    # Not a whole second: RRULEs count in seconds, the first occurrence is still this one.
    answer = await shop.send(campaign_id, scheduled_at="2026-11-02T09:30:04.250Z")
    assert answer.status_code == 200, answer.text
    assert (await shop.get(campaign_id))["next_occurrence_at"] == "2026-11-02T09:30:04.000Z"
    await shop.later(timedelta(seconds=5))
    children = await shop.client.get(f"/campaigns?parent_id={campaign_id}", headers=shop.headers)
    assert len(children.json()["data"]) == 1
    assert (await shop.get(campaign_id))["next_occurrence_at"] == "2026-11-02T10:30:04.000Z"


async def test_a_template_campaign_sends_the_published_content_with_its_variables(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io", first_name="Ann")
    created = await shop.client.post(
        "/templates",
        json={"name": "Sale", "from": "Shop <sale@shop.io>", "subject": "{{{PERCENT}}}% off",
              "html": "<p>{{{FIRST_NAME|Hi}}}, {{{PERCENT}}}% off</p>",
              "variables": [{"key": "PERCENT", "type": "number"}]},
        headers=shop.headers,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    template_id = created.json()["id"]
    draft = await shop.client.post(
        "/campaigns",
        json={"name": "Sale", "template_id": template_id, "variables": {"PERCENT": 20},
              "audience_id": shop.audience_id},
        headers=shop.headers,
    )  # fmt: skip
    assert_error(draft, 422, "validation_error")  # not published yet
    published = await shop.client.post(f"/templates/{template_id}/publish", headers=shop.headers)
    assert published.status_code == 200, published.text
    campaign_id = await shop.create(
        **{"from": None, "subject": None, "html": None},
        template_id=template_id, variables={"PERCENT": 20},
    )  # fmt: skip
    assert (await shop.send(campaign_id)).status_code == 200
    again = await shop.send(campaign_id)
    assert_error(again, 422, "validation_error")
    await shop.run()
    [email] = await shop.emails(campaign_id)
    assert (email.from_address, email.subject) == ("Shop <sale@shop.io>", "20% off")
    assert email.html == "<p>Ann, 20% off</p>"
    assert email.template_id == template_id


async def test_replies_received_count_for_the_reply_metric(shop_campaigns: Campaigns) -> None:
    shop = shop_campaigns
    await shop.contacts(*(f"person{number}@corp.io" for number in range(30)))
    campaign_id = await shop.create(ab={
        "metric": "reply", "test_fraction": 1.0,
        "variants": [{"subject": "Subject A"}, {"subject": "Subject B"}],
    })  # fmt: skip
    assert (await shop.send(campaign_id)).status_code == 200
    await shop.run()
    [domain] = (await shop.client.get("/domains", headers=shop.headers)).json()["data"]
    changed = await shop.client.patch(
        f"/domains/{domain['id']}", json={"receiving": True}, headers=shop.headers
    )
    assert changed.status_code == 200, changed.text
    # No authentication lookups: they would leave the machine.
    settings = shop.context.settings.model_copy(update={"inbound_authentication": False})
    receiving = ServiceContext(settings, shop.context.database, shop.context.clock)
    server, _handler = await inbound.start_listener(receiving, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    replied = 0
    try:
        for email in await shop.emails(campaign_id):
            if email.subject != "Subject B":
                continue
            reply = EmailMessage()
            reply["From"], reply["To"] = email.to[0], "news@shop.io"
            reply["Subject"], reply["In-Reply-To"] = "Re: Subject B", email.message_id
            reply.set_content("Yes please")
            await aiosmtplib.send(reply, hostname="127.0.0.1", port=port)
            replied += 1
    finally:
        server.close()
    result = (await shop.client.get(f"/campaigns/{campaign_id}/ab", headers=shop.headers)).json()
    assert result["b"]["conversions"] == replied > 0
    assert result["a"]["conversions"] == 0
    assert result["winner"] == "B"


async def test_a_campaign_whose_domain_stops_sending_waits_with_its_reason(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io")
    campaign_id = await shop.create()
    assert (await shop.send(campaign_id, scheduled_at="in 1 hour")).status_code == 200
    [domain] = (await shop.client.get("/domains", headers=shop.headers)).json()["data"]
    deleted = await shop.client.delete(f"/domains/{domain['id']}", headers=shop.headers)
    assert deleted.status_code == 200, deleted.text
    shop.context.sending_domains.clear()
    await shop.later(timedelta(hours=1))
    found = await shop.get(campaign_id)
    assert found["status"] == "sending"
    assert found["error"].startswith("Waiting: The shop.io domain is not verified")
    assert await shop.emails(campaign_id) == []
    await add_domain(shop.context, shop.tenant.team_id)
    await shop.later(timedelta(minutes=5))
    assert len(await shop.emails(campaign_id)) == 1
    assert (await shop.get(campaign_id))["error"] is None
