"""Automations over HTTP (spec §2.2, §3.2, §4.7): create, read, list, update with
versions, enable checks, delete, stop, duplicate, and the runs routes."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from mailbridge.services.accounts._api_keys import Permission
from mailbridge.services.accounts._teams import Role
from mailbridge.services.audiences._audiences import default_audience_id
from mailbridge.services.domains import _domains as domains
from mailbridge.storage.tables import ActivityEvent, Segment, Team
from tests.integration.automation_api import Shop, assert_invalid
from tests.integration.conftest import bearer
from tests.integration.email_factory import add_domain
from tests.integration.test_auth import assert_error

pytestmark = pytest.mark.integration

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def keys(automation: dict[str, Any]) -> list[str]:
    return [step["key"] for step in automation["steps"]]


def ids(automation: dict[str, Any]) -> dict[str, str]:
    return {step["key"]: step["id"] for step in automation["steps"] if "id" in step}


# -- create and read ----------------------------------------------------------------------


async def test_create_answers_the_full_automation_in_the_public_vocabulary(shop: Shop) -> None:
    created = await shop.create(trigger_config={"allow_reentry": True})
    assert UUID.fullmatch(created["id"])
    assert {k: v for k, v in created.items() if k not in ("id", "steps", "connections")} == {
        "object": "automation",
        "audience_id": default_audience_id(shop.tenant.team_id),
        "domain": "shop.io",
        "name": "Onboarding",
        "trigger": "user.created",
        "status": "disabled",
        "trigger_config": {"allow_reentry": True},
        "trigger_key": "start",
        "enrollments": {"active": 0, "completed": 0},
        "created_at": "2026-11-02T09:30:00.000Z",
        "updated_at": "2026-11-02T09:30:00.000Z",
    }
    trigger, welcome, *rest = created["steps"]
    assert trigger == {
        "key": "start",
        "type": "trigger",
        "config": {"event_name": "user.created", "domain": "shop.io"},
    }
    assert welcome == {
        "id": welcome["id"],
        "key": "welcome",
        "type": "send_email",
        "position": 0,
        "config": {
            "template": {"id": shop.template_id},
            "from": "Shop <news@shop.io>",
            "subject": "Welcome!",
        },
    }
    assert [(s["key"], s["type"], s["position"]) for s in rest] == [
        ("pause", "delay", 1),
        ("check", "condition", 2),
        ("vip", "add_to_segment", 3),
        ("nudge", "wait_for_event", 4),
    ]
    assert all(UUID.fullmatch(step_id) for step_id in ids(created).values())
    assert created["connections"][0] == {"from": "start", "to": "welcome", "type": "default"}
    assert {"from": "check", "to": "nudge", "type": "condition_not_met"} in created["connections"]
    assert await shop.get(created["id"]) == created

    # version 1 keeps the graph in the stored vocabulary, the template snapshotted
    (version,) = await shop.versions(created["id"])
    assert version.version == 1
    stored = {step["key"]: step for step in version.graph["steps"]}
    assert stored["welcome"]["type"] == "send"
    assert stored["welcome"]["config"] == {
        "from": "Shop <news@shop.io>",
        "subject": "Welcome!",
        "html": "<p>Hello</p>",
        "text": "Hello",
        "template_id": shop.template_id,
    }
    assert stored["nudge"]["type"] == "wait"


async def test_a_top_level_trigger_adds_the_trigger_step(shop: Shop) -> None:
    body = shop.body(trigger="order.paid", status="enabled")
    body["steps"] = [{"key": "pause", "type": "delay", "config": {"duration": "1 hour"}}]
    body["connections"] = [{"from": "trigger", "to": "pause"}]
    response = await shop.client.post("/automations", json=body, headers=shop.headers)
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["trigger"] == "order.paid" and created["trigger_key"] == "trigger"
    assert created["status"] == "enabled"
    assert created["steps"][0] == {
        "key": "trigger",
        "type": "trigger",
        "config": {"event_name": "order.paid", "domain": "shop.io"},
    }
    # with a trigger step already there, `trigger` must agree with it
    response = await shop.client.post(
        "/automations", json=shop.body(trigger="other.event"), headers=shop.headers
    )
    assert_invalid(response, "start")


async def test_an_audience_of_the_team_may_be_named(shop: Shop) -> None:
    response = await shop.client.post("/audiences", json={"name": "Beta"}, headers=shop.headers)
    audience_id = response.json()["id"]
    created = await shop.create(audience_id=audience_id)
    assert created["audience_id"] == audience_id
    other = await shop.sending.tenants.create()
    response = await shop.client.post("/audiences", json={"name": "Theirs"}, headers=other.headers)
    foreign = await shop.client.post(
        "/automations", json=shop.body(audience_id=response.json()["id"]), headers=shop.headers
    )
    assert_error(foreign, 404, "not_found")


@pytest.mark.parametrize(
    ("fields", "status", "name"),
    [
        ({"name": None}, 422, "missing_required_field"),
        ({"name": "   "}, 422, "validation_error"),
        ({"name": "x" * 201}, 422, "validation_error"),
        ({"domain": "nowhere.io"}, 422, "validation_error"),
        ({"domain": "pending.io"}, 422, "validation_error"),
        ({"status": "paused"}, 422, "validation_error"),
        ({"trigger_config": []}, 422, "validation_error"),
        ({"trigger_config": {"allow_reentry": "yes"}}, 422, "validation_error"),
        ({"trigger_config": {"max_runs": 3}}, 422, "validation_error"),
        ({"audience_id": "not-an-id"}, 404, "not_found"),
    ],
)
async def test_create_refuses_bad_fields(
    shop: Shop, fields: dict[str, Any], status: int, name: str
) -> None:
    async with shop.sending.context.database.session() as session:
        await domains.create_domain(
            session, shop.sending.clock, shop.sending.context.settings, shop.tenant.team_id,
            "pending.io",
        )  # fmt: skip
    body = shop.body(**fields)
    for field, value in fields.items():
        if value is None:
            del body[field]
    response = await shop.client.post("/automations", json=body, headers=shop.headers)
    assert_error(response, status, name)


async def test_without_domain_the_senders_or_the_only_sending_domain_decide(shop: Shop) -> None:
    """Resend's SDKs send no `domain`: the send steps' `from` (or their templates')
    decides, else the team's only domain that may send; else 422 naming both ways."""
    context, team_id = shop.sending.context, shop.tenant.team_id
    body = shop.body()
    del body["domain"]
    response = await shop.client.post("/automations", json=body, headers=shop.headers)
    assert response.status_code == 201, response.text
    assert response.json()["domain"] == "shop.io"  # the template's `from`

    # A second verified domain (on a plan that has room for it): the senders still
    # decide, and a step's `from` wins over its template's.
    async with context.database.session() as session:
        await session.execute(update(Team).where(Team.id == team_id).values(plan="pro"))
        await session.commit()
    second = await add_domain(context, team_id, "news.shop.io")
    assert (await shop.client.post("/automations", json=body, headers=shop.headers)).json()[
        "domain"
    ] == "shop.io"
    steps = [dict(step) for step in body["steps"]]
    steps[1] = {**steps[1], "config": {**steps[1]["config"], "from": "Hi <hi@news.shop.io>"}}
    response = await shop.client.post(
        "/automations", json={**body, "steps": steps}, headers=shop.headers
    )
    assert response.status_code == 201, response.text
    assert response.json()["domain"] == "news.shop.io"

    # Two senders' domains, or one that may not send: 422, both ways named.
    two = [*steps, {"key": "again", "type": "send_email",
                    "config": {"template": {"id": shop.template_id}}}]  # fmt: skip
    connections = [*body["connections"], {"from": "check", "to": "again", "type": "condition_met"}]
    response = await shop.client.post(
        "/automations", json={**body, "steps": two, "connections": connections},
        headers=shop.headers,
    )  # fmt: skip
    assert_error(response, 422, "validation_error")
    message = response.json()["message"]
    assert "news.shop.io, shop.io" in message and "`domain`" in message and "`from`" in message
    steps[1]["config"]["from"] = "hi@pending.io"
    response = await shop.client.post(
        "/automations", json={**body, "steps": steps}, headers=shop.headers
    )
    assert_error(response, 422, "validation_error")
    assert "pending.io" in response.json()["message"] and "verify" in response.json()["message"]

    # No sender anywhere (only a trigger and a delay): the only sending domain decides.
    bare = {
        "name": "Bare",
        "steps": [
            {"key": "start", "type": "trigger", "config": {"event_name": "user.created"}},
            {"key": "pause", "type": "delay", "config": {"duration": "1 day"}},
        ],
        "connections": [{"from": "start", "to": "pause"}],
    }
    response = await shop.client.post("/automations", json=bare, headers=shop.headers)
    assert_error(response, 422, "validation_error")  # shop.io and news.shop.io
    message = response.json()["message"]
    assert "2 verified domains" in message and "`domain`" in message and "`from`" in message
    async with context.database.session() as session:
        await domains.delete_domain(
            session, shop.sending.clock, context.settings, team_id, second.id
        )
    response = await shop.client.post("/automations", json=bare, headers=shop.headers)
    assert response.status_code == 201, response.text
    assert response.json()["domain"] == "shop.io"


async def test_create_names_every_problem_of_the_graph(shop: Shop) -> None:
    steps = [
        {"key": "start", "type": "trigger", "config": {"event_name": "user.created"}},
        {"key": "draft", "type": "send_email", "config": {"template": {"id": "no-such"}}},
        {"key": "long", "type": "delay", "config": {"duration": "31 days"}},
        {"key": "join", "type": "add_to_segment", "config": {"segment_id": str(uuid.uuid4())}},
        {"key": "loop_a", "type": "delay", "config": {"duration": "1 day"}},
        {"key": "loop_b", "type": "delay", "config": {"duration": "1 day"}},
        {"key": "gone", "type": "contact_delete", "config": {}},
    ]
    connections = [
        {"from": "start", "to": "draft"},
        {"from": "draft", "to": "long"},
        {"from": "long", "to": "join"},
        {"from": "join", "to": "gone"},
        {"from": "loop_a", "to": "loop_b"},
        {"from": "loop_b", "to": "loop_a"},
        {"from": "gone", "to": "loop_a"},
    ]
    response = await shop.client.post(
        "/automations", json=shop.body(steps=steps, connections=connections), headers=shop.headers
    )
    assert response.status_code == 422
    # the cycle is reported under one of its steps: either will do
    cycle_key = next(e["key"] for e in response.json()["errors"] if "cycle" in e["message"])
    assert cycle_key in ("loop_a", "loop_b")
    errors = assert_invalid(response, "draft", "long", "join", "gone", cycle_key)
    messages = " | ".join(f"{e['key']}: {e['message']}" for e in errors)
    assert "draft: config.template.id: template 'no-such' is not published" in messages
    assert "long: config.duration" in messages and "30 days" in messages
    assert "join: config.segment_id" in messages
    assert "cycle" in messages and "gone: this step ends the run" in messages


async def test_a_draft_template_and_a_foreign_domain_are_refused(shop: Shop) -> None:
    response = await shop.client.post(
        "/templates",
        json={"name": "Draft", "html": "<p>x</p>", "from": "a@shop.io", "subject": "s"},
        headers=shop.headers,
    )
    draft_id = response.json()["id"]
    steps = [
        {"key": "start", "type": "trigger", "config": {"event_name": "x", "domain": "other.io"}},
        {"key": "send", "type": "send_email", "config": {"template": {"id": draft_id}}},
        {
            "key": "alias",
            "type": "send_email",
            "config": {"template": {"id": "welcome"}, "from": "news@other.io"},
        },
    ]
    connections = [{"from": "start", "to": "send"}, {"from": "send", "to": "alias"}]
    response = await shop.client.post(
        "/automations", json=shop.body(steps=steps, connections=connections), headers=shop.headers
    )
    errors = assert_invalid(response, "start", "send", "alias")
    assert any("other.io" in e["message"] for e in errors if e["key"] == "alias")


async def test_get_of_an_unknown_foreign_or_malformed_id_is_not_found(shop: Shop) -> None:
    created = await shop.create()
    other = await shop.sending.tenants.create()
    for path, headers in [
        (f"/automations/{created['id']}", other.headers),
        (f"/automations/{uuid.uuid4()}", shop.headers),
        ("/automations/not-an-id", shop.headers),
    ]:
        assert_error(await shop.client.get(path, headers=headers), 404, "not_found")
        assert_error(
            await shop.client.patch(path, json={"name": "x"}, headers=headers), 404, "not_found"
        )
        assert_error(await shop.client.delete(path, headers=headers), 404, "not_found")
        assert_error(await shop.client.post(f"{path}/stop", headers=headers), 404, "not_found")
        assert_error(await shop.client.post(f"{path}/duplicate", headers=headers), 404, "not_found")
        assert_error(await shop.client.get(f"{path}/runs", headers=headers), 404, "not_found")


async def test_the_list_is_light_paginated_and_newest_first(shop: Shop) -> None:
    made = []
    for number in range(3):
        made.append(await shop.create(name=f"A{number}"))
        shop.sending.clock.advance(1)
    other = await shop.sending.tenants.create()
    response = await shop.client.get("/automations?limit=2", headers=shop.headers)
    assert response.status_code == 200
    page = response.json()
    assert page["object"] == "list" and page["has_more"] is True
    assert [item["name"] for item in page["data"]] == ["A2", "A1"]
    assert page["data"][0] == {
        "object": "automation",
        "id": made[2]["id"],
        "name": "A2",
        "status": "disabled",
        "trigger": "user.created",
        "audience_id": made[2]["audience_id"],
        "domain": "shop.io",
        "created_at": made[2]["created_at"],
        "updated_at": made[2]["updated_at"],
    }
    response = await shop.client.get(
        f"/automations?limit=2&after={page['data'][1]['id']}", headers=shop.headers
    )
    assert [item["name"] for item in response.json()["data"]] == ["A0"]
    assert response.json()["has_more"] is False
    response = await shop.client.get("/automations", headers=other.headers)
    assert response.json()["data"] == []
    assert_error(
        await shop.client.get("/automations?limit=0", headers=shop.headers), 422, "validation_error"
    )
    assert (await shop.patch(made[1]["id"], status="enabled")).status_code == 200
    response = await shop.client.get("/automations?status=enabled", headers=shop.headers)
    assert [item["name"] for item in response.json()["data"]] == ["A1"]
    response = await shop.client.get("/automations?status=disabled", headers=shop.headers)
    assert [item["name"] for item in response.json()["data"]] == ["A2", "A0"]
    assert_error(
        await shop.client.get("/automations?status=paused", headers=shop.headers),
        422,
        "validation_error",
    )


# -- update and versions ------------------------------------------------------------------


async def test_patch_changes_name_status_and_trigger_config(shop: Shop) -> None:
    created = await shop.create()
    shop.sending.clock.advance(60)
    response = await shop.patch(
        created["id"], name="Renamed", status="enabled", trigger_config={"allow_reentry": False}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["name"], body["status"], body["trigger_config"]) == (
        "Renamed",
        "enabled",
        {"allow_reentry": False},
    )
    assert body["updated_at"] == "2026-11-02T09:31:00.000Z"
    assert body["steps"] == created["steps"]
    assert len(await shop.versions(created["id"])) == 1  # no graph change, no version
    response = await shop.patch(created["id"], trigger_config=None, status="disabled")
    assert response.json()["trigger_config"] is None and response.json()["status"] == "disabled"
    for fields in (
        {"name": None},
        {"status": "on"},
        {"domain": "other.io"},
        {"audience_id": str(uuid.uuid4())},
        {"steps": None},
    ):
        assert_error(await shop.patch(created["id"], **fields), 422, "validation_error")
    # naming the same domain and audience is no change
    same = await shop.patch(created["id"], domain="SHOP.io", audience_id=created["audience_id"])
    assert same.status_code == 200, same.text


async def test_new_steps_make_a_version_and_runs_keep_theirs(shop: Shop) -> None:
    created = await shop.create()
    run = await shop.add_run(created["id"])
    body = shop.body()
    steps = [step for step in body["steps"] if step["key"] not in ("check", "vip", "nudge")]
    steps.append({"key": "bye", "type": "contact_delete", "config": {}})
    connections = [*body["connections"][:2], {"from": "pause", "to": "bye"}]
    response = await shop.patch(created["id"], steps=steps, connections=connections)
    assert response.status_code == 200, response.text
    updated = response.json()
    assert keys(updated) == ["start", "welcome", "pause", "bye"]
    assert ids(updated)["welcome"] == ids(created)["welcome"]  # kept by key
    assert ids(updated)["pause"] == ids(created)["pause"]
    assert ids(updated)["bye"] not in ids(created).values()
    versions = await shop.versions(created["id"])
    assert [version.version for version in versions] == [1, 2]
    assert len(versions[0].graph["steps"]) == 6 and len(versions[1].graph["steps"]) == 4
    stored = await shop.run(run.id)
    assert stored is not None and stored.version == 1

    # connections alone: the steps stay, a version is added
    response = await shop.patch(
        created["id"], connections=[*body["connections"][:2], {"from": "pause", "to": "bye"}]
    )
    assert response.status_code == 200
    assert [v.version for v in await shop.versions(created["id"])] == [1, 2]  # unchanged graph
    response = await shop.patch(created["id"], trigger="user.verified")
    assert response.json()["trigger"] == "user.verified"
    assert response.json()["steps"][0]["config"]["event_name"] == "user.verified"
    assert [v.version for v in await shop.versions(created["id"])] == [1, 2, 3]
    # a graph problem changes nothing
    response = await shop.patch(created["id"], connections=[])
    assert_invalid(response, "welcome", "pause", "bye")
    assert [v.version for v in await shop.versions(created["id"])] == [1, 2, 3]


async def test_the_graph_of_an_enabled_automation_cannot_change(shop: Shop) -> None:
    created = await shop.create(status="enabled")
    steps = shop.body()["steps"]
    response = await shop.patch(created["id"], steps=steps)
    assert_error(response, 422, "validation_error")
    assert "Disable the automation first" in response.json()["message"]
    assert_error(await shop.patch(created["id"], trigger="x.y"), 422, "validation_error")
    # disabling in the same request is allowed
    response = await shop.patch(
        created["id"],
        status="disabled",
        steps=steps[:3],
        connections=shop.body()["connections"][:2],
    )
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "disabled" and keys(response.json()) == [
        "start",
        "welcome",
        "pause",
    ]


async def test_enabling_checks_the_graph_again(shop: Shop) -> None:
    created = await shop.create()
    async with shop.sending.context.database.session() as session:
        segment = await session.get(Segment, shop.segment_id)
        await session.delete(segment)
        await session.commit()
    response = await shop.patch(created["id"], status="enabled")
    (error,) = assert_invalid(response, "vip")
    assert "segment" in error["message"]
    assert (await shop.get(created["id"]))["status"] == "disabled"
    response = await shop.client.delete(f"/templates/{shop.template_id}", headers=shop.headers)
    assert response.status_code == 200
    assert_invalid(await shop.patch(created["id"], status="enabled"), "vip", "welcome")


# -- delete, stop, duplicate --------------------------------------------------------------


async def test_delete_removes_the_automation_with_its_runs(shop: Shop) -> None:
    created = await shop.create()
    run = await shop.add_run(created["id"], steps=[("welcome", "send_email")])
    response = await shop.client.request(
        "DELETE", f"/automations/{created['id']}", json={}, headers=shop.headers
    )
    assert response.status_code == 200
    assert response.json() == {"object": "automation", "id": created["id"], "deleted": True}
    assert_error(
        await shop.client.get(f"/automations/{created['id']}", headers=shop.headers),
        404,
        "not_found",
    )
    assert await shop.run(run.id) is None
    assert await shop.versions(created["id"]) == []


async def test_stop_disables_and_cancels_running_runs(shop: Shop) -> None:
    created = await shop.create(status="enabled")
    contact = str(uuid.uuid4())
    waiting = await shop.add_run(created["id"], contact_id=contact, phase="waiting")
    sleeping = await shop.add_run(created["id"])
    done = await shop.add_run(created["id"], status="completed")
    other = await shop.create(name="Other", status="enabled")
    elsewhere = await shop.add_run(other["id"])
    assert (await shop.get(created["id"]))["enrollments"] == {"active": 2, "completed": 1}

    shop.sending.clock.advance(timedelta(minutes=5))
    response = await shop.client.post(
        f"/automations/{created['id']}/stop", json={}, headers=shop.headers
    )
    assert response.status_code == 200, response.text
    stopped = response.json()
    assert stopped["status"] == "disabled" and stopped["enrollments"] == {
        "active": 0,
        "completed": 1,
    }
    now = shop.sending.clock.now()
    for run in (waiting, sleeping):
        row = await shop.run(run.id)
        assert row is not None
        assert (row.status, row.phase, row.due_at, row.waiting_event) == (
            "cancelled",
            "done",
            None,
            None,
        )
        assert row.completed_at == now and row.updated_at == now
    finished = await shop.run(done.id)
    untouched = await shop.run(elsewhere.id)
    assert finished is not None and finished.status == "completed"
    assert untouched is not None and untouched.status == "running"
    async with shop.sending.context.database.session() as session:
        events = list(
            await session.scalars(
                select(ActivityEvent).where(ActivityEvent.type == "automation.run.cancelled")
            )
        )
    assert sorted((e.data["id"], e.data["contact_id"]) for e in events) == sorted(
        [(waiting.id, contact), (sleeping.id, None)]
    )
    assert all(
        e.data["automation_id"] == created["id"]
        and e.data["status"] == "cancelled"
        and e.team_id == shop.tenant.team_id
        for e in events
    )
    # stopping again changes nothing
    again = await shop.client.post(f"/automations/{created['id']}/stop", headers=shop.headers)
    assert again.status_code == 200 and again.json()["status"] == "disabled"


async def test_duplicate_copies_the_graph_disabled_with_new_ids(shop: Shop) -> None:
    created = await shop.create(status="enabled", trigger_config={"allow_reentry": True})
    await shop.add_run(created["id"])
    response = await shop.client.post(
        f"/automations/{created['id']}/duplicate", headers=shop.headers
    )
    assert response.status_code == 201, response.text
    copy = response.json()
    assert copy["id"] != created["id"] and copy["name"] == "Onboarding (copy)"
    assert copy["status"] == "disabled" and copy["enrollments"] == {"active": 0, "completed": 0}
    assert copy["trigger_config"] == {"allow_reentry": True}
    assert keys(copy) == keys(created) and copy["connections"] == created["connections"]
    assert not set(ids(copy).values()) & set(ids(created).values())
    strip = [{k: v for k, v in step.items() if k != "id"} for step in created["steps"]]
    assert [{k: v for k, v in step.items() if k != "id"} for step in copy["steps"]] == strip
    assert [v.version for v in await shop.versions(copy["id"])] == [1]
    long = await shop.create(name="n" * 200)
    response = await shop.client.post(f"/automations/{long['id']}/duplicate", headers=shop.headers)
    assert response.json()["name"] == "n" * 193 + " (copy)"


# -- runs ---------------------------------------------------------------------------------


async def test_runs_are_listed_and_read_with_their_steps(shop: Shop) -> None:
    created = await shop.create()
    start = shop.sending.clock.now()
    first = await shop.add_run(
        created["id"], status="completed", created_at=start,
        steps=[("welcome", "send_email"), ("pause", "delay")],
    )  # fmt: skip
    second = await shop.add_run(created["id"], created_at=start + timedelta(seconds=1))
    third = await shop.add_run(
        created["id"], status="failed", created_at=start + timedelta(seconds=2)
    )
    other = await shop.create(name="Other")
    foreign = await shop.add_run(other["id"])

    response = await shop.client.get(f"/automations/{created['id']}/runs", headers=shop.headers)
    assert response.status_code == 200
    listed = response.json()
    assert [item["id"] for item in listed["data"]] == [third.id, second.id, first.id]
    assert listed["data"][1] == {
        "object": "automation_run",
        "id": second.id,
        "automation_id": created["id"],
        "contact_id": None,
        "status": "running",
        "step_key": "pause",
        "version": 1,
        "error": None,
        "created_at": "2026-11-02T09:30:01.000Z",
        "started_at": "2026-11-02T09:30:01.000Z",
        "updated_at": "2026-11-02T09:30:01.000Z",
        "completed_at": None,
    }
    assert listed["data"][0]["error"] == "the contact no longer exists"
    response = await shop.client.get(
        f"/automations/{created['id']}/runs?status=completed", headers=shop.headers
    )
    assert [item["id"] for item in response.json()["data"]] == [first.id]
    response = await shop.client.get(
        f"/automations/{created['id']}/runs?status=running,completed", headers=shop.headers
    )
    assert [item["id"] for item in response.json()["data"]] == [second.id, first.id]
    response = await shop.client.get(
        f"/automations/{created['id']}/runs?limit=1&after={third.id}", headers=shop.headers
    )
    assert [item["id"] for item in response.json()["data"]] == [second.id]
    assert response.json()["has_more"] is True
    for wanted in ("paused", "running,paused", ","):
        assert_error(
            await shop.client.get(
                f"/automations/{created['id']}/runs?status={wanted}", headers=shop.headers
            ),
            422,
            "validation_error",
        )
    assert_error(
        await shop.client.get(
            f"/automations/{created['id']}/runs?after={foreign.id}", headers=shop.headers
        ),
        422,
        "validation_error",
    )

    response = await shop.client.get(
        f"/automations/{created['id']}/runs/{first.id}", headers=shop.headers
    )
    assert response.status_code == 200, response.text
    detail = response.json()
    assert detail["status"] == "completed" and TIMESTAMP.fullmatch(detail["completed_at"])
    assert [(s["key"], s["type"], s["status"]) for s in detail["steps"]] == [
        ("welcome", "send_email", "completed"),
        ("pause", "delay", "completed"),
    ]
    assert set(detail["steps"][0]) == {
        "id", "step_id", "key", "type", "status", "started_at", "completed_at", "output", "error",
        "created_at",
    }  # fmt: skip
    assert detail["steps"][0]["created_at"] == detail["steps"][0]["started_at"]
    assert detail["started_at"] == detail["created_at"]
    assert detail["steps"][1]["output"] == {"n": 1}
    for path in (
        f"/automations/{created['id']}/runs/{foreign.id}",
        f"/automations/{created['id']}/runs/{uuid.uuid4()}",
        f"/automations/{created['id']}/runs/nope",
    ):
        assert_error(await shop.client.get(path, headers=shop.headers), 404, "not_found")


# -- who may do what ----------------------------------------------------------------------


async def test_view_only_members_read_and_sending_keys_are_restricted(shop: Shop) -> None:
    created = await shop.create()
    viewer = bearer(await shop.sending.tenants.member(shop.tenant, Role.VIEW_ONLY))
    assert (
        await shop.client.get(f"/automations/{created['id']}", headers=viewer)
    ).status_code == 200
    assert (await shop.client.get("/automations", headers=viewer)).status_code == 200
    for response in (
        await shop.client.post("/automations", json=shop.body(), headers=viewer),
        await shop.client.patch(
            f"/automations/{created['id']}", json={"name": "x"}, headers=viewer
        ),
        await shop.client.post(f"/automations/{created['id']}/stop", headers=viewer),
        await shop.client.delete(f"/automations/{created['id']}", headers=viewer),
    ):
        assert_error(response, 403, "view_only_member")
    _key, token = await shop.sending.tenants.key(shop.tenant, Permission.SENDING_ACCESS)
    assert_error(
        await shop.client.get("/automations", headers=bearer(token)), 401, "restricted_api_key"
    )


async def test_a_get_with_an_empty_json_body_is_accepted(shop: Shop) -> None:
    created = await shop.create()
    response = await shop.client.request(
        "GET", f"/automations/{created['id']}", json={}, headers=shop.headers
    )
    assert response.status_code == 200 and "statusCode" not in response.json()
    response = await shop.client.request("GET", "/automations", json={}, headers=shop.headers)
    assert response.status_code == 200


async def test_templates_and_segments_of_another_team_are_unknown(shop: Shop) -> None:
    other = await shop.sending.tenants.create()
    await add_domain(shop.sending.context, other.team_id, "their.io")
    steps = shop.body()["steps"]
    steps[1]["config"]["from"] = "news@their.io"
    response = await shop.client.post(
        "/automations", json=shop.body(domain="their.io", steps=steps), headers=other.headers
    )
    errors = {e["key"]: e["message"] for e in assert_invalid(response, "welcome", "vip")}
    assert "is not published" in errors["welcome"] and "does not exist" in errors["vip"]
    # and our automations are not theirs
    await shop.create()
    listed = await shop.client.get("/automations", headers=other.headers)
    assert listed.json()["data"] == []
