"""Every kind of message mailbridge sends is DKIM-signed over the same documented header
list (``mail.dkim.SIGNED_HEADERS``) and verifies with dkimpy: a transactional email, a
batch, a template send, a campaign, a broadcast and an automation's send step. Marketing
mail signs both one-click unsubscribe fields (RFC 8058 §4), and every one carries a text
part beside its HTML."""

from __future__ import annotations

from email.parser import BytesParser
from typing import Any

import dkim as dkimpy
from sqlalchemy import select

from mailbridge.runner.automations import AutomationWorker
from mailbridge.runner.delivery import DeliveryWorker
from mailbridge.storage.tables import Domain, Email
from tests.integration.campaign_setup import SENDER, Campaigns

ALWAYS = {b"from", b"to", b"subject", b"date", b"message-id", b"mime-version", b"content-type"}
MARKETING = {b"list-unsubscribe", b"list-unsubscribe-post"}


def signed_fields(message: bytes) -> list[bytes]:
    header = BytesParser().parsebytes(message)["DKIM-Signature"]
    tags = dict(
        tag.strip().split("=", 1) for tag in "".join(header.split()).split(";") if "=" in tag
    )
    return [name.strip().lower().encode() for name in tags["h"].split(":")]


async def ok(shop: Campaigns, method: str, path: str, body: Any) -> Any:
    answer = await shop.client.request(method, path, json=body, headers=shop.headers)
    assert answer.status_code < 300, (path, answer.text)
    return answer.json()


async def test_every_kind_of_message_is_signed_over_the_documented_headers(
    shop_campaigns: Campaigns,
) -> None:
    shop = shop_campaigns
    await shop.contacts("ann@corp.io", "bob@corp.io")
    kinds: dict[str, str] = {}  # email id: kind
    sent = await ok(shop, "POST", "/emails", {
        "from": SENDER, "to": ["ann@corp.io"], "cc": ["cy@corp.io"], "reply_to": "help@shop.io",
        "subject": "Your order", "html": "<p>Thanks</p>",
    })  # fmt: skip
    kinds[sent["id"]] = "transactional"
    batch = await ok(shop, "POST", "/emails/batch", [
        {"from": SENDER, "to": ["bob@corp.io"], "subject": "One", "text": "One"},
    ])  # fmt: skip
    kinds[batch["data"][0]["id"]] = "batch"
    template = await ok(shop, "POST", "/templates", {
        "name": "Welcome", "alias": "welcome", "from": SENDER, "subject": "Welcome",
        "html": "<p>Welcome {{{contact.first_name|there}}}</p>",
    })  # fmt: skip
    await ok(shop, "POST", f"/templates/{template['id']}/publish", None)
    templated = await ok(
        shop, "POST", "/emails", {"to": ["ann@corp.io"], "template": {"id": "welcome"}}
    )
    kinds[templated["id"]] = "template"

    campaign_id = await shop.create()
    assert (await shop.send(campaign_id)).status_code == 200
    broadcast = await ok(shop, "POST", "/broadcasts", {
        "audience_id": shop.audience_id, "from": SENDER, "subject": "Broadcast",
        "html": "<p>News</p>",
    })  # fmt: skip
    await ok(shop, "POST", f"/broadcasts/{broadcast['id']}/send", {})
    await shop.run()
    automation = await ok(shop, "POST", "/automations", {
        "name": "Welcome", "status": "enabled",
        "steps": [
            {"key": "start", "type": "trigger", "config": {"event_name": "user.signed_up"}},
            {"key": "hello", "type": "send_email", "config": {"template": {"id": "welcome"}}},
        ],
        "connections": [{"from": "start", "to": "hello"}],
    })  # fmt: skip
    await ok(shop, "POST", "/events/send", {"event": "user.signed_up", "email": "dee@corp.io"})
    worker = AutomationWorker(shop.context)
    while (await worker.claim(100)).more:
        pass

    async with shop.context.database.session() as session:
        rows = list(
            await session.scalars(select(Email).where(Email.team_id == shop.tenant.team_id))
        )
        [domain] = list(
            await session.scalars(select(Domain).where(Domain.team_id == shop.tenant.team_id))
        )
    for row in rows:
        if row.id in kinds:
            continue
        if row.campaign_id == campaign_id:
            kinds[row.id] = "campaign"
        elif row.campaign_id == broadcast["id"]:
            kinds[row.id] = "broadcast"
        elif row.to == ["dee@corp.io"]:
            kinds[row.id] = "automation"
    assert sorted(set(kinds.values())) == sorted(
        ["transactional", "batch", "template", "campaign", "broadcast", "automation"]
    ), (kinds, automation)
    async with DeliveryWorker(shop.context) as delivery:  # the file outbox
        assert await delivery.deliver_due() == len(rows)

    record = f"v=DKIM1; k=rsa; p={domain.dkim_public_key}".encode()

    def dnsfunc(name: bytes, timeout: int = 5) -> bytes | None:
        return record if name.decode() == f"{domain.dkim_selector}._domainkey.shop.io." else None

    for email_id, kind in kinds.items():
        message = (shop.context.settings.data_dir / "outbox" / f"{email_id}.eml").read_bytes()
        assert dkimpy.verify(message, dnsfunc=dnsfunc), kind
        fields = signed_fields(message)
        assert set(fields) >= ALWAYS, (kind, fields)
        assert fields.count(b"from") == 2, (kind, fields)  # over-signed
        if kind in ("campaign", "broadcast"):
            assert set(fields) >= MARKETING, (kind, fields)
        if kind == "transactional":
            assert {b"cc", b"reply-to"} <= set(fields), fields
        # A text part for every HTML (all but the batch's were given html alone).
        types = {part.get_content_type() for part in BytesParser().parsebytes(message).walk()}
        expected = {"text/plain"} if kind == "batch" else {"text/plain", "text/html"}
        assert expected <= types, (kind, types)
