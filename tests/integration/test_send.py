"""POST /emails (spec §4.1): every field, every refusal, suppression and the simulator."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest

from mailbridge.services.accounts._api_keys import Permission
from mailbridge.services.accounts._teams import Role
from mailbridge.services.suppressions import _suppress as suppressions
from tests.integration.sending import START, Sending, email
from tests.integration.test_auth import assert_error


async def test_a_send_is_queued_with_its_fields(sending: Sending) -> None:
    response = await sending.send(email(
        to=["Ann <Ann@Corp.io>", "bob@corp.io"], cc="carl@corp.io", bcc=["dina@corp.io"],
        reply_to="help@shop.io", text="Hi", headers={"X-Campaign": "fall"},
        tags=[{"name": "kind", "value": "welcome"}],
    ))  # fmt: skip
    assert response.status_code == 200, response.text
    email_id = response.json()["id"]
    assert set(response.json()) == {"id"}
    (row,) = await sending.emails()
    assert row.id == email_id and row.status == "queued" and row.last_event == "queued"
    assert row.from_address == "Shop <news@shop.io>" and row.from_email == "news@shop.io"
    assert row.to == ["Ann <Ann@Corp.io>", "bob@corp.io"] and row.cc == ["carl@corp.io"]
    assert row.reply_to == ["help@shop.io"] and row.headers == {"X-Campaign": "fall"}
    assert row.delivery_recipients == ["ann@corp.io", "bob@corp.io", "carl@corp.io", "dina@corp.io"]
    assert row.message_id == f"<{email_id}@shop.io>"
    assert row.due_at == START and row.tags == [{"name": "kind", "value": "welcome"}]
    assert [event.type for event in await sending.events(email_id)] == ["queued"]


@pytest.mark.parametrize(
    ("fields", "status", "name"),
    [
        ({"from": "not an address"}, 422, "invalid_from_address"),
        ({"from": "Shop <news@shop>"}, 422, "invalid_from_address"),
        ({"from": None}, 422, "missing_required_field"),
        ({"from": "news@unknown.io"}, 422, "validation_error"),
        ({"to": None}, 422, "missing_required_field"),
        ({"to": []}, 422, "validation_error"),
        ({"to": [f"u{i}@corp.io" for i in range(51)]}, 422, "validation_error"),
        ({"cc": [f"u{i}@corp.io" for i in range(51)]}, 422, "validation_error"),
        ({"to": ["ann@corp.io", "nope"]}, 422, "invalid_to_address"),
        ({"bcc": ["@corp.io"]}, 422, "invalid_to_address"),
        ({"subject": None}, 422, "missing_required_field"),
        ({"html": None}, 422, "validation_error"),
        ({"reply_to": "nope"}, 422, "validation_error"),
        ({"attachments": [{"filename": "a.txt"}]}, 422, "invalid_attachment"),
        ({"attachments": [{"filename": "a.txt", "content": "%%%"}]}, 422, "invalid_attachment"),
        ({"attachments": [{"path": "ftp://files/a.pdf"}]}, 422, "invalid_attachment"),
        ({"headers": {"Bad Header": "x"}}, 422, "validation_error"),
        ({"headers": {"X-Trailing-Break\n": "x"}}, 422, "validation_error"),
        ({"tags": [{"name": "no spaces", "value": "x"}]}, 422, "validation_error"),
        ({"tags": [{"name": "trailing", "value": "break\n"}]}, 422, "validation_error"),
        ({"scheduled_at": "whenever pigs fly"}, 422, "validation_error"),
        ({"template": {"id": "00000000-0000-7000-8000-000000000000"}}, 404, "not_found"),
    ],
)
async def test_refusals(
    sending: Sending, fields: dict[str, object], status: int, name: str
) -> None:
    body = email(**fields)
    for key in [k for k, v in fields.items() if v is None]:
        del body[key]
    if "html" in fields:
        body.pop("text", None)
    assert_error(await sending.send(body), status, name)
    assert await sending.count() == 0


async def test_missing_field_names_it(sending: Sending) -> None:
    body = email()
    del body["to"]
    response = await sending.send(body)
    assert "`to`" in response.json()["message"]


async def test_an_unverified_domain_cannot_send(sending: Sending) -> None:
    async with sending.context.database.session() as session:
        from mailbridge.services.domains import _domains as domains

        await domains.create_domain(
            session, sending.clock, sending.context.settings, sending.tenant.team_id, "new.io"
        )
    response = await sending.send(email(**{"from": "a@new.io"}))
    assert_error(response, 422, "validation_error")
    assert "new.io" in response.json()["message"]


async def test_attachments_by_content_and_by_path(sending: Sending) -> None:
    pdf = base64.b64encode(b"%PDF-1.4 hello").decode()
    response = await sending.send(email(attachments=[
        {"filename": "invoice.pdf", "content": pdf},
        {"path": "https://files.shop.io/terms.txt"},
        {"filename": "logo.png", "content": pdf, "content_id": "logo"},
    ]))  # fmt: skip
    assert response.status_code == 200, response.text
    async with sending.context.database.session() as session:
        from sqlalchemy import select

        from mailbridge.storage.tables import EmailAttachment

        rows = (await session.scalars(select(EmailAttachment).order_by(EmailAttachment.id))).all()
    assert [(a.filename, a.content_type, a.size) for a in rows] == [
        ("invoice.pdf", "application/pdf", 14),
        ("terms.txt", "text/plain", None),
        ("logo.png", "image/png", 14),
    ]
    assert rows[0].content == b"%PDF-1.4 hello" and (rows[1].path or "").endswith("terms.txt")
    assert rows[2].content_id == "logo"


async def test_attachment_size_caps(sending: Sending, monkeypatch: pytest.MonkeyPatch) -> None:
    from mailbridge.services.email import _preparation as email_preparation

    monkeypatch.setattr(email_preparation, "MAX_ATTACHMENT_BYTES", 10)
    monkeypatch.setattr(email_preparation, "MAX_EMAIL_ATTACHMENT_BYTES", 15)
    blob = base64.b64encode(b"x" * 11).decode()
    assert_error(
        await sending.send(email(attachments=[{"filename": "a", "content": blob}])),
        422,
        "invalid_attachment",
    )
    eight = base64.b64encode(b"x" * 8).decode()
    two = [{"filename": "a", "content": eight}, {"filename": "b", "content": eight}]
    assert_error(await sending.send(email(attachments=two)), 422, "invalid_attachment")


async def test_reserved_recipients_are_dropped_as_suppressed(sending: Sending) -> None:
    response = await sending.send(email(to=["ann@corp.io", "x@example.com"], cc=["y@a.test"]))
    assert response.status_code == 200
    (row,) = await sending.emails()
    assert row.delivery_recipients == ["ann@corp.io"]
    events = await sending.events(row.id)
    assert [e.type for e in events] == ["queued", "suppressed"]
    assert events[1].data == {"recipients": ["x@example.com", "y@a.test"]}
    assert row.status == "queued"


@pytest.mark.parametrize(
    "to",
    [
        ["a@example.com"],
        ["b@example.org", "c@sub.example.net"],
        ["d@shop.invalid"],
        ["e@localhost"],
        ["f@x.localhost"],
        ["g@h.example"],
        ["suppressed@simulator.mailbridge.dev"],
    ],
)
async def test_all_to_suppressed_is_422_and_nothing_charged(
    sending: Sending, to: list[str]
) -> None:
    assert_error(await sending.send(email(to=to, cc=["ann@corp.io"])), 422, "validation_error")
    assert await sending.count() == 0
    # nothing was charged: the whole daily quota is still there
    assert (await sending.send(email(to=[f"u{i}@corp.io" for i in range(50)]))).status_code == 200
    assert (await sending.send(email(to=[f"v{i}@corp.io" for i in range(50)]))).status_code == 200


async def test_the_suppression_list_drops_its_addresses(sending: Sending) -> None:
    async with sending.context.database.session() as session:
        await suppressions.suppress(
            session, sending.clock, sending.tenant.team_id, "Gone@Corp.io", "bounced"
        )
        await session.commit()
    assert_error(await sending.send(email(to=["gone@corp.io"])), 422, "validation_error")
    ok = await sending.send(email(to=["gone@corp.io", "ann@corp.io"]))
    assert ok.status_code == 200
    (row,) = await sending.emails()
    assert row.delivery_recipients == ["ann@corp.io"]


async def test_simulator_addresses(sending: Sending) -> None:
    response = await sending.send(email(to=[
        "delivered@simulator.mailbridge.dev", "bounced+x@simulator.mailbridge.dev",
        "complained@simulator.mailbridge.dev", "suppressed+y@simulator.mailbridge.dev",
    ]))  # fmt: skip
    assert response.status_code == 200
    (row,) = await sending.emails()
    assert row.delivery_recipients == [
        "delivered@simulator.mailbridge.dev", "bounced+x@simulator.mailbridge.dev",
        "complained@simulator.mailbridge.dev",
    ]  # fmt: skip
    scheduled = email(to=["delivered@simulator.mailbridge.dev"], scheduled_at="in 1 hour")
    assert_error(await sending.send(scheduled), 422, "validation_error")


async def test_simulator_sends_debit_quota_per_recipient(sending: Sending) -> None:
    simulated = [f"delivered+{i}@simulator.mailbridge.dev" for i in range(50)]
    assert (await sending.send(email(to=simulated))).status_code == 200
    assert (await sending.send(email(to=simulated))).status_code == 200
    assert_error(await sending.send(email(to=["ann@corp.io"])), 429, "daily_quota_exceeded")


async def test_a_key_limited_to_a_domain_sends_only_from_it(sending: Sending) -> None:
    async with sending.context.database.session() as session:
        from mailbridge.services.domains import _domains as domains

        await domains.create_domain(
            session, sending.clock, sending.context.settings, sending.tenant.team_id, "other.io"
        )
    _id, token = await sending.tenants.key(
        sending.tenant, Permission.SENDING_ACCESS, domain="shop.io"
    )
    headers = {"Authorization": f"Bearer {token}"}
    ok = await sending.client.post("/emails", json=email(), headers=headers)
    assert ok.status_code == 200, ok.text
    other = await sending.client.post(
        "/emails", json=email(**{"from": "a@other.io"}), headers=headers
    )
    assert_error(other, 422, "validation_error")
    assert "shop.io" in other.json()["message"]
    assert_error(await sending.client.get("/domains", headers=headers), 401, "restricted_api_key")


async def test_a_view_only_member_cannot_send(sending: Sending) -> None:
    viewer = await sending.tenants.member(sending.tenant, Role.VIEW_ONLY)
    response = await sending.client.post(
        "/emails", json=email(), headers={"Authorization": f"Bearer {viewer}"}
    )
    assert_error(response, 403, "view_only_member")


async def test_templates_fill_the_email(sending: Sending) -> None:
    headers = sending.tenant.headers
    created = await sending.client.post("/templates", headers=headers, json={
        "name": "Welcome", "alias": "welcome", "from": "Shop <hi@shop.io>",
        "subject": "Welcome {{{NAME}}}", "html": "<p>Hi {{{NAME}}} & {{{CITY|Oslo}}}</p>",
        "variables": [
            {"key": "NAME", "type": "string"},
            {"key": "CITY", "type": "string", "fallback_value": "Bergen"},
        ],
    })  # fmt: skip
    assert created.status_code == 201, created.text
    body = {"to": ["ann@corp.io"], "template": {"alias": "welcome", "variables": {"NAME": "<Ann>"}}}
    assert_error(await sending.send(body), 422, "validation_error")  # not published yet
    await sending.client.post(f"/templates/{created.json()['id']}/publish", headers=headers)
    response = await sending.send(body)
    assert response.status_code == 200, response.text
    (row,) = await sending.emails()
    assert row.subject == "Welcome <Ann>" and row.from_address == "Shop <hi@shop.io>"
    assert row.html == "<p>Hi &lt;Ann&gt; & Oslo</p>"
    assert row.template_id == created.json()["id"]
    missing = {"to": ["ann@corp.io"], "template_id": created.json()["id"], "variables": {}}
    assert_error(await sending.send(missing), 422, "validation_error")


async def test_scheduling(sending: Sending) -> None:
    iso = (START + timedelta(days=2)).isoformat().replace("+00:00", "Z")
    first = await sending.send(email(scheduled_at=iso))
    second = await sending.send(email(scheduled_at="in 1 hour"))
    assert first.status_code == second.status_code == 200
    rows = {row.id: row for row in await sending.emails()}
    one, two = rows[first.json()["id"]], rows[second.json()["id"]]
    assert one.status == "scheduled" and one.due_at == START + timedelta(days=2)
    assert two.scheduled_at == START + timedelta(hours=1)
    assert [e.type for e in await sending.events(one.id)] == ["scheduled"]
    for late in ("in 31 days", (START + timedelta(days=30, minutes=1)).isoformat(), "2020-01-01"):
        assert_error(await sending.send(email(scheduled_at=late)), 422, "validation_error")


async def test_reschedule_and_cancel(sending: Sending) -> None:
    email_id = (await sending.send(email(scheduled_at="in 2 hours"))).json()["id"]
    moved = await sending.client.patch(
        f"/emails/{email_id}", headers=sending.tenant.headers, json={"scheduled_at": "in 3 days"}
    )
    assert moved.status_code == 200 and moved.json() == {"object": "email", "id": email_id}
    (row,) = await sending.emails()
    assert row.due_at == START + timedelta(days=3) and row.status == "scheduled"
    canceled = await sending.client.post(
        f"/emails/{email_id}/cancel", headers=sending.tenant.headers
    )
    assert canceled.json() == {"object": "email", "id": email_id}
    (row,) = await sending.emails()
    assert row.status == "canceled" and row.due_at is None
    assert [e.type for e in await sending.events(email_id)] == [
        "scheduled",
        "scheduled",
        "canceled",
    ]
    for response in (
        await sending.client.post(f"/emails/{email_id}/cancel", headers=sending.tenant.headers),
        await sending.client.patch(
            f"/emails/{email_id}",
            headers=sending.tenant.headers,
            json={"scheduled_at": "in 1 hour"},
        ),
    ):
        assert_error(response, 422, "validation_error")
    foreign = await sending.client.post(
        "/emails/00000000-0000-7000-8000-000000000000/cancel", headers=sending.tenant.headers
    )
    assert_error(foreign, 404, "not_found")


async def test_an_email_a_runner_holds_is_not_pending(sending: Sending) -> None:
    email_id = (await sending.send(email())).json()["id"]
    async with sending.context.database.session() as session:
        from mailbridge.storage.tables import Email

        row = await session.get(Email, email_id)
        assert row is not None
        row.lease_owner, row.lease_until = "runner-1", START + timedelta(minutes=1)
        await session.commit()
    response = await sending.client.post(
        f"/emails/{email_id}/cancel", headers=sending.tenant.headers
    )
    assert_error(response, 422, "validation_error")
