"""Add a step kind of your own to the engine, with connection types of its own.

Run it with ``.venv/bin/python examples/custom_step.py``. It

1. defines ``branch_by_score``: a step that reads the score an event carries and follows
   ``high`` or ``low`` — connection types mailbridge's built-in kinds do not have. A step
   kind says which connection types may leave it (``edges``) and names the one to follow
   when it runs (``Next(via)``);
2. puts it beside the built-in kinds in a ``Vocabulary`` of the program's own; the engine
   and ``build`` know step and connection types only through the vocabulary they are
   handed, so the new edges are valid there — and only out of that kind's steps;
3. shows the same graph refused by mailbridge's own vocabulary, which has neither the
   kind nor its edges;
4. runs two leads through it with ``MemoryBackend`` and a ``FakeClock``: the hot lead
   takes ``high`` to a sales email at once, the cold one ``low`` to a week's wait and a
   guide.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from mailbridge.clock import FakeClock
from mailbridge.engine import (
    Engine,
    Event,
    Execution,
    GraphInvalid,
    MemoryBackend,
    MemoryReferences,
    TemplateContent,
    Vocabulary,
    build,
)
from mailbridge.engine.runs import Next, Outcome
from mailbridge.steps import ALL, VOCABULARY, StepKind

TEAM, AUDIENCE, DOMAIN = "acme", "leads", "acme.io"


class ScoreBranchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(ge=0, le=100)


class BranchByScore(StepKind):
    """``{threshold}``: an event whose ``score`` is at least the threshold follows ``high``,
    any other (a lower score, or none) ``low``."""

    name: ClassVar[str] = "branch_by_score"  # in graphs the program writes
    stored_name: ClassVar[str] = "score_branch"  # in the graphs its storage keeps
    edges = frozenset({"high", "low"})
    config_model = ScoreBranchConfig

    async def execute(self, execution: Execution) -> Outcome:
        score = execution.run.data(None)["event"].get("score")
        high = isinstance(score, int | float) and score >= execution.step.config["threshold"]
        return Next("high" if high else "low", output={"score": score})


# The built-in kinds and ours: the engine is handed this, and knows nothing else.
LEADS_VOCABULARY = Vocabulary([*ALL, BranchByScore()])

REFERENCES = MemoryReferences(
    domain=DOMAIN,
    templates={
        "call": TemplateContent(
            "call", "Sales <sales@acme.io>", "A call this week?", "<p>Let's talk.</p>", None
        ),
        "guide": TemplateContent(
            "guide", "Acme <hello@acme.io>", "Your getting-started guide", "<p>…</p>", None
        ),
    },
)
STEPS: list[dict[str, Any]] = [
    {"key": "scored", "type": "trigger", "config": {"event_name": "lead.scored"}},
    {"key": "route", "type": "branch_by_score", "config": {"threshold": 50}},
    {"key": "book_call", "type": "send_email", "config": {"template": {"id": "call"}}},
    {"key": "a_week", "type": "delay", "config": {"duration": "7 days"}},
    {"key": "guide", "type": "send_email", "config": {"template": {"id": "guide"}}},
]
CONNECTIONS = [
    {"from": "scored", "to": "route"},
    {"from": "route", "to": "book_call", "type": "high"},
    {"from": "route", "to": "a_week", "type": "low"},
    {"from": "a_week", "to": "guide"},
]


@dataclass
class Summary:
    """What the example did, for whoever called :func:`main`."""

    connection_types: tuple[str, ...] = ()  # of LEADS_VOCABULARY
    refused_without_the_kind: list[str] = field(default_factory=list)  # mailbridge's vocabulary
    refused_misplaced: list[str] = field(default_factory=list)  # the new edges elsewhere
    stored_types: list[str] = field(default_factory=list)
    emails: list[tuple[str, str]] = field(default_factory=list)  # (to, subject), in order
    runs: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # email -> status, steps
    scores: dict[str, Any] = field(default_factory=dict)  # email -> what route read


def problems(vocabulary: Vocabulary, steps: object, connections: object) -> list[str]:
    try:
        build(vocabulary, steps, connections, REFERENCES)
    except GraphInvalid as invalid:
        return [str(problem) for problem in invalid.problems]
    raise AssertionError("the graph was accepted")


async def run_example() -> Summary:
    summary = Summary(connection_types=LEADS_VOCABULARY.connection_types)
    print(f"Connection types of this vocabulary: {', '.join(summary.connection_types)}")

    summary.refused_without_the_kind = problems(VOCABULARY, STEPS, CONNECTIONS)
    print("\nmailbridge's own vocabulary refuses the graph:")
    for problem in summary.refused_without_the_kind:
        print(f"  - {problem}")
    # Ours refuses the new edges out of any other kind, and the old ones out of ours.
    misplaced = [
        {"from": "scored", "to": "route"},
        {"from": "route", "to": "book_call"},  # "default"
        {"from": "book_call", "to": "a_week", "type": "low"},
        {"from": "a_week", "to": "guide"},
    ]
    summary.refused_misplaced = problems(LEADS_VOCABULARY, STEPS, misplaced)
    print("Misplaced edges are refused too:")
    for problem in summary.refused_misplaced:
        print(f"  - {problem}")

    graph = build(LEADS_VOCABULARY, STEPS, CONNECTIONS, REFERENCES)
    summary.stored_types = [step.type for step in graph]
    print(f"\nBuilt {len(graph.steps)} steps; stored types: {summary.stored_types}")

    backend = MemoryBackend()
    backend.add_automation(graph, team_id=TEAM, audience_id=AUDIENCE, domain=DOMAIN)
    clock = FakeClock()
    engine = Engine(backend, clock, LEADS_VOCABULARY)
    for email, score in [("hot@example.com", 82), ("cold@example.com", 17)]:
        await engine.emit(Event(TEAM, "lead.scored", email=email, payload={"score": score}))
    progress = await engine.run_due()
    print(f"{clock.now():%a %d %b} advanced {progress.runs} runs, {progress.steps} steps")
    clock.advance(timedelta(days=7))
    progress = await engine.run_due()
    print(f"{clock.now():%a %d %b} advanced {progress.runs} runs, {progress.steps} steps")

    print("\nEmails the mailer was asked to send:")
    for sent in backend.sent:
        summary.emails.append((sent.email.to, sent.email.subject))
        print(f"  {sent.email.to:<17} {sent.email.subject!r}")
    print("Runs:")
    for run in backend.runs.runs.values():
        contact = backend.contacts.contacts[run.contact_id or ""]
        records = backend.runs.steps_of(run.id)
        steps = [f"{record.step_key}:{record.status}" for record in records]
        summary.runs[contact["email"]] = (str(run.status), steps)
        summary.scores[contact["email"]] = records[0].output
        print(f"  {contact['email']:<17} {run.status:<10} {' -> '.join(steps)}")
    return summary


def main() -> Summary:
    return asyncio.run(run_example())


if __name__ == "__main__":
    main()
