"""The step routes (spec §4.8): public vocabulary in, stored step out, only while the
automation is disabled, each change a checked new version."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from tests.integration.automation_api import Shop, assert_invalid
from tests.integration.test_auth import assert_error

pytestmark = pytest.mark.integration

LINEAR: dict[str, Any] = {
    "steps": [
        {"key": "start", "type": "trigger", "config": {"event_name": "user.created"}},
        {"key": "first", "type": "delay", "config": {"duration": "1 hour"}},
        {"key": "second", "type": "contact_update", "config": {"first_name": "Ann"}},
    ],
    "connections": [{"from": "start", "to": "first"}, {"from": "first", "to": "second"}],
}


def links(automation: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(c["from"], c["to"], c["type"]) for c in automation["connections"]}


async def add(shop: Shop, automation_id: str, **body: Any) -> httpx.Response:
    return await shop.client.post(
        f"/automations/{automation_id}/steps", json=body, headers=shop.headers
    )


async def test_adding_a_send_step_answers_the_stored_step(shop: Shop) -> None:
    created = await shop.create(**LINEAR)
    response = await add(
        shop,
        created["id"],
        type="send_email",
        key="hello",
        config={"template": {"id": "welcome"}, "variables": {"PLAN": "pro"}, "subject": "Hi"},
    )
    assert response.status_code == 201, response.text
    step = response.json()
    assert step == {
        "id": step["id"],
        "key": "hello",
        "type": "send",
        "position": 2,
        "config": {
            "from": "Shop <news@shop.io>",
            "subject": "Hi",
            "html": "<p>Hello</p>",
            "text": "Hello",
            "template_id": shop.template_id,
            "variables": {"PLAN": "pro"},
        },
    }
    automation = await shop.get(created["id"])
    assert automation["steps"][-1] == {
        "id": step["id"],
        "key": "hello",
        "type": "send_email",
        "position": 2,
        "config": {
            "template": {"id": shop.template_id},
            "from": "Shop <news@shop.io>",
            "subject": "Hi",
            "variables": {"PLAN": "pro"},
        },
    }
    # appended after the last step
    assert ("second", "hello", "default") in links(automation)
    assert [v.version for v in await shop.versions(created["id"])] == [1, 2]
    response = await shop.client.get(
        f"/automations/{created['id']}/steps/{step['id']}", headers=shop.headers
    )
    assert response.status_code == 200 and response.json() == step


async def test_keys_are_generated_and_types_named_in_the_stored_vocabulary(shop: Shop) -> None:
    created = await shop.create(**LINEAR)
    response = await add(shop, created["id"], type="wait_for_event", config={"event_name": "paid"})
    assert response.status_code == 201, response.text
    wait = response.json()
    assert (wait["key"], wait["type"], wait["config"]) == (
        "wait_for_event_1",
        "wait",
        {"event_name": "paid"},
    )
    response = await add(
        shop, created["id"], type="delay", config={"duration": "1 day"},
        after="wait_for_event_1", connection_type="timeout",
    )  # fmt: skip
    assert response.json()["key"] == "delay_1" and response.json()["type"] == "delay"
    response = await add(
        shop, created["id"], type="delay", config={"duration": "2 days"},
        after="wait_for_event_1", connection_type="event_received",
    )  # fmt: skip
    assert response.json()["key"] == "delay_2"
    automation = await shop.get(created["id"])
    assert ("wait_for_event_1", "delay_1", "timeout") in links(automation)
    assert ("wait_for_event_1", "delay_2", "event_received") in links(automation)
    assert [s["position"] for s in automation["steps"][1:]] == [0, 1, 2, 3, 4]


async def test_a_step_after_a_connected_one_is_inserted_in_between(shop: Shop) -> None:
    created = await shop.create(**LINEAR)
    response = await add(
        shop, created["id"], type="add_to_segment", key="join", after="start",
        config={"segment_id": shop.segment_id},
    )  # fmt: skip
    assert response.status_code == 201, response.text
    assert response.json()["type"] == "add_to_segment"
    automation = await shop.get(created["id"])
    assert links(automation) == {
        ("start", "join", "default"),
        ("join", "first", "default"),
        ("first", "second", "default"),
    }
    # a step that cannot continue with `default` cannot take the place over
    response = await add(
        shop, created["id"], type="condition", after="start",
        config={"type": "rule", "field": "event.plan", "operator": "exists"},
    )  # fmt: skip
    assert_error(response, 422, "validation_error")
    assert "choose another `after`" in response.json()["message"]


async def test_an_automation_without_steps_gets_its_first_after_the_trigger(shop: Shop) -> None:
    created = await shop.create(steps=LINEAR["steps"][:1], connections=[])
    assert created["steps"] == [created["steps"][0]]
    response = await add(shop, created["id"], type="contact_delete")
    assert response.status_code == 201, response.text
    assert response.json() == {
        "id": response.json()["id"],
        "key": "contact_delete_1",
        "type": "contact_delete",
        "position": 0,
        "config": {},
    }
    assert links(await shop.get(created["id"])) == {("start", "contact_delete_1", "default")}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"type": "trigger"}, "`type` must be one of"),
        ({"type": "send"}, "`type` must be one of"),
        ({"type": "delay", "key": "first", "config": {"duration": "1h"}}, "already used"),
        ({"type": "delay", "key": "", "config": {"duration": "1h"}}, "`key` must be"),
        ({"type": "delay", "after": "nowhere", "config": {"duration": "1h"}}, "`after`"),
        ({"type": "delay", "connection_type": "sideways", "config": {"duration": "1h"}}, "one of"),
        ({"type": "delay", "config": "1 hour"}, "`config` must be an object"),
    ],
)
async def test_bad_step_bodies_are_refused(shop: Shop, body: dict[str, Any], problem: str) -> None:
    created = await shop.create(**LINEAR)
    response = await add(shop, created["id"], **body)
    assert_error(response, 422, "validation_error")
    assert problem in response.json()["message"]
    assert [v.version for v in await shop.versions(created["id"])] == [1]


async def test_a_missing_type_and_graph_problems_are_422(shop: Shop) -> None:
    created = await shop.create(**LINEAR)
    assert_error(await add(shop, created["id"], key="x"), 422, "missing_required_field")
    response = await add(
        shop, created["id"], type="delay", key="slow", config={"duration": "60 days"}
    )
    (error,) = assert_invalid(response, "slow")
    assert "30 days" in error["message"]
    response = await add(
        shop, created["id"], type="send_email", key="mail", config={"template": {"id": "none"}}
    )
    assert_invalid(response, "mail")
    # a condition cannot be left by `default`
    response = await add(
        shop, created["id"], type="delay", key="late", config={"duration": "1h"},
        after="start", connection_type="condition_met",
    )  # fmt: skip
    assert_invalid(response, "start")


async def test_steps_change_only_while_disabled(shop: Shop) -> None:
    created = await shop.create(status="enabled", **LINEAR)
    first_id = created["steps"][1]["id"]
    responses = [
        await add(shop, created["id"], type="delay", config={"duration": "1h"}),
        await shop.client.patch(
            f"/automations/{created['id']}/steps/{first_id}",
            json={"config": {"duration": "2 hours"}},
            headers=shop.headers,
        ),
        await shop.client.delete(
            f"/automations/{created['id']}/steps/{first_id}", headers=shop.headers
        ),
    ]
    for response in responses:
        assert_error(response, 422, "validation_error")
        assert "Disable the automation first" in response.json()["message"]
    assert [v.version for v in await shop.versions(created["id"])] == [1]
    # once stopped, they may
    await shop.client.post(f"/automations/{created['id']}/stop", headers=shop.headers)
    response = await add(shop, created["id"], type="delay", config={"duration": "1h"})
    assert response.status_code == 201, response.text


async def test_patch_renames_and_reconfigures_a_step_keeping_its_id(shop: Shop) -> None:
    created = await shop.create(**LINEAR)
    first = created["steps"][1]
    response = await shop.client.patch(
        f"/automations/{created['id']}/steps/{first['id']}",
        json={"key": "pause", "config": {"duration": "3 days"}},
        headers=shop.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "id": first["id"],
        "key": "pause",
        "type": "delay",
        "position": 0,
        "config": {"duration": "3 days"},
    }
    automation = await shop.get(created["id"])
    assert links(automation) == {("start", "pause", "default"), ("pause", "second", "default")}
    assert [v.version for v in await shop.versions(created["id"])] == [1, 2]

    # another type, and a send config in the stored shape the step routes answer
    response = await shop.client.patch(
        f"/automations/{created['id']}/steps/pause",
        json={"type": "send_email", "config": {"template_id": shop.template_id, "html": "x"}},
        headers=shop.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["id"] == first["id"] and response.json()["type"] == "send"
    assert response.json()["config"]["html"] == "<p>Hello</p>"  # from the template


async def test_patch_step_errors(shop: Shop) -> None:
    created = await shop.create(**LINEAR)
    base = f"/automations/{created['id']}/steps"
    first_id = created["steps"][1]["id"]
    for ref in (str(uuid.uuid4()), "missing", "start"):
        response = await shop.client.patch(f"{base}/{ref}", json={"key": "x"}, headers=shop.headers)
        assert_error(response, 404, "not_found")
        assert_error(
            await shop.client.delete(f"{base}/{ref}", headers=shop.headers), 404, "not_found"
        )
        assert_error(await shop.client.get(f"{base}/{ref}", headers=shop.headers), 404, "not_found")
    response = await shop.client.patch(
        f"{base}/{first_id}", json={"key": "second"}, headers=shop.headers
    )
    assert_error(response, 422, "validation_error")
    response = await shop.client.patch(
        f"{base}/{first_id}", json={"config": {"duration": "forever"}}, headers=shop.headers
    )
    assert_invalid(response, "first")
    response = await shop.client.patch(
        f"{base}/{first_id}", json={"type": "condition"}, headers=shop.headers
    )
    assert_invalid(response, "first")  # a delay's config is no rule, nor may it continue
    other = await shop.sending.tenants.create()
    response = await shop.client.patch(
        f"{base}/{first_id}", json={"key": "y"}, headers=other.headers
    )
    assert_error(response, 404, "not_found")
    assert [v.version for v in await shop.versions(created["id"])] == [1]


async def test_delete_joins_the_neighbours_of_a_step_in_a_chain(shop: Shop) -> None:
    created = await shop.create(
        steps=[
            *LINEAR["steps"],
            {"key": "third", "type": "contact_update", "config": {"last_name": "B"}},
        ],
        connections=[*LINEAR["connections"], {"from": "second", "to": "third"}],
    )
    second = created["steps"][2]
    response = await shop.client.request(
        "DELETE", f"/automations/{created['id']}/steps/{second['id']}", json={},
        headers=shop.headers,
    )  # fmt: skip
    assert response.status_code == 200, response.text
    assert response.json() == {"object": "step", "id": second["id"], "deleted": True}
    automation = await shop.get(created["id"])
    assert [s["key"] for s in automation["steps"]] == ["start", "first", "third"]
    assert links(automation) == {("start", "first", "default"), ("first", "third", "default")}
    assert [s["position"] for s in automation["steps"][1:]] == [0, 1]
    # the last step just goes
    response = await shop.client.delete(
        f"/automations/{created['id']}/steps/third", headers=shop.headers
    )
    assert response.status_code == 200
    assert links(await shop.get(created["id"])) == {("start", "first", "default")}
    assert [v.version for v in await shop.versions(created["id"])] == [1, 2, 3]


async def test_delete_keeps_the_incoming_type_and_refuses_to_strand_steps(shop: Shop) -> None:
    created = await shop.create()  # start → welcome → pause → check ⇒ vip | nudge
    response = await shop.client.delete(
        f"/automations/{created['id']}/steps/vip", headers=shop.headers
    )
    assert response.status_code == 200, response.text
    assert ("check", "nudge", "condition_not_met") in links(await shop.get(created["id"]))
    # removing the condition would leave nudge unreachable
    response = await shop.client.delete(
        f"/automations/{created['id']}/steps/check", headers=shop.headers
    )
    assert_invalid(response, "nudge")
    # a step on a condition branch, followed by a default: its successor takes the branch
    for body in (
        {"type": "delay", "key": "later", "after": "check", "config": {"duration": "1h"},
         "connection_type": "condition_met"},
        {"type": "contact_update", "key": "tag", "after": "later", "config": {"last_name": "V"}},
    ):  # fmt: skip
        response = await add(shop, created["id"], **body)
        assert response.status_code == 201, response.text
    response = await shop.client.delete(
        f"/automations/{created['id']}/steps/later", headers=shop.headers
    )
    assert response.status_code == 200, response.text
    assert ("check", "tag", "condition_met") in links(await shop.get(created["id"]))


async def test_concurrent_step_writes_each_make_their_own_version(shop: Shop) -> None:
    created = await shop.create(**LINEAR)
    responses = await asyncio.gather(
        *(
            add(shop, created["id"], type="delay", key=f"d{n}", config={"duration": "1h"})
            for n in range(5)
        )
    )
    assert [response.status_code for response in responses] == [201] * 5
    assert [v.version for v in await shop.versions(created["id"])] == [1, 2, 3, 4, 5, 6]
    automation = await shop.get(created["id"])
    assert {f"d{n}" for n in range(5)} <= {step["key"] for step in automation["steps"]}
