"""``{{{poll:ID}}}`` in templates and campaigns: refused when it names no poll, rendered per
recipient into mail that reaches a real SMTP listener, whose links are then clicked."""

from __future__ import annotations

from collections.abc import Iterator
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

import pytest

from mailbridge.mail.providers import SmtpProvider, SmtpRelay
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.services.polls import read_vote_token
from tests.integration.campaign_setup import Campaigns
from tests.integration.poll_setup import (
    VOTE_LINK,
    click,
    counts,
    create_poll,
    get_poll,
    vote_rows,
)
from tests.integration.sending import Sending, email
from tests.integration.test_auth import assert_error
from tests.smtp_listener import Listener, smtp_listener

SENDER = "Shop <news@shop.io>"


@pytest.fixture
def listener() -> Iterator[Listener]:
    with smtp_listener() as running:
        yield running


def embedding(poll_id: str) -> dict[str, str]:
    return {
        "html": f"<p>Hi {{{{{{FIRST_NAME|there}}}}}}</p>{{{{{{poll:{poll_id}}}}}}}<p>Thanks</p>",
        "text": f"Hi {{{{{{FIRST_NAME|there}}}}}}\n{{{{{{poll:{poll_id}}}}}}}\nThanks",
    }


async def deliver(context: ServiceContext, listener: Listener) -> list[EmailMessage]:
    """Deliver what is due to the SMTP listener; the messages it received, parsed."""
    provider = SmtpProvider(SmtpRelay.from_url(listener.url), pool_size=1)
    async with DeliveryWorker(context, provider=provider) as worker:
        await worker.deliver_due()
    return [
        message_from_bytes(received.content, policy=policy.default)
        for received in listener.messages()
    ]


def links_in(message: EmailMessage, subtype: str) -> list[str]:
    part = message.get_body((subtype,))
    assert part is not None
    content = part.get_content()
    if subtype == "html":
        content = content.replace("&amp;", "&")
    return VOTE_LINK.findall(content)


async def publish(sending: Sending, **fields: Any) -> str:
    body = {"name": "Poll mail", "from": SENDER, "subject": "Your opinion", **fields}
    created = await sending.client.post("/templates", json=body, headers=sending.tenant.headers)
    assert created.status_code == 201, created.text
    template_id = str(created.json()["id"])
    published = await sending.client.post(
        f"/templates/{template_id}/publish", headers=sending.tenant.headers
    )
    assert published.status_code == 200, published.text
    return template_id


async def test_a_poll_in_a_template_email_reaches_smtp_and_its_links_vote(
    sending: Sending, listener: Listener
) -> None:
    headers = sending.tenant.headers
    poll_id = await create_poll(sending.client, headers, options=["Yes", "No", "Maybe"])
    template_id = await publish(sending, **embedding(poll_id))
    sent = await sending.send(
        {"from": SENDER, "to": ["Ann@Corp.io"], "template": {"id": template_id}}
    )
    assert sent.status_code == 200, sent.text

    [message] = await deliver(sending.context, listener)
    text_links, html_links = links_in(message, "plain"), links_in(message, "html")
    assert len(text_links) == 3 and text_links == html_links  # not click-tracked
    plain = message.get_body(("plain",))
    assert plain is not None
    lines = plain.get_content().splitlines()
    assert lines[:3] == ["Hi there", "Which day suits you?", f"Yes: {text_links[0]}"]
    secret = await instance_secret(sending.context.database, sending.context.settings)
    ballots = [read_vote_token(secret, link.rsplit("/", 1)[1]) for link in text_links]
    assert [(b.option, b.voter.key, b.team_id) for b in ballots if b is not None] == [
        (n, "ann@corp.io", sending.tenant.team_id) for n in range(3)
    ]

    page = await click(sending.client, text_links[2])
    assert page.status_code == 200 and "Maybe" in page.text
    [vote] = await vote_rows(sending.context, poll_id)
    assert (vote.email, vote.contact_id, vote.option) == ("ann@corp.io", None, 2)
    assert counts(await get_poll(sending.client, headers, poll_id)) == [0, 0, 1]


