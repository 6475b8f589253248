"""Webhooks through the API (spec §4.10): create, read, list, change, delete; who may; the
endpoint and event rules; deliveries of another team's webhook."""

from __future__ import annotations

import json

import httpx
import pytest

from mailbridge.config import Settings
from mailbridge.services.accounts._api_keys import Permission
from mailbridge.services.webhooks._subscriptions import WEBHOOK_EVENTS
from tests.integration.conftest import Tenant, Tenants, bearer
from tests.integration.test_auth import assert_error
from tests.integration.test_domains import mailbridge_cli
from tests.integration.webhook_setup import Hooks

ENDPOINT = "https://hooks.partner.io/mailbridge"


async def create(client: httpx.AsyncClient, tenant: Tenant, **body: object) -> httpx.Response:
    return await client.post(
        "/webhooks",
        json={"endpoint": ENDPOINT, "events": ["email.delivered"], **body},
        headers=tenant.headers,
    )


async def test_create_answers_the_secret_once(client: httpx.AsyncClient, tenant: Tenant) -> None:
    response = await create(client, tenant, events=["email.delivered", "email.bounced"])
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["object"] == "webhook"
    assert created["id"].isdigit()
    assert created["signing_secret"].startswith("whsec_") and len(created["signing_secret"]) > 30
    assert created["endpoint"] == ENDPOINT
    assert created["events"] == ["email.delivered", "email.bounced"]
    assert created["status"] == "enabled" and created["disabled_reason"] is None

    fetched = await client.get(f"/webhooks/{created['id']}", headers=tenant.headers)
    assert fetched.status_code == 200
    assert "signing_secret" not in fetched.json()
    assert {k: v for k, v in created.items() if k != "signing_secret"} == fetched.json()
    listed = await client.get("/webhooks", headers=tenant.headers)
    assert all("signing_secret" not in item for item in listed.json()["data"])


async def test_every_known_event_can_be_subscribed_and_repeats_are_dropped(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    events = [*WEBHOOK_EVENTS, "email.sent"]
    response = await create(client, tenant, events=events)
    assert response.status_code == 201, response.text
    assert response.json()["events"] == list(WEBHOOK_EVENTS)
    assert "automation.run.completed" in WEBHOOK_EVENTS and "email.received" in WEBHOOK_EVENTS


@pytest.mark.parametrize(
    ("body", "name", "mentions"),
    [
        ({"events": ["email.delivered", "email.teleported"]}, "validation_error", "teleported"),
        ({"events": []}, "validation_error", "at least one"),
        ({"events": "email.delivered"}, "validation_error", "events"),
        ({"endpoint": "ftp://files.partner.io/x"}, "validation_error", "http or https"),
        ({"endpoint": "not a url"}, "validation_error", "endpoint"),
        ({"endpoint": "https://" + "a" * 2050 + ".io/"}, "validation_error", "2048"),
    ],
)
async def test_bad_bodies_are_422(
    client: httpx.AsyncClient, tenant: Tenant, body: dict[str, object], name: str, mentions: str
) -> None:
    response = await create(client, tenant, **body)
    assert_error(response, 422, name)
    assert mentions in response.json()["message"]


async def test_missing_fields_are_named(client: httpx.AsyncClient, tenant: Tenant) -> None:
    response = await client.post(
        "/webhooks", json={"events": ["email.sent"]}, headers=tenant.headers
    )
    assert_error(response, 422, "missing_required_field")
    assert "endpoint" in response.json()["message"]
    response = await client.post("/webhooks", json={"endpoint": ENDPOINT}, headers=tenant.headers)
    assert_error(response, 422, "missing_required_field")
    assert "events" in response.json()["message"]


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:9000/hook",
        "http://[fe80::1]/hook",
    ],
)
async def test_private_loopback_and_link_local_endpoints_are_refused(
    client: httpx.AsyncClient, tenant: Tenant, endpoint: str
) -> None:
    response = await create(client, tenant, endpoint=endpoint)
    assert_error(response, 422, "validation_error")
    assert "non-public" in response.json()["message"]


