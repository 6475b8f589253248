"""The engine on the database: events in over HTTP, runs advanced by the SQL backend."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from mailbridge.runner.activity import ActivityDispatcher
from mailbridge.services.accounts import _plans as plans
from mailbridge.services.webhooks._activity_dispatch import default_consumers
from mailbridge.storage.tables import (
    AutomationRun,
    Contact,
    Email,
    SegmentMember,
)
from tests.integration.automation_setup import (
    activity,
    engine,
    install,
    published_template,
    runs,
    segment,
    steps_of,
)
from tests.integration.sending import Sending

pytestmark = pytest.mark.integration

TRIGGER = {"key": "start", "type": "trigger", "config": {"event_name": "user.signed_up"}}


async def emit(sending: Sending, **body: Any) -> dict[str, Any]:
    body.setdefault("event", "user.signed_up")
    response = await sending.client.post("/events/send", json=body, headers=sending.tenant.headers)
    assert response.status_code == 202, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def register_property(sending: Sending, key: str) -> None:
    response = await sending.client.post(
        "/contact-properties", json={"key": key, "type": "string"}, headers=sending.tenant.headers
    )
    assert response.status_code == 201, response.text


async def test_a_run_walks_send_delay_condition_update_and_segment(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    template_id = await published_template(sending.client, sending.tenant.headers)
    await register_property(sending, "plan")
    async with context.database.session() as session:
        from mailbridge.services.audiences._audiences import default_audience

        audience = await default_audience(session, context.clock, team_id)
    segment_id = await segment(context, team_id, audience.id)
    automation_id = await install(
        context, team_id,
        [
            TRIGGER,
            {"key": "welcome", "type": "send_email",
             "config": {"template": {"id": template_id},
                        "variables": {"PLAN": {"var": "event.plan"}}}},
            {"key": "pause", "type": "delay", "config": {"duration": "2 days"}},
            {"key": "is_pro", "type": "condition",
             "config": {"type": "rule", "field": "event.plan", "operator": "eq", "value": "pro"}},
            {"key": "tag", "type": "contact_update",
             "config": {"first_name": "Ada", "properties": {"plan": {"var": "event.plan"}}}},
            {"key": "join", "type": "add_to_segment", "config": {"segment_id": segment_id}},
        ],
        [
            {"from": "start", "to": "welcome"}, {"from": "welcome", "to": "pause"},
            {"from": "pause", "to": "is_pro"},
            {"from": "is_pro", "to": "tag", "type": "condition_met"},
            {"from": "tag", "to": "join"},
        ],
        template_id=template_id, segment_ids=(segment_id,),
    )  # fmt: skip

    answer = await emit(sending, email="Ada@Corp.io", payload={"plan": "pro"})
    assert len(answer["runs_started"]) == 1
    progress = await engine(context).run_due()
    assert (progress.runs, progress.steps) == (1, 2)  # welcome, then parked on the delay
    (run,) = await runs(context, automation_id)
    assert (run.status, run.phase, run.step_key) == ("running", "sleeping", "pause")

    async with context.database.session() as session:
        (email,) = await session.scalars(select(Email).where(Email.team_id == team_id))
        contact = await session.scalar(select(Contact).where(Contact.email == "ada@corp.io"))
    assert contact is not None and email.contact_id == contact.id
    assert email.to == ["ada@corp.io"] and email.marketing and email.status == "queued"
    assert email.html is not None and "Plan pro for ada@corp.io" in email.html

    sending.clock.advance(timedelta(days=1))
    assert (await engine(context).run_due()).runs == 0  # not yet
    sending.clock.advance(timedelta(days=1, seconds=1))
    assert (await engine(context).run_due()).steps == 3

    (run,) = await runs(context, automation_id)
    assert (run.status, run.phase) == ("completed", "done")
    assert await steps_of(context, run.id) == [
        ("welcome", "completed"), ("pause", "completed"), ("is_pro", "completed"),
        ("tag", "completed"), ("join", "completed"),
    ]  # fmt: skip
    async with context.database.session() as session:
        contact = await session.get(Contact, contact.id, populate_existing=True)
        member = await session.get(SegmentMember, (segment_id, contact.id if contact else ""))
    assert contact is not None and contact.first_name == "Ada"
    assert contact.properties == {"plan": "pro"} and member is not None
    types = [event.type for event in await activity(context, team_id, "automation.run")]
    assert types == ["automation.run.started", "automation.run.completed"]


async def test_wait_for_event_resumes_on_a_match_and_times_out_otherwise(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    automation_id = await install(
        context, team_id,
        [
            TRIGGER,
            {"key": "wait", "type": "wait_for_event",
             "config": {"event_name": "order.paid", "timeout": "1 day",
                        "filter_rule": {"type": "rule", "field": "event.total", "operator": "gt",
                                        "value": 10}}},
            {"key": "thanks", "type": "contact_update", "config": {"last_name": "Paid"}},
            {"key": "nudge", "type": "contact_update", "config": {"last_name": "Late"}},
        ],
        [
            {"from": "start", "to": "wait"},
            {"from": "wait", "to": "thanks", "type": "event_received"},
            {"from": "wait", "to": "nudge", "type": "timeout"},
        ],
    )  # fmt: skip
    await emit(sending, email="ann@corp.io")
    await emit(sending, email="bob@corp.io")
    await engine(context).run_due()

    small = await emit(sending, event="order.paid", email="ann@corp.io", payload={"total": 5})
    assert small["runs_resumed"] == []  # the filter rule does not hold
    paid = await emit(sending, event="order.paid", email="ann@corp.io", payload={"total": 50})
    assert len(paid["runs_resumed"]) == 1
    await engine(context).run_due()
    sending.clock.advance(timedelta(days=1, seconds=1))
    await engine(context).run_due()

    ann, bob = sorted(await runs(context, automation_id), key=lambda run: run.created_at)
    assert await steps_of(context, ann.id) == [("wait", "completed"), ("thanks", "completed")]
    assert await steps_of(context, bob.id) == [("wait", "timed_out"), ("nudge", "completed")]
    async with context.database.session() as session:
        names = dict(
            (row.email, row.last_name)
            for row in await session.scalars(select(Contact).where(Contact.team_id == team_id))
        )
    assert names == {"ann@corp.io": "Paid", "bob@corp.io": "Late"}


async def test_no_reentry_quota_and_contact_delete(
    sending: Sending, monkeypatch: pytest.MonkeyPatch
) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    automation_id = await install(
        context, team_id,
        [TRIGGER, {"key": "wait", "type": "delay", "config": {"duration": "1 hour"}},
         {"key": "bye", "type": "contact_delete", "config": {}}],
        [{"from": "start", "to": "wait"}, {"from": "wait", "to": "bye"}],
    )  # fmt: skip
    assert len((await emit(sending, email="ann@corp.io"))["runs_started"]) == 1
    assert (await emit(sending, email="ann@corp.io"))["runs_started"] == []  # no re-entry

    free = plans.PLANS["free"]
    monkeypatch.setitem(
        plans.PLANS, "free", plans.Plan("free", free.daily_emails, free.monthly_emails,
                                        free.verified_domains, monthly_automation_runs=1),
    )  # fmt: skip
    refused = await sending.client.post(
        "/events/send", json={"event": "user.signed_up", "email": "bob@corp.io"},
        headers=sending.tenant.headers,
    )  # fmt: skip
    assert refused.status_code == 429
    assert refused.json()["name"] == "automation_quota_exceeded"
    async with context.database.session() as session:
        bob = await session.scalar(select(Contact).where(Contact.email == "bob@corp.io"))
    assert bob is None  # nothing of the refused event was kept

    await engine(context).run_due()
    sending.clock.advance(timedelta(hours=1, seconds=1))
    await engine(context).run_due()
    (run,) = await runs(context, automation_id)
    assert run.status == "completed" and run.contact_id is not None
    async with context.database.session() as session:
        assert await session.get(Contact, run.contact_id) is None
    assert await steps_of(context, run.id) == [("wait", "completed"), ("bye", "completed")]


async def test_built_in_events_trigger_runs(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    automation_id = await install(
        context, team_id,
        [{"key": "start", "type": "trigger", "config": {"event_name": "contact.created"}},
         {"key": "hello", "type": "contact_update", "config": {"first_name": "Welcomed"}}],
        [{"from": "start", "to": "hello"}],
    )  # fmt: skip
    created = await sending.client.post(
        "/contacts", json={"email": "cy@corp.io"}, headers=sending.tenant.headers
    )
    assert created.status_code in (200, 201), created.text
    dispatcher = ActivityDispatcher(context, default_consumers(context))
    assert await dispatcher.dispatch_all() >= 1  # contact.created, through every consumer
    await engine(context).run_due()
    (run,) = await runs(context, automation_id)
    assert run.status == "completed"
    async with context.database.session() as session:
        contact = await session.get(Contact, run.contact_id or "")
    assert contact is not None and contact.first_name == "Welcomed"


async def test_two_engines_never_execute_a_step_twice(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    template_id = await published_template(sending.client, sending.tenant.headers)
    automation_id = await install(
        context, team_id,
        [TRIGGER,
         {"key": "welcome", "type": "send_email", "config": {"template": {"id": template_id}}},
         {"key": "done", "type": "contact_update", "config": {"last_name": "Sent"}}],
        [{"from": "start", "to": "welcome"}, {"from": "welcome", "to": "done"}],
        template_id=template_id,
    )  # fmt: skip
    for number in range(40):
        await emit(sending, email=f"user{number}@corp.io")
    first, second = engine(context), engine(context)
    for _ in range(10):
        await asyncio.gather(first.run_due(7), second.run_due(7))
    all_runs = await runs(context, automation_id)
    assert [run.status for run in all_runs] == ["completed"] * 40
    async with context.database.session() as session:
        emails = list(await session.scalars(select(Email).where(Email.team_id == team_id)))
        finished = await session.scalars(
            select(AutomationRun.id).where(AutomationRun.status == "completed")
        )
    assert len(emails) == 40 and len({email.contact_id for email in emails}) == 40
    assert len(list(finished)) == 40


async def test_a_batch_wakes_only_the_workers_with_new_work(sending: Sending) -> None:
    context, team_id = sending.context, sending.tenant.team_id
    template_id = await published_template(sending.client, sending.tenant.headers)
    await install(
        context, team_id,
        [TRIGGER,
         {"key": "welcome", "type": "send_email", "config": {"template": {"id": template_id}}},
         {"key": "pause", "type": "delay", "config": {"duration": "1 hour"}}],
        [{"from": "start", "to": "welcome"}, {"from": "welcome", "to": "pause"}],
        template_id=template_id,
    )  # fmt: skip
    await emit(sending, email="woken@corp.io")
    woken: list[tuple[str, ...]] = []
    context.wake_callbacks.append(lambda *names: woken.append(names))
    await engine(context).run_due(10)  # sends, then parks in the delay
    assert woken and set(woken[-1]) == {"automations", "delivery"}
    woken.clear()
    await engine(context).run_due(10)  # nothing due: nothing to wake
    assert woken == []
