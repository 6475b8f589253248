"""A Vocabulary derives the step and connection types a graph may use from its kinds:
mailbridge's gives the spec's answers; a kind of one's own brings its edges."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from mailbridge.engine import Execution, GraphInvalid, MemoryReferences, Vocabulary, build
from mailbridge.engine.runs import Next, Outcome
from mailbridge.steps import ALL, VOCABULARY, StepKind
from mailbridge.steps.delay import Delay


class ApprovalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Approval(StepKind):
    name: ClassVar[str] = "approval"
    stored_name: ClassVar[str] = "approval"
    edges = frozenset({"approved", "rejected"})
    config_model = ApprovalConfig

    async def execute(self, execution: Execution) -> Outcome:
        return Next("approved")


TRIGGER = {"key": "start", "type": "trigger", "config": {"event_name": "order.placed"}}
APPROVE = {"key": "ask", "type": "approval", "config": {}}


def wait(key: str) -> dict[str, Any]:
    return {"key": key, "type": "delay", "config": {"duration": 60}}


def test_mailbridges_vocabulary_gives_the_spec_types() -> None:
    assert VOCABULARY.connection_types == (
        "default", "condition_met", "condition_not_met", "timeout", "event_received",
    )  # fmt: skip
    assert VOCABULARY.step_types == (
        "send_email", "delay", "wait_for_event", "condition", "contact_update",
        "contact_delete", "add_to_segment", "add_labels", "archive", "mark_as_spam",
        "move_to_trash", "assign_thread", "draft_reply", "forward_thread",
    )  # fmt: skip


def test_connection_types_come_from_the_kinds() -> None:
    assert Vocabulary([]).connection_types == ("default",)  # the trigger's
    assert Vocabulary([Delay()], edge_order=["timeout", "default"]).connection_types == ("default",)
    ours = Vocabulary([*ALL, Approval()], edge_order=["rejected"])
    assert ours.connection_types == (
        "default", "rejected", "approved", "condition_met", "condition_not_met",
        "event_received", "timeout",
    )  # fmt: skip
    assert ours.step_types[-1] == "approval"


@pytest.mark.parametrize(
    ("kinds", "message"),
    [
        ([Delay(), Delay()], "a step kind cannot be named 'delay': it is taken"),
        ([type("Trigger", (Delay,), {"name": "trigger"})()], "cannot be named 'trigger'"),
        ([Delay(), type("Later", (Delay,), {"name": "later"})()], "stored as 'delay'"),
    ],
)
def test_a_vocabulary_refuses_kinds_that_collide(kinds: list[StepKind], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Vocabulary(kinds)


def test_a_kinds_own_edges_leave_only_its_steps() -> None:
    ours = Vocabulary([*ALL, Approval()])
    steps = [TRIGGER, APPROVE, wait("ship"), wait("refund")]
    good = [
        {"from": "start", "to": "ask"},
        {"from": "ask", "to": "ship", "type": "approved"},
        {"from": "ask", "to": "refund", "type": "rejected"},
    ]
    graph = build(ours, steps, good, MemoryReferences())
    assert graph.next_key("ask", "rejected") == "refund"

    bad = [
        {"from": "start", "to": "ask", "type": "approved"},
        {"from": "ask", "to": "ship"},
        {"from": "ship", "to": "refund", "type": "rejected"},
    ]
    with pytest.raises(GraphInvalid) as refused:
        build(ours, steps, bad, MemoryReferences())
    assert [str(problem) for problem in refused.value.problems] == [
        "start: a 'approved' connection cannot leave it (only default)",
        "ask: a 'default' connection cannot leave it (only approved, rejected)",
        "ship: a 'rejected' connection cannot leave it (only default)",
    ]
    with pytest.raises(GraphInvalid) as refused:
        build(VOCABULARY, [TRIGGER, wait("ship"), wait("refund")], bad[2:], MemoryReferences())
    assert (
        "ship: connection type 'rejected' is not one of ('default', 'condition_met', "
        "'condition_not_met', 'timeout', 'event_received')"
    ) in [str(problem) for problem in refused.value.problems]