@pytest.mark.parametrize(
    "endpoint", ["http://a..b/hook", "http://xn--a.com/hook", f"http://{'a' * 64}.com/hook"]
)
async def test_hosts_no_lookup_can_find_are_422_not_500(
    client: httpx.AsyncClient, tenant: Tenant, endpoint: str
) -> None:
    assert_error(await create(client, tenant, endpoint=endpoint), 422, "validation_error")


async def test_private_endpoints_are_allowed_when_the_operator_says_so(
    hooks: Hooks, settings: Settings
) -> None:
    assert hooks.context.settings.webhook_allow_private and not settings.webhook_allow_private
    created = await hooks.create(endpoint="http://127.0.0.1:8080/hook")
    assert created["endpoint"] == "http://127.0.0.1:8080/hook"


async def test_ids_are_numbers_and_foreign_or_odd_ids_are_404(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    mine = (await create(client, tenant)).json()["id"]
    other = await tenants.create()
    theirs = (await create(client, other)).json()["id"]
    assert int(theirs) > int(mine)
    for webhook_id in (theirs, "abc", "-1", "1.5", "99999999999999999999", "2147483648"):
        for method in ("GET", "PATCH", "DELETE"):
            json = {"events": ["email.sent"]} if method == "PATCH" else None
            response = await client.request(
                method, f"/webhooks/{webhook_id}", json=json, headers=tenant.headers
            )
            assert_error(response, 404, "not_found")
        response = await client.get(f"/webhooks/{webhook_id}/deliveries", headers=tenant.headers)
        assert_error(response, 404, "not_found")
    # The foreign webhook is untouched.
    assert (await client.get(f"/webhooks/{theirs}", headers=other.headers)).status_code == 200


async def test_delete_answers_the_spec_shape_and_the_webhook_is_gone(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    webhook_id = (await create(client, tenant)).json()["id"]
    # The Resend SDK sends `{}` with DELETE.
    response = await client.request(
        "DELETE", f"/webhooks/{webhook_id}", json={}, headers=tenant.headers
    )
    assert response.status_code == 200
    assert response.json() == {"object": "webhook", "id": webhook_id, "deleted": True}
    assert_error(
        await client.get(f"/webhooks/{webhook_id}", headers=tenant.headers), 404, "not_found"
    )
    assert_error(
        await client.delete(f"/webhooks/{webhook_id}", headers=tenant.headers), 404, "not_found"
    )
    # A new webhook never takes the id of a deleted one.
    assert int((await create(client, tenant)).json()["id"]) > int(webhook_id)


async def test_list_is_paginated_newest_first_with_numeric_cursors(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    ids = [(await create(client, tenant)).json()["id"] for _ in range(5)]
    other = await tenants.create()
    foreign = (await create(client, other)).json()["id"]
    first = (await client.get("/webhooks?limit=2", headers=tenant.headers)).json()
    assert first["object"] == "list" and first["has_more"] is True
    assert [item["id"] for item in first["data"]] == ids[::-1][:2]
    rest = await client.get(f"/webhooks?limit=10&after={ids[3]}", headers=tenant.headers)
    assert [item["id"] for item in rest.json()["data"]] == ids[::-1][2:]
    assert rest.json()["has_more"] is False
    before = await client.get(f"/webhooks?before={ids[1]}", headers=tenant.headers)
    assert [item["id"] for item in before.json()["data"]] == ids[::-1][:3]
    for cursor in (foreign, "abc", "12345678901234567890"):
        response = await client.get(f"/webhooks?after={cursor}", headers=tenant.headers)
        assert_error(response, 422, "validation_error")
    assert_error(
        await client.get("/webhooks?limit=0", headers=tenant.headers), 422, "validation_error"
    )


async def test_patch_changes_endpoint_events_and_status(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    webhook_id = (await create(client, tenant)).json()["id"]
    response = await client.patch(
        f"/webhooks/{webhook_id}",
        json={"endpoint": "https://other.partner.io/in", "events": ["contact.created"]},
        headers=tenant.headers,
    )
    assert response.status_code == 200, response.text
    changed = response.json()
    assert changed["endpoint"] == "https://other.partner.io/in"
    assert changed["events"] == ["contact.created"]
    assert "signing_secret" not in changed

    disabled = await client.patch(
        f"/webhooks/{webhook_id}", json={"status": "disabled"}, headers=tenant.headers
    )
    assert disabled.json()["status"] == "disabled" and disabled.json()["disabled_reason"]
    enabled = await client.patch(
        f"/webhooks/{webhook_id}", json={"status": "enabled"}, headers=tenant.headers
    )
    assert enabled.json()["status"] == "enabled" and enabled.json()["disabled_reason"] is None

    for body in ({"status": "paused"}, {"events": ["nope"]}, {"endpoint": "http://10.0.0.1/"}):
        response = await client.patch(f"/webhooks/{webhook_id}", json=body, headers=tenant.headers)
        assert_error(response, 422, "validation_error")
    unchanged = await client.get(f"/webhooks/{webhook_id}", headers=tenant.headers)
    assert unchanged.json()["events"] == ["contact.created"]


async def test_who_may_call_what(
    client: httpx.AsyncClient, tenant: Tenant, tenants: Tenants
) -> None:
    webhook_id = (await create(client, tenant)).json()["id"]
    _key, sending = await tenants.key(tenant, Permission.SENDING_ACCESS)
    for method, path in (
        ("GET", "/webhooks"),
        ("POST", "/webhooks"),
        ("GET", f"/webhooks/{webhook_id}"),
        ("DELETE", f"/webhooks/{webhook_id}"),
        ("GET", f"/webhooks/{webhook_id}/deliveries"),
        ("POST", f"/webhooks/{webhook_id}/signing-secret/rotate"),
    ):
        response = await client.request(method, path, headers=bearer(sending))
        assert_error(response, 401, "restricted_api_key")
    assert_error(await client.get("/webhooks"), 401, "missing_api_key")


async def test_unknown_deliveries_are_404(client: httpx.AsyncClient, tenant: Tenant) -> None:
    webhook_id = (await create(client, tenant)).json()["id"]
    base = f"/webhooks/{webhook_id}/deliveries"
    for delivery_id in ("nope", "0191d0c8-7c1a-7bbb-8000-000000000000"):
        assert_error(
            await client.get(f"{base}/{delivery_id}", headers=tenant.headers), 404, "not_found"
        )
        response = await client.post(f"{base}/{delivery_id}/replay", headers=tenant.headers)
        assert_error(response, 404, "not_found")
    listed = await client.get(base, headers=tenant.headers)
    assert listed.json() == {"object": "list", "has_more": False, "data": []}
    assert_error(
        await client.get(f"{base}?status=lost", headers=tenant.headers), 422, "validation_error"
    )


async def test_the_operator_commands(
    client: httpx.AsyncClient, tenant: Tenant, settings: Settings
) -> None:
    code, out, err = await mailbridge_cli(
        settings,
        "admin",
        "webhooks",
        "create",
        ENDPOINT,
        "--event",
        "email.sent",
        "--event",
        "email.failed",
    )
    assert code == 0, err
    created = json.loads(out)
    assert created["events"] == ["email.sent", "email.failed"]
    assert created["signing_secret"].startswith("whsec_")
    fetched = await client.get(f"/webhooks/{created['id']}", headers=tenant.headers)
    assert fetched.json()["endpoint"] == ENDPOINT

    code, out, err = await mailbridge_cli(settings, "admin", "webhooks", "list")
    assert code == 0 and [item["id"] for item in json.loads(out)["data"]] == [created["id"]]
    code, out, err = await mailbridge_cli(settings, "admin", "webhooks", "get", created["id"])
    assert code == 0 and "signing_secret" not in json.loads(out)
    code, out, err = await mailbridge_cli(
        settings, "admin", "webhooks", "rotate-secret", created["id"]
    )
    assert code == 0, err
    rotated = json.loads(out)["signing_secret"]
    assert rotated.startswith("whsec_") and rotated != created["signing_secret"]
    code, out, err = await mailbridge_cli(
        settings, "admin", "webhooks", "create", "http://10.0.0.1/", "--event", "email.sent"
    )
    assert code == 1 and json.loads(err)["name"] == "validation_error"
    code, out, err = await mailbridge_cli(settings, "admin", "webhooks", "delete", created["id"])
    assert code == 0 and json.loads(out)["deleted"] is True
    code, out, err = await mailbridge_cli(settings, "admin", "webhooks", "get", created["id"])
    assert code == 1 and json.loads(err)["name"] == "not_found"
