"""A runner SIGKILLed while the inbox agent is still thinking: the message is not lost —
another runner asks again after the lease (the same ``webhook-id``) — and the answer is
applied once.

The agent is a real HTTP server in this process, slow on purpose; the runners are the
real ``mailbridge runner`` in subprocesses, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select

from mailbridge.clock import SystemClock
from mailbridge.config import Settings
from mailbridge.services.accounts import _teams as teams
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.database import Database
from mailbridge.storage.tables import (
    ActivityEvent,
    Domain,
    Inbox,
    InboxAgentCall,
    InboxThread,
    InboxThreadLabel,
)
from mailbridge.storage.types import new_id
from tests.acceptance.test_delivery_crash import Target, target  # noqa: F401
from tests.webhook_receiver import webhook_receiver

SECRET = "whsec_" + base64.b64encode(b"the agent crash test's secret").decode()
TIMEOUT = 3  # seconds the agent has; a runner's lease on a call is 2 x that + 10


async def _seed(settings: Settings) -> str:
    """support@shop.io, whose agent may label, with a thread offered to it; the call's id."""
    context = ServiceContext(settings, Database.from_settings(settings), SystemClock())
    now = datetime.now(UTC)
    try:
        async with context.database.session() as session:
            team = await teams.create_team(session, context.clock, "agent-crash", "pro")
            domain = Domain(
                id=new_id(), team_id=team.id, name="shop.io", status="verified",
                receiving=True, dkim_selector="mailbridge", dkim_private_key="",
                dkim_public_key="", created_at=now, updated_at=now,
            )  # fmt: skip
            inbox = Inbox(
                id=new_id(), team_id=team.id, domain_id=domain.id,
                email_address="support@shop.io", name="Support", forwarding=False,
                agent_actions=["add_labels"], created_at=now, updated_at=now,
            )  # fmt: skip
            thread = InboxThread(
                id=new_id(), team_id=team.id, inbox_id=inbox.id, subject="Parcel lost",
                subject_key="parcel lost", correspondent_domain="corp.io",
                from_address="ann@corp.io", to=["support@shop.io"], cc=[], folder="inbox",
                read=False, email_count=1, has_attachment=False, latest_at=now,
                created_at=now, updated_at=now,
            )  # fmt: skip
            call = InboxAgentCall(
                id=new_id(), team_id=team.id, inbox_id=inbox.id, thread_id=thread.id,
                email_id=new_id(), status="pending", attempts=0, due_at=now, created_at=now,
                updated_at=now,
            )  # fmt: skip
            session.add_all([domain, inbox, thread])
            await session.flush()
            session.add(call)
            await session.commit()
            return call.id
    finally:
        await context.database.dispose()


async def _call(settings: Settings, call_id: str) -> tuple[InboxAgentCall, int, int]:
    """The call, the thread's label rows, and the labels events recorded."""
    database = Database.from_settings(settings)
    try:
        async with database.session() as session:
            call = await session.get(InboxAgentCall, call_id)
            assert call is not None
            labels = await session.scalar(select(func.count()).select_from(InboxThreadLabel))
            told = await session.scalar(
                select(func.count()).where(ActivityEvent.type == "inbox.thread.labels.updated")
            )
            return call, int(labels or 0), int(told or 0)
    finally:
        await database.dispose()


def _start(running: Target, agent_url: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **running.env, "MAILBRIDGE_INBOX_AGENT_URL": agent_url,
        "MAILBRIDGE_INBOX_AGENT_SECRET": SECRET, "MAILBRIDGE_INBOX_AGENT_TIMEOUT": str(TIMEOUT),
    }  # fmt: skip
    with log.open("ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "mailbridge", "runner"], env=env, stdout=handle,
            stderr=subprocess.STDOUT,
        )  # fmt: skip


def _until(check: object, what: str, runner: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while not check():  # type: ignore[operator]
        assert runner.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_a_runner_killed_while_the_agent_thinks_loses_nothing_and_applies_once(
    target: Target,  # noqa: F811
    tmp_path: Path,
) -> None:
    log = tmp_path / "runner.log"
    call_id = asyncio.run(_seed(target.settings))
    with webhook_receiver() as agent:
        agent.responder = lambda _request: json.dumps(
            {"actions": [{"type": "add_labels", "labels": ["Lost parcel"]}]}
        ).encode()
        agent.delay = TIMEOUT - 1  # thinking: the first runner dies meanwhile
        first = _start(target, agent.url("/agent"), log)
        try:  # killed once its request is at the agent, before the answer
            _until(lambda: agent.arrived, "the first runner's request", first, log)
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(60)
        held, labels, _told = asyncio.run(_call(target.settings, call_id))
        assert (held.status, labels) == ("pending", 0)  # asked, never answered

        second = _start(target, agent.url("/agent"), log)
        try:
            _until(lambda: asyncio.run(_call(target.settings, call_id))[0].status == "done",
                   "the second runner's answer", second, log)  # fmt: skip
        finally:
            second.send_signal(signal.SIGTERM)
            assert second.wait(60) == 0
        asked = agent.wait_for(2)

    done, labels, told = asyncio.run(_call(target.settings, call_id))
    assert (done.attempts, labels, told) == (1, 1, 1)  # applied once
    assert done.outcome == {"applied": ["add_labels"], "refused": []}
    # The same request twice, told as a repeat: one webhook-id, both signed.
    assert {request.headers["webhook-id"] for request in asked} == {call_id}
    assert all(request.signed_with(SECRET) for request in asked)
    assert "Traceback" not in log.read_text()
