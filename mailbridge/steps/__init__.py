"""One module per step type; :data:`VOCABULARY` (what the engine is given) finds a kind by
its public or stored name."""

from __future__ import annotations

from mailbridge.engine.execution import Execution
from mailbridge.engine.vocabulary import Vocabulary
from mailbridge.steps.add_to_segment import AddToSegment
from mailbridge.steps.base import StepKind
from mailbridge.steps.condition import Condition
from mailbridge.steps.contact_delete import ContactDelete
from mailbridge.steps.contact_update import ContactUpdate
from mailbridge.steps.delay import Delay
from mailbridge.steps.inbox_actions import INBOX_ACTIONS
from mailbridge.steps.send_email import SendEmail
from mailbridge.steps.wait_for_event import WaitForEvent

ALL: tuple[StepKind, ...] = (
    SendEmail(), Delay(), WaitForEvent(), Condition(), ContactUpdate(), ContactDelete(),
    AddToSegment(), *INBOX_ACTIONS,
)  # fmt: skip
BY_PUBLIC_NAME: dict[str, StepKind] = {kind.name: kind for kind in ALL}
BY_STORED_NAME: dict[str, StepKind] = {kind.stored_name: kind for kind in ALL}
# What mailbridge's engine runs; messages list the connection types in spec §2.2's order.
VOCABULARY = Vocabulary(
    ALL, edge_order=("default", "condition_met", "condition_not_met", "timeout", "event_received")
)

__all__ = ["ALL", "BY_PUBLIC_NAME", "BY_STORED_NAME", "VOCABULARY", "Execution", "StepKind"]
