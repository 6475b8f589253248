"""``poll.voted``: an automation's send step embeds a poll, the vote resumes the run waiting
for it and starts the automations it triggers, and webhooks subscribed to it receive it."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from mailbridge.runner.activity import ActivityDispatcher
from mailbridge.services.webhooks._activity_dispatch import default_consumers
from mailbridge.storage.tables import Contact, Email
from tests.integration.automation_setup import engine, install, runs, steps_of
from tests.integration.poll_setup import VOTE_LINK, click, create_poll, signed_link, vote_rows
from tests.integration.sending import Sending
from tests.integration.test_auth import assert_error
from tests.integration.webhook_setup import Hooks

SIGNED_UP = {"key": "start", "type": "trigger", "config": {"event_name": "user.signed_up"}}


async def poll_template(sending: Sending, poll_id: str) -> str:
    body = {
        "name": "Survey", "from": "Shop <news@shop.io>", "subject": "One question",
        "html": f"<p>Hello {{{{{{contact.email}}}}}}</p>{{{{{{poll:{poll_id}}}}}}}",
        "text": f"Hello {{{{{{contact.email}}}}}}\n{{{{{{poll:{poll_id}}}}}}}",
    }  # fmt: skip
    created = await sending.client.post("/templates", json=body, headers=sending.tenant.headers)
    assert created.status_code == 201, created.text
    template_id = str(created.json()["id"])
    published = await sending.client.post(
        f"/templates/{template_id}/publish", headers=sending.tenant.headers
    )
    assert published.status_code == 200, published.text
    return template_id


async def test_a_vote_resumes_the_run_waiting_for_it_and_triggers_automations(
    sending: Sending,
) -> None:
    context, team_id, headers = sending.context, sending.tenant.team_id, sending.tenant.headers
    poll_id = await create_poll(sending.client, headers, options=["Love it", "Meh"])
    other_poll = await create_poll(sending.client, headers)
    template_id = await poll_template(sending, poll_id)
    survey = await install(
        context, team_id,
        [
            SIGNED_UP,
            {"key": "ask", "type": "send_email", "config": {"template": {"id": template_id}}},
            {"key": "wait", "type": "wait_for_event",
             "config": {"event_name": "poll.voted", "timeout": "2 days",
                        "filter_rule": {"type": "rule", "field": "event.poll_id",
                                        "operator": "eq", "value": poll_id}}},
            {"key": "voted", "type": "contact_update",
             "config": {"last_name": {"var": "event.label"}}},
            {"key": "silent", "type": "contact_update", "config": {"last_name": "Silent"}},
        ],
        [
            {"from": "start", "to": "ask"}, {"from": "ask", "to": "wait"},
            {"from": "wait", "to": "voted", "type": "event_received"},
            {"from": "wait", "to": "silent", "type": "timeout"},
        ],
        template_id=template_id, name="Survey",
    )  # fmt: skip
    thanks = await install(
        context, team_id,
        [{"key": "start", "type": "trigger", "config": {"event_name": "poll.voted"}},
         {"key": "tag", "type": "contact_update", "config": {"first_name": "Voter"}}],
        [{"from": "start", "to": "tag"}], name="Thanks",
    )  # fmt: skip
    answer = await sending.client.post(
        "/events/send", json={"event": "user.signed_up", "email": "ann@corp.io"}, headers=headers
    )
    assert answer.status_code == 202, answer.text
    await engine(context).run_due()
    [run] = await runs(context, survey)
    assert (run.phase, run.step_key) == ("waiting", "wait")

    async with context.database.session() as session:
        [sent] = await session.scalars(select(Email).where(Email.team_id == team_id))
        contact = await session.scalar(select(Contact).where(Contact.email == "ann@corp.io"))
    assert contact is not None and sent.contact_id == contact.id and sent.text is not None
    links = VOTE_LINK.findall(sent.text)
    assert len(links) == 2 and links == VOTE_LINK.findall((sent.html or "").replace("&amp;", "&"))
    assert "Hello ann@corp.io" in sent.text

    dispatcher = ActivityDispatcher(context, default_consumers(context))
    # A vote in another poll does not satisfy the filter rule.
    elsewhere = await signed_link(context, team_id, other_poll, 0, contact_id=contact.id)
    assert (await click(sending.client, elsewhere)).status_code == 200
    await dispatcher.dispatch_all()
    await engine(context).run_due()
    assert (await runs(context, survey))[0].phase == "waiting"

    assert "Meh" in (await click(sending.client, links[1])).text  # the link the mail carried
    [vote] = await vote_rows(context, poll_id)
    assert (vote.contact_id, vote.option) == (contact.id, 1)
    await dispatcher.dispatch_all()
    await engine(context).run_due()
    [run] = await runs(context, survey)
    assert run.status == "completed"
    assert await steps_of(context, run.id) == [
        ("ask", "completed"), ("wait", "completed"), ("voted", "completed"),
    ]  # fmt: skip
    assert len(await runs(context, thanks)) == 2  # one run per vote, of either poll
    async with context.database.session() as session:
        contact = await session.get(Contact, contact.id, populate_existing=True)
    assert contact is not None and (contact.first_name, contact.last_name) == ("Voter", "Meh")


async def test_without_a_vote_the_wait_times_out(sending: Sending) -> None:
    context, team_id, headers = sending.context, sending.tenant.team_id, sending.tenant.headers
    poll_id = await create_poll(sending.client, headers)
    automation_id = await install(
        context, team_id,
        [SIGNED_UP,
         {"key": "wait", "type": "wait_for_event",
          "config": {"event_name": "poll.voted", "timeout": "1 day"}},
         {"key": "voted", "type": "contact_update", "config": {"last_name": "Voted"}}],
        [{"from": "start", "to": "wait"},
         {"from": "wait", "to": "voted", "type": "event_received"}],
    )  # fmt: skip
    await sending.client.post(
        "/events/send", json={"event": "user.signed_up", "email": "bob@corp.io"}, headers=headers
    )
    await engine(context).run_due()
    sending.clock.advance(timedelta(days=1, seconds=1))
    await engine(context).run_due()
    [run] = await runs(context, automation_id)
    assert await steps_of(context, run.id) == [("wait", "timed_out")]
    assert await vote_rows(context, poll_id) == []


async def test_poll_voted_is_a_built_in_event_not_a_custom_one(sending: Sending) -> None:
    headers = sending.tenant.headers
    sent = await sending.client.post(
        "/events/send", json={"event": "poll.voted", "email": "ann@corp.io"}, headers=headers
    )
    assert_error(sent, 422, "validation_error")
    defined = await sending.client.post("/events", json={"name": "poll.voted"}, headers=headers)
    assert_error(defined, 422, "validation_error")


async def test_a_vote_is_delivered_to_the_webhooks_subscribed_to_it(hooks: Hooks) -> None:
    created = await hooks.create(["poll.voted"])
    unrelated = await hooks.create(["contact.updated"])
    poll_id = await create_poll(hooks.client, hooks.tenant.headers)
    ann = await hooks.add_contact("ann@corp.io")
    await hooks.run()  # contact.created: nobody here listens to it
    link = await signed_link(hooks.context, hooks.tenant.team_id, poll_id, 1, contact_id=ann)
    assert (await click(hooks.client, link)).status_code == 200

    assert await hooks.run() == 1
    [request] = hooks.receiver.requests()
    assert request.signed_with(created["signing_secret"])
    assert request.payload["type"] == "poll.voted"
    assert request.payload["data"] == {
        "poll_id": poll_id, "option": 1, "label": "Friday", "contact_id": ann,
        "email": "ann@corp.io",
    }  # fmt: skip
    [delivery] = await hooks.deliveries(created["id"])
    assert delivery["event_type"] == "poll.voted" and delivery["status"] == "succeeded"
    assert await hooks.deliveries(unrelated["id"]) == []
    # A repeated click records nothing, so nothing more is delivered.
    await click(hooks.client, link)
    assert await hooks.run() == 0
