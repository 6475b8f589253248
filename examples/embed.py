"""Embed the mailbridge automation engine in your own program: no HTTP, no database.

Run it with ``.venv/bin/python examples/embed.py``. It

1. builds an onboarding automation in code — welcome email, wait 3 days, check whether
   the contact activated, follow up if not — and validates it with ``build`` (a broken
   graph gets one ``GraphInvalid`` naming every problem with its step key);
2. registers it with ``MemoryBackend``, the in-memory implementation of the engine's
   ports (``mailbridge.engine.ports``);
3. emits events and advances the runs with ``Engine`` and a ``FakeClock``, so three days
   pass in no time;
4. prints what happened: the emails the mailer was asked to send and each run's steps.

A real host implements the ports on its own storage (or uses mailbridge's database
backend), gives ``Engine`` a real clock, calls ``emit`` when something happens to a
contact and ``run_due`` from a timer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from mailbridge.clock import FakeClock
from mailbridge.engine import (
    Engine,
    Event,
    GraphInvalid,
    MemoryBackend,
    MemoryReferences,
    TemplateContent,
    build,
)
from mailbridge.steps import VOCABULARY

TEAM, AUDIENCE, DOMAIN = "acme", "customers", "acme.io"

# What the graph may refer to: published templates (their content is snapshotted into
# the stored graph) and existing segments. Sends must come from the automation's domain.
REFERENCES = MemoryReferences(
    domain=DOMAIN,
    templates={
        "welcome": TemplateContent(
            "welcome", "Acme <hello@acme.io>", "Welcome to Acme", "<p>Hi {{{PLAN}}}!</p>", None
        ),
        "nudge": TemplateContent(
            "nudge", "Acme <hello@acme.io>", "Need a hand getting started?", "<p>…</p>", None
        ),
    },
)

# The public vocabulary of spec §2.2: a trigger step, executable steps, connections.
STEPS: list[dict[str, Any]] = [
    {"key": "signed_up", "type": "trigger", "config": {"event_name": "user.signed_up"}},
    {
        "key": "welcome",
        "type": "send_email",
        "config": {"template": {"id": "welcome"}, "variables": {"PLAN": {"var": "event.plan"}}},
    },
    {"key": "three_days", "type": "delay", "config": {"duration": "3 days"}},
    {
        "key": "activated",
        "type": "condition",
        "config": {
            "type": "rule",
            "field": "contact.properties.activated",
            "operator": "eq",
            "value": True,
        },
    },
    {"key": "mark_active", "type": "contact_update", "config": {"properties": {"stage": "active"}}},
    {"key": "nudge", "type": "send_email", "config": {"template": {"id": "nudge"}}},
]
CONNECTIONS = [
    {"from": "signed_up", "to": "welcome"},
    {"from": "welcome", "to": "three_days"},
    {"from": "three_days", "to": "activated"},
    {"from": "activated", "to": "mark_active", "type": "condition_met"},
    {"from": "activated", "to": "nudge", "type": "condition_not_met"},
]


@dataclass
class Summary:
    """What the example did, for whoever called :func:`main`."""

    problems: list[str] = field(default_factory=list)  # of the broken graph
    emails: list[tuple[str, str]] = field(default_factory=list)  # (to, subject), in order
    runs: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # email -> status, steps
    contacts: dict[str, dict[str, Any]] = field(default_factory=dict)  # email -> properties


def show_broken_graph() -> list[str]:
    """A graph with three mistakes: validation names them all, each with its step key."""
    steps = [
        STEPS[0],
        STEPS[1],
        {"key": "three_days", "type": "delay", "config": {"duration": "40 days"}},
        STEPS[3],
        {"key": "nudge", "type": "send_email", "config": {"template": {"id": "draft"}}},
    ]
    connections = [*CONNECTIONS[:3], {"from": "activated", "to": "nudge"}]  # type "default"
    try:
        build(VOCABULARY, steps, connections, REFERENCES)
    except GraphInvalid as invalid:
        return [str(problem) for problem in invalid.problems]
    raise AssertionError("the broken graph was accepted")


async def run_example() -> Summary:
    summary = Summary(problems=show_broken_graph())
    print("A broken graph is refused with every problem:")
    for problem in summary.problems:
        print(f"  - {problem}")

    graph = build(VOCABULARY, STEPS, CONNECTIONS, REFERENCES)  # raises GraphInvalid when broken
    print(f"\nBuilt {len(graph.steps)} steps; stored types: {[s.type for s in graph]}")

    backend = MemoryBackend()
    automation = backend.add_automation(
        graph, team_id=TEAM, audience_id=AUDIENCE, domain=DOMAIN
    )  # enabled, version 1
    clock = FakeClock()
    engine = Engine(backend, clock, VOCABULARY)

    # Two people sign up: each event starts a run (and creates the contact by address).
    for email, plan in [("ada@example.com", "pro"), ("bob@example.com", "free")]:
        emitted = await engine.emit(
            Event(TEAM, "user.signed_up", email=email, payload={"plan": plan})
        )
        print(f"{clock.now():%a %d %b %H:%M} {email} signed up: run {emitted.started[0][:8]}")
    progress = await engine.run_due()  # the welcome emails, then both runs sleep 3 days
    print(f"{clock.now():%a %d %b %H:%M} advanced {progress.runs} runs, {progress.steps} steps")

    # A day later Ada activates her account; the host records it on the contact.
    clock.advance(timedelta(days=1))
    [ada] = await backend.contacts.about(TEAM, None, "ada@example.com")
    await backend.contacts.update(TEAM, ada["id"], {"properties": {"activated": True}})
    print(f"{clock.now():%a %d %b %H:%M} ada@example.com activated")

    # Nothing is due before the 3 days are over; then the condition picks a branch.
    clock.advance(timedelta(days=1))
    assert (await engine.run_due()).runs == 0
    clock.advance(timedelta(days=1))
    progress = await engine.run_due()
    print(f"{clock.now():%a %d %b %H:%M} advanced {progress.runs} runs, {progress.steps} steps")

    print("\nEmails the mailer was asked to send:")
    for sent in backend.sent:
        summary.emails.append((sent.email.to, sent.email.subject))
        print(f"  {sent.email.to:<18} {sent.email.subject!r}  variables={sent.email.variables}")
    print("Runs:")
    for run in backend.runs.runs.values():
        contact = backend.contacts.contacts[run.contact_id or ""]
        steps = [f"{r.step_key}:{r.status}" for r in backend.runs.steps_of(run.id)]
        summary.runs[contact["email"]] = (str(run.status), steps)
        summary.contacts[contact["email"]] = dict(contact["properties"])
        print(f"  {contact['email']:<18} {run.status:<10} {' -> '.join(steps)}")
    assert automation.version == 1
    return summary


def main() -> Summary:
    return asyncio.run(run_example())


if __name__ == "__main__":
    main()
