"""The automation engine, a library first (DESIGN §4).

Build a graph from the public vocabulary with :func:`build` (every problem reported
at once), register it with a backend, emit events and advance due runs with
:class:`Engine` — with an injected clock, the step kinds of a :class:`Vocabulary`
(``mailbridge.steps.VOCABULARY``: the engine imports no step kind itself), and the
in-memory ports of :class:`MemoryBackend` or mailbridge's database ones. See
``examples/embed.py``.
"""

from mailbridge.engine.engine import Emitted, Engine, Progress
from mailbridge.engine.execution import Execution
from mailbridge.engine.graph import Connection, Graph, Step, Trigger
from mailbridge.engine.memory import MemoryBackend, MemoryReferences
from mailbridge.engine.ports import (
    AutomationRef,
    Backend,
    Event,
    OutgoingEmail,
    RunQuotaExceeded,
    StepKind,
    TemplateContent,
    Transaction,
)
from mailbridge.engine.runs import Phase, Run, RunStatus, StepRecord, StepStatus
from mailbridge.engine.validation import GraphInvalid, Problem, build
from mailbridge.engine.vocabulary import Vocabulary

__all__ = [
    "AutomationRef",
    "Backend",
    "Connection",
    "Emitted",
    "Engine",
    "Event",
    "Execution",
    "Graph",
    "GraphInvalid",
    "MemoryBackend",
    "MemoryReferences",
    "OutgoingEmail",
    "Phase",
    "Problem",
    "Progress",
    "Run",
    "RunQuotaExceeded",
    "RunStatus",
    "Step",
    "StepKind",
    "StepRecord",
    "StepStatus",
    "TemplateContent",
    "Transaction",
    "Trigger",
    "Vocabulary",
    "build",
]