async def test_a_poll_in_a_campaign_gives_each_contact_their_own_links(
    shop_campaigns: Campaigns, listener: Listener
) -> None:
    shop = shop_campaigns
    poll_id = await create_poll(shop.client, shop.headers)
    ann, bob = await shop.contacts("ann@corp.io", "bob@corp.io")
    campaign_id = await shop.create(**embedding(poll_id))
    assert (await shop.send(campaign_id)).status_code == 200
    await shop.run()

    messages = {str(m["To"]): m for m in await deliver(shop.context, listener)}
    assert set(messages) == {"ann@corp.io", "bob@corp.io"}
    ann_links = links_in(messages["ann@corp.io"], "plain")
    bob_links = links_in(messages["bob@corp.io"], "plain")
    assert ann_links == links_in(messages["ann@corp.io"], "html") and len(ann_links) == 2
    assert set(ann_links).isdisjoint(bob_links)

    assert (await click(shop.client, ann_links[1])).status_code == 200
    assert (await click(shop.client, bob_links[0])).status_code == 200
    assert "already counted" in (await click(shop.client, ann_links[0])).text
    votes = {vote.contact_id: (vote.email, vote.option) for vote in await vote_rows(
        shop.context, poll_id)}  # fmt: skip
    assert votes == {ann: ("ann@corp.io", 1), bob: ("bob@corp.io", 0)}
    found = await get_poll(shop.client, shop.headers, poll_id)
    assert counts(found) == [1, 1] and found["total_votes"] == 2


async def test_an_unknown_poll_is_refused_where_content_is_written(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    client, headers = shop.client, shop.headers
    missing = "0190a0a0-0000-7000-8000-000000000000"
    for body in (
        {"html": f"<p>{{{{{{poll:{missing}}}}}}}</p>"},
        {"html": "<p>x</p>", "text": "{{{poll:not-an-id}}}"},
        {"html": "<p>x</p>", "subject": "{{{poll:" + missing + "}}}"},
    ):
        answer = await client.post(
            "/templates", json={"name": "t", "from": SENDER, **body}, headers=headers
        )
        assert_error(answer, 422, "validation_error")
    theirs = await create_poll(client, (await shop.tenants.create()).headers)
    answer = await client.post(
        "/templates", json={"name": "t", "html": f"{{{{{{poll:{theirs}}}}}}}"}, headers=headers
    )
    assert_error(answer, 422, "validation_error")  # another team's poll is no poll of ours

    template = await client.post("/templates", json={"name": "t", "html": "<p>x</p>"},
                                 headers=headers)  # fmt: skip
    changed = await client.patch(
        f"/templates/{template.json()['id']}", json={"html": f"{{{{{{poll:{missing}}}}}}}"},
        headers=headers,
    )  # fmt: skip
    assert_error(changed, 422, "validation_error")

    ab_test = {"metric": "open", "variants": [
        {"subject": "A"}, {"subject": "B", "text": f"{{{{{{poll:{missing}}}}}}}"}]}  # fmt: skip
    campaign_fields: list[dict[str, Any]] = [
        {"html": f"{{{{{{poll:{missing}}}}}}}"}, {"ab": ab_test}
    ]  # fmt: skip
    for fields in campaign_fields:
        body = {"name": "n", "from": SENDER, "subject": "s", "html": "h",
                "audience_id": shop.audience_id, **fields}  # fmt: skip
        assert_error(await client.post("/campaigns", json=body, headers=headers), 422,
                     "validation_error")  # fmt: skip


async def test_a_poll_deleted_after_writing_is_refused_at_send(sending: Sending) -> None:
    client, headers = sending.client, sending.tenant.headers
    poll_id = await create_poll(client, headers)
    template_id = await publish(sending, **embedding(poll_id))
    two = await sending.send(
        {"from": SENDER, "to": ["a@corp.io", "b@corp.io"], "template": {"id": template_id}}
    )
    assert_error(two, 422, "validation_error")  # links are signed for one recipient
    await client.delete(f"/polls/{poll_id}", headers=headers)
    gone = await sending.send(
        {"from": SENDER, "to": ["a@corp.io"], "template": {"id": template_id}}
    )
    assert_error(gone, 422, "validation_error")
    assert await sending.count() == 0
    # An email without a template carries the placeholder as written, like any other.
    plain = await sending.send(email(html=f"{{{{{{poll:{poll_id}}}}}}}"))
    assert plain.status_code == 200, plain.text


async def test_a_campaign_whose_poll_was_deleted_is_not_sent(shop_campaigns: Campaigns) -> None:
    shop = shop_campaigns
    poll_id = await create_poll(shop.client, shop.headers)
    await shop.contacts("ann@corp.io")
    campaign_id = await shop.create(**embedding(poll_id))
    await shop.client.delete(f"/polls/{poll_id}", headers=shop.headers)
    assert_error(await shop.send(campaign_id), 422, "validation_error")
    assert (await shop.get(campaign_id))["status"] == "draft"
