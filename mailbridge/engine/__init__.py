"""The automation engine, a library first (DESIGN §4).

Build a graph from the public vocabulary with :func:`build` (every problem reported
at once), register it with a backend, emit events and advance due runs with
:class:`Engine` — with an injected clock, and the in-memory ports of
:class:`MemoryBackend` or mailbridge's database ones. See ``examples/embed.py``.
"""

from mailbridge.engine.engine import Emitted, Engine, Progress
from mailbridge.engine.graph import Connection, Graph, Step, Trigger
from mailbridge.engine.memory import MemoryBackend, MemoryReferences
from mailbridge.engine.ports import (
    AutomationRef,
    Backend,
    Event,
    OutgoingEmail,
    RunQuotaExceeded,
    TemplateContent,
    Transaction,
)
from mailbridge.engine.runs import Phase, Run, RunStatus, StepRecord, StepStatus
from mailbridge.engine.validation import GraphInvalid, Problem, build
from mailbridge.engine.vocabulary import graph_to_public, public_view

__all__ = [
    "AutomationRef",
    "Backend",
    "Connection",
    "Emitted",
    "Engine",
    "Event",
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
    "StepRecord",
    "StepStatus",
    "TemplateContent",
    "Transaction",
    "Trigger",
    "build",
    "graph_to_public",
    "public_view",
]
