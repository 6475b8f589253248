"""The activity dispatcher's consumers come from a registry: the webhooks context's fan-out
first, then what other contexts' faces registered — so webhooks imports none of them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Sequence
from typing import cast

from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.services.kernel import ServiceContext
from mailbridge.services.webhooks import _activity_dispatch as dispatch
from mailbridge.services.webhooks import default_consumers, register_consumer
from mailbridge.storage.tables import ActivityEvent

CONTEXT = cast(ServiceContext, object())  # consumers only keep it until they consume


def test_each_face_brings_its_consumer_in_a_fresh_process() -> None:
    script = textwrap.dedent(
        """
        import sys
        from mailbridge.services.webhooks import default_consumers

        names = lambda: [consumer.name for consumer in default_consumers(object())]
        print(names(), "mailbridge.services.automations" in sys.modules)
        import mailbridge.services.automations
        print(names())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    # The automations face loads the inboxes face too (its inbox steps act through it).
    assert done.stdout.splitlines() == [
        "['webhooks'] False", "['webhooks', 'inboxes', 'automations']",
    ]  # fmt: skip


def test_the_runner_runs_every_consumer() -> None:
    """The daemon's assembly loads the automations and inboxes faces, so its dispatcher
    runs their consumers after the webhook fan-out."""
    script = (
        "import mailbridge.runner\n"
        "from mailbridge.services.webhooks import default_consumers\n"
        "print([consumer.name for consumer in default_consumers(object())])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.splitlines() == ["['webhooks', 'inboxes', 'automations']"]


class Recording:
    def __init__(self, name: str) -> None:
        self.name = name

    async def consume(
        self, session: AsyncSession, context: ServiceContext, events: Sequence[ActivityEvent]
    ) -> None:
        return None

    def dispatched(self) -> None:
        return None


def test_registering_a_name_again_replaces_it_in_place() -> None:
    import mailbridge.services.automations  # noqa: F401  (registers "automations")

    saved = dict(dispatch._registered)
    before = [consumer.name for consumer in default_consumers(CONTEXT)]
    assert before[0] == "webhooks" and "automations" in before
    try:
        register_consumer("audit", lambda context: Recording("audit"))
        register_consumer("automations", lambda context: Recording("automations (replaced)"))
        names = [consumer.name for consumer in default_consumers(CONTEXT)]
        replaced = ["automations (replaced)" if name == "automations" else name for name in before]
        assert names == [*replaced, "audit"]
    finally:
        dispatch._registered.clear()
        dispatch._registered.update(saved)
    assert [consumer.name for consumer in default_consumers(CONTEXT)] == before
