"""Runner processes SIGKILLed again and again while 1,000 runs go through a 5-step
automation with a send: after the last restart every run has completed and each
contact received exactly one email (counted at a real SMTP listener).

The runs are started before the first runner, so each killed runner dies inside
batches of the automation worker (one transaction a batch) or of the delivery worker.
"""

from __future__ import annotations

import asyncio
import collections
import random
import signal
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.engine import Event
from mailbridge.services.automations._backend import sql_engine
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import AutomationRun, Email
from tests.acceptance.conftest import kill_mid_work
from tests.acceptance.test_delivery_crash import Target, _start, target
from tests.integration.automation_setup import (
    FIVE_STEP_CONNECTIONS,
    five_steps,
    install,
    pro_workspace,
)
from tests.smtp_listener import smtp_listener

pytestmark = pytest.mark.acceptance
__all__ = ["target"]

RUNS = 1_000
KILLS = 5


async def _seed(settings: Settings) -> None:
    context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
    try:
        space = await pro_workspace(context, "crash")
        await install(
            context, space.team_id, five_steps(space.template_id, space.segment_id),
            FIVE_STEP_CONNECTIONS, template_id=space.template_id, segment_ids=(space.segment_id,),
        )  # fmt: skip
        engine = sql_engine(context)
        for number in range(RUNS):
            await engine.emit(Event(space.team_id, "signed_up", email=f"member{number}@mail.net"))
    finally:
        await context.database.dispose()


async def _progress(settings: Settings) -> tuple[dict[str, int], dict[str, int]]:
    database = Database.from_settings(settings)
    try:
        async with database.session() as session:
            runs = await session.execute(
                select(AutomationRun.status, func.count()).group_by(AutomationRun.status)
            )
            emails = await session.execute(
                select(Email.status, func.count()).group_by(Email.status)
            )
            return dict(runs.tuples().all()), dict(emails.tuples().all())
    finally:
        await database.dispose()


def test_killed_runners_complete_every_run_and_send_each_email_once(
    target: Target, tmp_path: Path
) -> None:
    asyncio.run(_seed(target.settings))
    rng = random.Random()
    log = tmp_path / "runner.log"
    with smtp_listener() as listener:
        mid_work = kill_mid_work(
            lambda: _start(target, listener, log),
            lambda: asyncio.run(_progress(target.settings)),
            lambda seen: seen == ({"completed": RUNS}, {"delivered": RUNS}),
            KILLS,
            rng,
        )
        assert mid_work >= 2, f"only {mid_work} kills landed while runs were under way"

        runner = _start(target, listener, log)
        try:
            deadline = time.monotonic() + 180
            while asyncio.run(_progress(target.settings)) != (
                {"completed": RUNS},
                {"delivered": RUNS},
            ):
                assert runner.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, asyncio.run(_progress(target.settings))
                time.sleep(0.25)
        finally:
            runner.send_signal(signal.SIGTERM)
            assert runner.wait(60) == 0
        received = collections.Counter(
            recipient for message in listener.messages() for recipient in message.rcpt_tos
        )

    assert received == {f"member{number}@mail.net": 1 for number in range(RUNS)}
    assert "Traceback" not in log.read_text()
