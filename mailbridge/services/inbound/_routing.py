"""Who a recipient is: the team an RCPT TO address reaches, and whether it may take more.

An address reaches a team by one of two kinds: any address of a verified domain with
receiving enabled, or the return path mailbridge sets on its own mail
(``bounces+<email id>-<tag>@<return path>.<domain>``, ``mail.return_path``: a bounce names
its email, and the tag says whether mailbridge gave that address out). A return path of an
existing email reaches its team whether its tag verifies or not: what a forged one carries
is stored and counted, never acted on. Anything else is refused (``550 5.1.1``); a team
over its quota is told to retry (``452 4.2.2``: received mail counts against it, spec §8.1).

A listener asks this for every recipient of every message, so a :class:`Router`
remembers briefly what it found: which team a domain's mail goes to (``ROUTE_SECONDS``:
a domain's receiving switched off stops its mail within that), and that a team had
room (``ROOM_SECONDS``, or ``ROUTE_SECONDS`` for a plan that caps nothing; a team
over it at the commit hears ``452`` there). Concurrent conversations asking about the
same team while nothing is remembered share one lookup. A VERP address names one email
and is looked up each time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ApiError
from mailbridge.mail.return_path import ReturnPath, read_return_path
from mailbridge.services import domains
from mailbridge.services.accounts import QuotaLedger
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.storage.tables import Email

ROUTE_SECONDS = 10.0
ROOM_SECONDS = 1.0
MAX_REMEMBERED = 10_000  # domains; past it, forgotten all at once (a flood of made-up names)


@dataclass(frozen=True)
class Route:
    """Where a recipient address goes: the team, and the return path it is, if one."""

    address: str
    team_id: str
    return_path: ReturnPath | None = None
    verified: bool = False  # the return path's tag is the one mailbridge gave its email
    # The one recipient whose envelope the return path is (None: an envelope to several,
    # tagged for the email alone, as mail was before recipients had envelopes of their own).
    recipient: str | None = None

    @property
    def email_id(self) -> str | None:
        """The email a verified return path names (None for any other address)."""
        return self.return_path.email_id if self.verified and self.return_path else None


class Router:
    def __init__(
        self, context: ServiceContext, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.context = context
        self._monotonic = monotonic
        self._teams: dict[str, tuple[float, str | None]] = {}  # domain → (until, team)
        self._room: dict[str, float] = {}  # team → until
        self._asking: dict[str, asyncio.Future[bool]] = {}  # team → the lookup under way

    async def route(self, address: str) -> Route | None:
        """The team ``address`` reaches (None: no one here)."""
        return_path = read_return_path(address)
        domain = address.rpartition("@")[2].lower()
        now = self._monotonic()
        remembered = self._teams.get(domain)
        if return_path is None and remembered is not None and remembered[0] > now:
            team_id = remembered[1]
            return Route(address, team_id) if team_id is not None else None
        async with self.context.database.session() as session:
            secret = await instance_secret(self.context.database, self.context.settings, session)
            found = await route(session, address, secret)
        if return_path is None:
            if len(self._teams) >= MAX_REMEMBERED:
                self._teams.clear()
            self._teams[domain] = (now + ROUTE_SECONDS, found.team_id if found else None)
        return found

    async def has_room(self, team_id: str) -> bool:
        """Whether the team's quota takes one more message."""
        if self._room.get(team_id, 0.0) > self._monotonic():
            return True
        asking = self._asking.get(team_id)
        if asking is not None:
            return await asyncio.shield(asking)
        asking = self._asking[team_id] = asyncio.get_running_loop().create_future()
        try:
            async with self.context.database.session() as session:
                room, capped = await fits_quota(session, self.context, team_id)
        except BaseException as exc:
            asking.set_exception(exc)
            asking.exception()  # retrieved: the waiters, if any, raise it themselves
            raise
        finally:
            del self._asking[team_id]
        if room:
            self._room[team_id] = self._monotonic() + (ROOM_SECONDS if capped else ROUTE_SECONDS)
        asking.set_result(room)
        return room


async def route(session: AsyncSession, address: str, secret: bytes) -> Route | None:
    return_path = read_return_path(address)
    if return_path is not None:
        found = (
            await session.execute(
                select(Email.team_id, Email.delivery_recipients, Email.recipient_states).where(
                    Email.id == return_path.email_id
                )
            )
        ).first()
        if found is None:
            return None
        team_id, recipients, states = found
        recipient = return_path.recipient(secret, recipients or ())
        if recipient is not None:
            return Route(address, team_id, return_path, True, recipient)
        # A tag for the email alone is one only mail from before envelopes of their own
        # carries: an email attempted since (it has states) never went out with it.
        verified = states is None and return_path.verifies(secret)
        return Route(address, team_id, return_path, verified)
    _local, _, name = address.rpartition("@")
    domain = await domains.receiving_domain(session, name) if name else None
    return Route(address, domain.team_id) if domain is not None else None


async def fits_quota(
    session: AsyncSession, context: ServiceContext, team_id: str
) -> tuple[bool, bool]:
    """Whether the team's quota takes one more message, and whether its plan caps any."""
    ledger = await QuotaLedger.load(session, context.clock.now(), [team_id])
    capped = ledger.capped(team_id)
    try:
        ledger.check(team_id, 1)
    except ApiError:
        return False, capped
    return True, capped
