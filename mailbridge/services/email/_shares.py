"""Share links (``POST /emails/:id/share``): a public link to one email as it reads, sent
or received, for whoever holds it, until it expires (``expires_in``: a duration such as
``10m``, ``2 hours``, ``1 day``, ``1h 30m``; default and most 48 hours, as Resend's) or
the team revokes the email's links (``DELETE /emails/:id/share``).

The link is ``<public url>/share/<token>``: 32 random bytes; only their SHA-256 is kept,
so the table alone opens nothing. Like every capability link it is masked in the logs
(``mailbridge.redaction``). The page shows the headers a reader needs and the body in a
sandboxed frame (``mail.framing``): no script runs, and a received email's remote
images stay off (its sender would learn who reads it, and when).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytimeparse2
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import Clock, isoformat_ms
from mailbridge.errors import ValidationError
from mailbridge.storage.tables import EmailShare

MAX_LIFETIME = timedelta(hours=48)
SOURCES = ("sent", "received")


@dataclass(frozen=True)
class NewShare:
    share: EmailShare
    url: str


def share_lifetime(expires_in: str | None) -> timedelta:
    """``expires_in`` read (a duration in words or units), capped at 48 hours; 422 if it
    is not a positive duration."""
    if expires_in is None:
        return MAX_LIFETIME
    text = expires_in.strip()
    seconds = pytimeparse2.parse(text) if 0 < len(text) <= 100 else None
    if seconds is None or seconds <= 0:
        raise ValidationError(
            "`expires_in` must be a duration such as 10m, 2 hours, 1 day or 1h 30m."
        )
    return min(timedelta(seconds=seconds), MAX_LIFETIME)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


async def create_share(
    session: AsyncSession, clock: Clock, public_url: str, team_id: str, email_id: str,
    source: str, lifetime: timedelta,
) -> NewShare:  # fmt: skip
    """A new link to the team's email (already found: ``source`` says where) and commit."""
    token = secrets.token_urlsafe(32)
    now = clock.now()
    share = EmailShare(
        team_id=team_id, email_id=email_id, source=source, token_digest=_digest(token),
        created_at=now, expires_at=now + lifetime,
    )  # fmt: skip
    session.add(share)
    await session.commit()
    return NewShare(share, f"{public_url.rstrip('/')}/share/{token}")


def share_view(new: NewShare) -> dict[str, str | None]:
    return {
        "object": "email",
        "id": new.share.email_id,
        "url": new.url,
        "expires_at": isoformat_ms(new.share.expires_at),
    }


async def revoke_shares(session: AsyncSession, clock: Clock, team_id: str, email_id: str) -> int:
    """End every live link to the email; how many there were."""
    result = await session.execute(
        update(EmailShare)
        .where(
            EmailShare.team_id == team_id,
            EmailShare.email_id == email_id,
            EmailShare.revoked_at.is_(None),
            EmailShare.expires_at > clock.now(),
        )
        .values(revoked_at=clock.now())
        .execution_options(synchronize_session=False)
    )
    await session.commit()
    return int(getattr(result, "rowcount", 0) or 0)


async def open_share(session: AsyncSession, now: datetime, token: str) -> EmailShare | None:
    """The live link ``token`` opens (None: unknown, expired or revoked: all alike)."""
    if not 20 <= len(token) <= 100:
        return None
    share = await session.scalar(
        select(EmailShare).where(EmailShare.token_digest == _digest(token))
    )
    if share is None or share.revoked_at is not None or share.expires_at <= now:
        return None
    return share
