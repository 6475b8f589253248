"""Webhook deliveries to a real HTTP receiver on loopback: what arrives and how it is signed
(checked by the receiver's own HMAC), which events go where, retries on schedule under a
fake clock, deletion and disabling stopping delivery, timeouts, replays, the attempt log."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from standardwebhooks import Webhook

from mailbridge import webhooks
from mailbridge.clock import isoformat_ms
from mailbridge.runner.webhooks import WebhookWorker
from mailbridge.services.kernel import record_event
from mailbridge.storage.tables import ActivityEvent, WebhookDelivery
from tests.integration.test_auth import assert_error
from tests.integration.webhook_setup import Hooks

RETRY_DELAYS = [
    timedelta(seconds=5), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2),
    timedelta(hours=5), timedelta(hours=10), timedelta(hours=10),
]  # fmt: skip


async def activity(hooks: Hooks, type: str) -> list[ActivityEvent]:
    async with hooks.context.database.session() as session:
        rows = await session.scalars(
            select(ActivityEvent)
            .where(ActivityEvent.team_id == hooks.tenant.team_id, ActivityEvent.type == type)
            .order_by(ActivityEvent.created_at, ActivityEvent.id)
        )
        return list(rows.all())


async def delivery_count(hooks: Hooks) -> int:
    async with hooks.context.database.session() as session:
        return int(await session.scalar(select(func.count()).select_from(WebhookDelivery)) or 0)


async def test_an_event_arrives_signed_with_its_event_id(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    secret = created["signing_secret"]
    contact_id = await hooks.add_contact("ann@corp.io")

    assert await hooks.run() == 1
    [request] = hooks.receiver.requests()
    assert request.path == "/hook"
    assert request.signed_with(secret)  # the receiver's own HMAC-SHA256, spec §6.2
    assert not request.signed_with(secret + "x")
    assert request.headers["content-type"] == "application/json"
    assert request.timestamp == str(int(hooks.clock.now().timestamp()))
    [event] = await activity(hooks, "contact.created")
    assert request.event_id == event.id
    payload = request.payload
    assert payload == {
        "type": "contact.created",
        "created_at": isoformat_ms(event.created_at),
        "data": event.data,
    }
    assert payload["data"]["id"] == contact_id
    # mailbridge.webhooks.verify accepts it, and returns the payload.
    assert webhooks.verify(secret, request.headers, request.body, clock=hooks.clock) == payload

    [delivery] = await hooks.deliveries(created["id"])
    assert delivery["status"] == "succeeded" and delivery["event_id"] == event.id
    assert delivery["event_type"] == "contact.created" and delivery["attempt_count"] == 1
    [attempt] = delivery["attempts"]
    assert attempt["status_code"] == 200 and attempt["error"] is None
    assert attempt["duration_ms"] >= 0 and attempt["attempted_at"] == isoformat_ms(
        hooks.clock.now()
    )
    assert delivery["completed_at"] and delivery["next_attempt_at"] is None

    # Nothing more to do: the event was handed out once.
    assert await hooks.run() == 0
    assert len(hooks.receiver.requests()) == 1


async def test_only_subscribed_events_of_the_team_reach_enabled_webhooks(hooks: Hooks) -> None:
    contacts = await hooks.create(["contact.created", "contact.deleted"])
    await hooks.create(["domain.created"])
    paused = await hooks.create(["contact.created"])
    await hooks.client.patch(
        f"/webhooks/{paused['id']}", json={"status": "disabled"}, headers=hooks.tenant.headers
    )
    other = await hooks.tenants.create()
    await hooks.create(["contact.created"], endpoint=hooks.receiver.url("/other"), tenant=other)

    contact_id = await hooks.add_contact("ann@corp.io")
    await hooks.client.patch(
        f"/contacts/{contact_id}", json={"first_name": "Ann"}, headers=hooks.tenant.headers
    )  # contact.updated: nobody asked for it
    await hooks.client.delete(f"/contacts/{contact_id}", headers=hooks.tenant.headers)
    await hooks.run()

    requests = hooks.receiver.requests()
    assert sorted(request.payload["type"] for request in requests) == [
        "contact.created",
        "contact.deleted",
    ]
    assert all(request.signed_with(contacts["signing_secret"]) for request in requests)
    assert all(request.path == "/hook" for request in requests)
    assert await hooks.deliveries(paused["id"]) == []


async def test_a_500_is_retried_on_schedule_then_a_200_ends_it(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    hooks.receiver.answer(500)
    await hooks.add_contact("ann@corp.io")
    first_attempt_at = hooks.clock.now()
    assert await hooks.run() == 1

    [delivery] = await hooks.deliveries(created["id"])
    assert delivery["status"] == "pending"
    assert delivery["next_attempt_at"] == isoformat_ms(first_attempt_at + timedelta(seconds=5))
    assert delivery["attempts"][0]["status_code"] == 500
    assert delivery["attempts"][0]["error"] == "answered 500: not now"
    assert delivery["last_error"] == "answered 500: not now"

    hooks.clock.advance(timedelta(seconds=4.9))
    assert await hooks.run() == 0
    hooks.clock.advance(timedelta(seconds=0.1))
    assert await hooks.run() == 1

    first, second = hooks.receiver.requests()
    assert first.event_id == second.event_id and first.body == second.body
    assert int(second.timestamp) == int(first.timestamp) + 5
    assert first.signed_with(created["signing_secret"])
    assert second.signed_with(created["signing_secret"])
    [delivery] = await hooks.deliveries(created["id"])
    assert delivery["status"] == "succeeded" and delivery["attempt_count"] == 2
    assert [a["status_code"] for a in delivery["attempts"]] == [500, 200]


async def test_a_failing_endpoint_is_tried_eight_times_then_the_delivery_fails(
    hooks: Hooks,
) -> None:
    created = await hooks.create(["contact.created"])
    hooks.receiver.status = 503
    await hooks.add_contact("ann@corp.io")
    assert await hooks.run() == 1
    for delay in RETRY_DELAYS:
        hooks.clock.advance(delay - timedelta(seconds=1))
        assert await hooks.run() == 0
        hooks.clock.advance(timedelta(seconds=1))
        assert await hooks.run() == 1
    hooks.clock.advance(timedelta(days=2))
    assert await hooks.run() == 0

    assert len(hooks.receiver.requests()) == 8
    [delivery] = await hooks.deliveries(created["id"])
    assert delivery["status"] == "failed" and delivery["attempt_count"] == 8
    assert delivery["next_attempt_at"] is None and delivery["completed_at"]
    assert [a["status_code"] for a in delivery["attempts"]] == [503] * 8
    # Within three days of failing: still enabled.
    webhook = await hooks.client.get(f"/webhooks/{created['id']}", headers=hooks.tenant.headers)
    assert webhook.json()["status"] == "enabled"


async def test_deleting_a_webhook_stops_its_queued_retries(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    kept = await hooks.create(["contact.created"], endpoint=hooks.receiver.url("/kept"))
    hooks.receiver.status = 500
    await hooks.add_contact("ann@corp.io")
    assert await hooks.run() == 2
    assert await delivery_count(hooks) == 2

    response = await hooks.client.delete(f"/webhooks/{created['id']}", headers=hooks.tenant.headers)
    assert response.json() == {"object": "webhook", "id": created["id"], "deleted": True}
    assert await delivery_count(hooks) == 1  # its queued retry went with it
    hooks.receiver.status = 200
    hooks.clock.advance(timedelta(hours=1))
    assert await hooks.run() == 1
    paths = [request.path for request in hooks.receiver.requests()]
    assert sorted(paths) == ["/hook", "/kept", "/kept"]
    # And new events are not fanned out to it.
    await hooks.add_contact("bob@corp.io")
    await hooks.run()
    assert [request.path for request in hooks.receiver.requests()].count("/hook") == 1
    assert len(await hooks.deliveries(kept["id"])) == 2


@pytest.mark.webhook_timeout(1.0)
async def test_an_endpoint_that_does_not_answer_in_time_is_retried(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    hooks.receiver.delay = 1.5  # the mark gives an endpoint 1 s
    await hooks.add_contact("ann@corp.io")
    assert await hooks.run() == 1
    [delivery] = await hooks.deliveries(created["id"])
    assert delivery["status"] == "pending"
    [attempt] = delivery["attempts"]
    assert attempt["status_code"] is None and attempt["error"] == "no answer within 1 s"
    assert attempt["duration_ms"] >= 1000


async def test_an_unreachable_endpoint_is_an_error_that_is_retried(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"], endpoint="http://127.0.0.1:9/closed")
    await hooks.add_contact("ann@corp.io")
    assert await hooks.run() == 1
    [delivery] = await hooks.deliveries(created["id"])
    assert delivery["status"] == "pending"
    assert "ConnectError" in delivery["attempts"][0]["error"]


async def test_a_private_endpoint_is_refused_at_delivery_when_not_allowed(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    strict = hooks.context.settings.model_copy(update={"webhook_allow_private": False})
    hooks.context.settings = strict
    worker = WebhookWorker(hooks.context, owner="strict-runner")
    await hooks.add_contact("ann@corp.io")
    await hooks.dispatcher.dispatch_all()
    try:
        assert await worker.deliver_due() == 1
    finally:
        await worker.close()
    assert hooks.receiver.requests() == []
    [delivery] = await hooks.deliveries(created["id"])
    assert "non-public address 127.0.0.1" in delivery["attempts"][0]["error"]


async def test_an_endpoint_failing_for_three_days_is_disabled(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    hooks.receiver.status = 500
    await hooks.add_contact("ann@corp.io")
    await hooks.run()
    started_failing = hooks.clock.now()
    hooks.clock.advance(timedelta(days=2, hours=23))
    await hooks.add_contact("bob@corp.io")
    await hooks.run()  # still within three days
    webhook = await hooks.client.get(f"/webhooks/{created['id']}", headers=hooks.tenant.headers)
    assert webhook.json()["status"] == "enabled"

    hooks.clock.advance(timedelta(hours=1))
    await hooks.run()  # the retries due now fail again: three days of failures
    webhook = (
        await hooks.client.get(f"/webhooks/{created['id']}", headers=hooks.tenant.headers)
    ).json()
    assert webhook["status"] == "disabled"
    assert isoformat_ms(started_failing) in webhook["disabled_reason"]
    assert "answered 500" in webhook["disabled_reason"]
    deliveries = await hooks.deliveries(created["id"])
    assert {d["status"] for d in deliveries} == {"failed"}
    attempts = len(hooks.receiver.requests())
    hooks.clock.advance(timedelta(days=1))
    await hooks.add_contact("cy@corp.io")
    assert await hooks.run() == 0
    assert len(hooks.receiver.requests()) == attempts

    # Re-enabled, it gets new events, and a failed delivery can be replayed.
    hooks.receiver.status = 200
    response = await hooks.client.patch(
        f"/webhooks/{created['id']}", json={"status": "enabled"}, headers=hooks.tenant.headers
    )
    assert response.json()["status"] == "enabled" and response.json()["disabled_reason"] is None
    replayed = await hooks.client.post(
        f"/webhooks/{created['id']}/deliveries/{deliveries[0]['id']}/replay",
        headers=hooks.tenant.headers,
    )
    assert replayed.status_code == 201
    await hooks.add_contact("dee@corp.io")
    assert await hooks.run() == 2


async def test_a_replay_sends_the_same_event_again_as_a_new_delivery(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    await hooks.add_contact("ann@corp.io")
    await hooks.run()
    [original] = await hooks.deliveries(created["id"])

    hooks.clock.advance(timedelta(minutes=3))
    path = f"/webhooks/{created['id']}/deliveries/{original['id']}"
    response = await hooks.client.post(f"{path}/replay", json={}, headers=hooks.tenant.headers)
    assert response.status_code == 201, response.text
    replay: dict[str, Any] = response.json()
    assert replay["object"] == "webhook_delivery" and replay["id"] != original["id"]
    assert replay["replay_of"] == original["id"] and replay["status"] == "pending"
    assert replay["event_id"] == original["event_id"]
    assert await hooks.run() == 1

    first, again = hooks.receiver.requests()
    assert again.event_id == first.event_id and again.body == first.body
    assert again.signed_with(created["signing_secret"])
    newest, oldest = await hooks.deliveries(created["id"])
    assert (newest["id"], oldest["id"]) == (replay["id"], original["id"])
    assert newest["status"] == "succeeded"
    single = await hooks.client.get(path, headers=hooks.tenant.headers)
    assert single.json()["payload"] == first.payload

    # A disabled webhook replays nothing; another team cannot replay at all.
    await hooks.client.patch(
        f"/webhooks/{created['id']}", json={"status": "disabled"}, headers=hooks.tenant.headers
    )
    refused = await hooks.client.post(f"{path}/replay", headers=hooks.tenant.headers)
    assert_error(refused, 422, "validation_error")
    other = await hooks.tenants.create()
    assert_error(await hooks.client.post(f"{path}/replay", headers=other.headers), 404, "not_found")


async def test_deliveries_are_paginated_and_filtered_by_status(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    hooks.receiver.answer(500, 500)
    for number in range(5):
        await hooks.add_contact(f"c{number}@corp.io")
    await hooks.run()
    base = f"/webhooks/{created['id']}/deliveries"
    page = (await hooks.client.get(f"{base}?limit=3", headers=hooks.tenant.headers)).json()
    assert len(page["data"]) == 3 and page["has_more"] is True
    rest = await hooks.client.get(
        f"{base}?limit=3&after={page['data'][-1]['id']}", headers=hooks.tenant.headers
    )
    assert len(rest.json()["data"]) == 2 and rest.json()["has_more"] is False
    pending = await hooks.client.get(f"{base}?status=pending", headers=hooks.tenant.headers)
    assert len(pending.json()["data"]) == 2
    succeeded = await hooks.client.get(f"{base}?status=succeeded", headers=hooks.tenant.headers)
    assert len(succeeded.json()["data"]) == 3


async def test_email_events_reach_webhooks(hooks: Hooks) -> None:
    created = await hooks.create(["email.delivered", "email.bounced"])
    async with hooks.context.database.session() as session:
        data = {"email_id": "0191d0c8-7c1a-7bbb-8000-000000000001", "to": ["ann@corp.io"]}
        record_event(session, hooks.clock, hooks.tenant.team_id, "email.delivered", data)
        record_event(session, hooks.clock, hooks.tenant.team_id, "email.opened", data)
        await session.commit()
    await hooks.run()
    [request] = hooks.receiver.requests()
    assert request.payload["type"] == "email.delivered"
    assert request.payload["data"] == data
    assert request.signed_with(created["signing_secret"])


async def test_the_mock_transport_can_stand_in_for_the_network(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    worker = WebhookWorker(hooks.context, transport=httpx.MockTransport(handler), owner="mock")
    await hooks.add_contact("ann@corp.io")
    await hooks.dispatcher.dispatch_all()
    try:
        assert await worker.deliver_due() == 1
    finally:
        await worker.close()
    [request] = seen
    assert request.headers["host"] == f"127.0.0.1:{hooks.receiver.port}"
    assert webhooks.verify(created["signing_secret"], request.headers, request.content,
                           clock=hooks.clock)["type"] == "contact.created"  # fmt: skip
    [delivery] = await hooks.deliveries(created["id"])
    assert delivery["status"] == "succeeded" and delivery["attempts"][0]["status_code"] == 204


def standard_signatures(request: Any, *secrets: str) -> str:
    """The `webhook-signature` the Standard Webhooks package makes for these secrets."""
    when = datetime.fromtimestamp(int(request.headers["webhook-timestamp"]), UTC)
    body = request.body.decode()
    return " ".join(Webhook(s).sign(request.event_id, when, body) for s in secrets)


async def test_deliveries_carry_standard_webhooks_headers_keyed_by_the_same_secret(
    hooks: Hooks,
) -> None:
    created = await hooks.create(["contact.created"])
    secret = created["signing_secret"]
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{32}", secret)  # 24 bytes, standard base64
    await hooks.add_contact("ann@corp.io")
    assert await hooks.run() == 1
    [request] = hooks.receiver.requests()
    assert request.headers["webhook-id"] == request.event_id
    assert request.headers["webhook-timestamp"] == request.timestamp
    assert request.headers["webhook-signature"] == standard_signatures(request, secret)
    assert request.headers["webhook-signature"].startswith("v1,")
    assert "x-service-signature-previous" not in request.headers


async def test_a_rotated_secret_signs_beside_the_old_one_for_a_day(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    old = created["signing_secret"]
    path = f"/webhooks/{created['id']}/signing-secret/rotate"
    response = await hooks.client.post(path, headers=hooks.tenant.headers)
    assert response.status_code == 200, response.text
    rotated = response.json()
    new = rotated["signing_secret"]
    assert new != old and new.startswith("whsec_")
    assert {k: v for k, v in rotated.items() if k not in ("signing_secret", "updated_at")} == {
        k: v for k, v in created.items() if k not in ("signing_secret", "updated_at")
    }
    fetched = await hooks.client.get(f"/webhooks/{created['id']}", headers=hooks.tenant.headers)
    assert "signing_secret" not in fetched.json()

    # Within the day both sign: spec §6.2's header by the new, the previous one's beside
    # it, and both in the Standard Webhooks list; a receiver on either secret verifies.
    await hooks.add_contact("ann@corp.io")
    assert await hooks.run() == 1
    [during] = hooks.receiver.requests()
    assert during.signed_with(new) and not during.signed_with(old)
    for secret in (new, old):
        assert webhooks.verify(secret, during.headers, during.body, clock=hooks.clock)
    with pytest.raises(webhooks.WebhookVerificationError):
        webhooks.verify(old + "x", during.headers, during.body, clock=hooks.clock)
    assert during.headers["webhook-signature"] == standard_signatures(during, new, old)

    # Rotating again within the day drops the oldest; a day after, the old one is gone.
    response = await hooks.client.post(path, headers=hooks.tenant.headers)
    newest = response.json()["signing_secret"]
    hooks.clock.advance(timedelta(hours=23))
    await hooks.add_contact("bob@corp.io")
    assert await hooks.run() == 1
    within = hooks.receiver.requests()[-1]
    assert within.headers["webhook-signature"] == standard_signatures(within, newest, new)
    hooks.clock.advance(timedelta(hours=1, seconds=1))
    await hooks.add_contact("cat@corp.io")
    assert await hooks.run() == 1
    after = hooks.receiver.requests()[-1]
    assert after.headers["webhook-signature"] == standard_signatures(after, newest)
    assert "x-service-signature-previous" not in after.headers
    with pytest.raises(webhooks.WebhookVerificationError):
        webhooks.verify(new, after.headers, after.body, clock=hooks.clock)

    # Only the team's own webhook (the key's rights: test_webhooks.test_who_may_call_what).
    other = await hooks.tenants.create()
    assert_error(await hooks.client.post(path, headers=other.headers), 404, "not_found")
    for odd in ("nope", "0", "99999999999"):
        odd_path = f"/webhooks/{odd}/signing-secret/rotate"
        assert_error(
            await hooks.client.post(odd_path, headers=hooks.tenant.headers), 404, "not_found"
        )


async def test_events_and_their_attempts_as_resend_shapes_them(hooks: Hooks) -> None:
    created = await hooks.create(["contact.created"])
    base = f"/webhooks/{created['id']}/events"
    headers = hooks.tenant.headers

    async def get(path: str) -> Any:
        response = await hooks.client.get(path, headers=headers)
        assert response.status_code == 200, response.text
        return response.json()

    hooks.receiver.answer(500)
    await hooks.add_contact("ann@corp.io")
    ann_at = hooks.clock.now()
    await hooks.dispatcher.dispatch_all()
    assert [item["status"] for item in (await get(base))["data"]] == ["pending"]
    assert await hooks.run() == 1  # answered 500 (scripted)
    [ann_event] = await activity(hooks, "contact.created")
    hooks.clock.advance(timedelta(seconds=1))
    await hooks.add_contact("bob@corp.io")
    await hooks.dispatcher.dispatch_all()
    listed = await get(base)
    assert [item["status"] for item in listed["data"]] == ["pending", "attempting"]
    assert await hooks.run() == 1  # bob's; ann's retry is due 5 s after its attempt
    listed = await get(base)
    bob, ann = listed["data"]
    assert ann == {
        "object": "webhook_event", "id": ann_event.id, "type": "contact.created",
        "status": "attempting", "created_at": isoformat_ms(ann_at),
    }  # fmt: skip
    assert bob["status"] == "success" and listed["has_more"] is False
    page = await get(f"{base}?limit=1")
    assert [item["id"] for item in page["data"]] == [bob["id"]] and page["has_more"] is True
    page = await get(f"{base}?limit=1&after={bob['id']}")
    assert [item["id"] for item in page["data"]] == [ann["id"]] and page["has_more"] is False
    page = await get(f"{base}?before={ann['id']}")
    assert [item["id"] for item in page["data"]] == [bob["id"]]

    single = await get(f"{base}/{ann['id']}")
    assert single["status"] == "attempting" and single["payload"]["data"]["email"] == "ann@corp.io"
    assert single["next_attempt_at"] == isoformat_ms(ann_at + timedelta(seconds=5))
    [attempt] = (await get(f"{base}/{ann['id']}/attempts"))["data"]
    assert attempt["http_status_code"] == 500 and attempt["response"] == "answered 500: not now"
    assert attempt["sent_at"] == isoformat_ms(ann_at)

    hooks.clock.advance(timedelta(seconds=4))
    assert await hooks.run() == 1  # the retry succeeds
    assert (await get(f"{base}/{ann['id']}"))["status"] == "success"
    replayed = await hooks.client.post(f"{base}/{ann['id']}/replay", headers=headers)
    assert replayed.status_code == 200, replayed.text
    assert replayed.json()["id"] == ann["id"] and replayed.json()["status"] == "attempting"
    assert len(replayed.json()["deliveries"]) == 2
    assert await hooks.run() == 1
    assert hooks.receiver.requests()[-1].event_id == ann["id"]
    attempts = (await get(f"{base}/{ann['id']}/attempts"))["data"]
    assert [a["http_status_code"] for a in attempts] == [200, 200, 500]  # newest first
    assert len({a["id"] for a in attempts}) == 3
    again = (await get(f"{base}/{ann['id']}/attempts"))["data"]
    assert [a["id"] for a in again] == [a["id"] for a in attempts]  # stable ids
    page = await get(f"{base}/{ann['id']}/attempts?limit=2")
    assert [a["id"] for a in page["data"]] == [a["id"] for a in attempts[:2]]
    assert page["has_more"] is True
    page = await get(f"{base}/{ann['id']}/attempts?after={attempts[1]['id']}")
    assert [a["id"] for a in page["data"]] == [attempts[2]["id"]] and page["has_more"] is False
    page = await get(f"{base}/{ann['id']}/attempts?before={attempts[2]['id']}&limit=1")
    assert [a["id"] for a in page["data"]] == [attempts[1]["id"]] and page["has_more"] is True
    # The delivery routes still tell the same history, one row a delivery.
    assert len(await hooks.deliveries(created["id"])) == 3

    # Unknown, malformed or foreign: 404; a cursor from elsewhere: 422.
    for path in (f"{base}/nope", f"{base}/{uuid.uuid4()}", f"{base}/{uuid.uuid4()}/attempts"):
        assert_error(await hooks.client.get(path, headers=headers), 404, "not_found")
    assert_error(
        await hooks.client.post(f"{base}/{uuid.uuid4()}/replay", headers=headers), 404, "not_found"
    )
    other = await hooks.tenants.create()
    assert_error(await hooks.client.get(base, headers=other.headers), 404, "not_found")
    assert_error(
        await hooks.client.post(f"{base}/{ann['id']}/replay", headers=other.headers),
        404,
        "not_found",
    )
    for cursor in ("nope", str(uuid.uuid4())):
        assert_error(
            await hooks.client.get(f"{base}?after={cursor}", headers=headers),
            422,
            "validation_error",
        )
        assert_error(
            await hooks.client.get(f"{base}/{ann['id']}/attempts?after={cursor}", headers=headers),
            422,
            "validation_error",
        )
