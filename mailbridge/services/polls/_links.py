"""Vote links: ``{{{poll:ID}}}`` in a template's or campaign's body, rendered per recipient
as the question and one signed link per option.

A link is ``<public url>/polls/vote/<token>``. The token (``mail.signed_links``, purpose
``poll-vote``: HMAC-SHA256 keyed with the instance secret) carries the poll, its team,
the option and the voter — the contact's id when the mail went to a contact, else the
lower-cased address — so a recipient can vote only as themselves, only in that poll,
only for an option it has. Change any byte and the link is nobody's.

The placeholder is not a template variable (``mail.templating`` leaves it alone); it is
expanded around the variables: :meth:`PollLinks.render` renders the text between polls
with the caller's variable renderer, so neither a variable's value nor a poll's
question is ever read as a placeholder.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ValidationError
from mailbridge.mail.signed_links import VOTE_PATH, id_bytes, id_from_bytes, link, sign, verify
from mailbridge.services.kernel import ServiceContext, instance_secret
from mailbridge.storage.queries import is_uuid
from mailbridge.storage.tables import Poll

VOTE = "poll-vote"
POLL_PLACEHOLDER = re.compile(r"\{\{\{\s*poll\s*:\s*(?P<id>[^{}\s]*)\s*\}\}\}")
MAX_ADDRESS_LENGTH = 320
_CONTACT, _ADDRESS = 0, 1
_HEADER = 16 + 16 + 2  # poll id, team id, option, voter kind

BLOCK_STYLE = (
    "margin:16px 0;padding:16px;border:1px solid #d0d7de;border-radius:6px;"
    "font-family:Arial,Helvetica,sans-serif"
)
QUESTION_STYLE = "margin:0 0 12px;font-size:16px;font-weight:bold;color:#1f2328"
BUTTON_STYLE = (
    "display:inline-block;margin:0 8px 8px 0;padding:8px 16px;border-radius:4px;"
    "background:#1f6feb;color:#ffffff;text-decoration:none;font-size:14px"
)


@dataclass(frozen=True)
class Voter:
    """Who a link votes for: ``key`` is the contact id, or the lower-cased address."""

    key: str
    contact_id: str | None = None

    @classmethod
    def of(cls, contact_id: str | None, address: str) -> Voter:
        if contact_id:
            return cls(contact_id, contact_id)
        return cls(address.strip().lower())


@dataclass(frozen=True)
class Ballot:
    """What a valid vote token says."""

    poll_id: str
    team_id: str
    option: int
    voter: Voter


def vote_token(secret: bytes, poll_id: str, team_id: str, option: int, voter: Voter) -> str:
    if not 0 <= option < 256:
        raise ValueError(f"option {option} cannot be signed")
    if voter.contact_id is not None:
        kind, key = _CONTACT, id_bytes(voter.contact_id)
    else:
        kind, key = _ADDRESS, voter.key.encode()
    payload = id_bytes(poll_id) + id_bytes(team_id) + bytes((option, kind)) + key
    return sign(secret, VOTE, payload)


def vote_url(
    base_url: str, secret: bytes, poll_id: str, team_id: str, option: int, voter: Voter
) -> str:
    return link(base_url, VOTE_PATH, vote_token(secret, poll_id, team_id, option, voter))


def read_vote_token(secret: bytes, token: str) -> Ballot | None:
    """The ballot of a token we signed; None for anything else (tampered, truncated, ...).

    ``verify`` takes only the exact token we made, not another base64 spelling of it:
    a link changed anywhere must be nobody's."""
    payload = verify(secret, VOTE, token)
    if payload is None or len(payload) <= _HEADER:
        return None
    option, kind, key = payload[32], payload[33], payload[_HEADER:]
    if kind == _CONTACT and len(key) == 16:
        contact_id = id_from_bytes(key)
        voter = Voter(contact_id, contact_id)
    elif kind == _ADDRESS and len(key) <= MAX_ADDRESS_LENGTH:
        try:
            address = key.decode()
        except UnicodeDecodeError:
            return None
        voter = Voter(address)
    else:
        return None
    return Ballot(id_from_bytes(payload[:16]), id_from_bytes(payload[16:32]), option, voter)


# -- embedding ---------------------------------------------------------------------------


def embedded_poll_ids(*texts: str | None) -> list[str]:
    """The ids named by ``{{{poll:ID}}}`` in ``texts``, each once, in order."""
    found: dict[str, None] = {}
    for text in texts:
        if text and "{{{" in text:
            found.update((match["id"], None) for match in POLL_PLACEHOLDER.finditer(text))
    return list(found)


@dataclass(frozen=True)
class EmbeddedPoll:
    id: str
    team_id: str
    question: str
    options: tuple[str, ...]


def _identity(text: str) -> str:
    return text


class PollLinks:
    """The polls some content embeds, ready to be rendered for each of its recipients."""

    def __init__(self, polls: Mapping[str, EmbeddedPoll], base_url: str, secret: bytes) -> None:
        self.polls = dict(polls)
        self.base_url = base_url
        self.secret = secret

    def render(
        self,
        text: str,
        voter: Voter,
        *,
        html: bool = False,
        around: Callable[[str], str] = _identity,
    ) -> str:
        """``text`` with each poll placeholder replaced by its block for ``voter`` and the
        text between them passed through ``around`` (the variables' renderer). A poll
        that no longer exists renders as nothing: what was accepted stays deliverable."""
        parts: list[str] = []
        last = 0
        for match in POLL_PLACEHOLDER.finditer(text):
            parts.append(around(text[last : match.start()]))
            poll = self.polls.get(match["id"])
            if poll is not None:
                parts.append(self.block(poll, voter, html=html))
            last = match.end()
        parts.append(around(text[last:]))
        return "".join(parts)

    def block(self, poll: EmbeddedPoll, voter: Voter, *, html: bool) -> str:
        links = [
            (label, vote_url(self.base_url, self.secret, poll.id, poll.team_id, index, voter))
            for index, label in enumerate(poll.options)
        ]
        if not html:
            return "\n".join([poll.question, *(f"{label}: {url}" for label, url in links)])
        buttons = "".join(
            f'<a href="{html_lib.escape(url, quote=True)}" style="{BUTTON_STYLE}">'
            f"{html_lib.escape(label)}</a>"
            for label, url in links
        )
        return (
            f'<div style="{BLOCK_STYLE}">'
            f'<p style="{QUESTION_STYLE}">{html_lib.escape(poll.question)}</p>{buttons}</div>'
        )


async def _embedded(session: AsyncSession, team_id: str, ids: Iterable[str]) -> dict[str, Poll]:
    wanted = [poll_id for poll_id in ids if is_uuid(poll_id)]
    if not wanted:
        return {}
    rows = await session.scalars(select(Poll).where(Poll.team_id == team_id, Poll.id.in_(wanted)))
    return {poll.id: poll for poll in rows}


def _refuse_unknown(ids: Iterable[str], known: Mapping[str, Poll]) -> None:
    unknown = [poll_id for poll_id in ids if poll_id not in known]
    if unknown:
        names = ", ".join(f"`{poll_id}`" for poll_id in unknown)
        raise ValidationError(
            f"No poll {names} (in `{{{{{{poll:ID}}}}}}`): create it with POST /polls first."
        )


async def check_embedded_polls(
    session: AsyncSession,
    team_id: str,
    *texts: str | None,
    subjects: Iterable[str | None] = (),
) -> None:
    """422 unless every ``{{{poll:ID}}}`` of ``texts`` names a poll of the team (and the
    subjects, single lines, name none)."""
    if embedded_poll_ids(*subjects):
        raise ValidationError("A poll can be embedded in `html` or `text`, not in `subject`.")
    ids = embedded_poll_ids(*texts)
    if ids:
        _refuse_unknown(ids, await _embedded(session, team_id, ids))


async def poll_links(
    session: AsyncSession,
    context: ServiceContext,
    team_id: str,
    texts: Iterable[str | None],
    *,
    strict: bool,
    writing: bool = False,
) -> PollLinks | None:
    """The polls ``texts`` embed, or None when they embed none. ``strict``: a poll that does
    not exist is a 422 (a send the caller is waiting for); otherwise it renders as nothing
    (the runner's sends of content accepted earlier).

    ``writing``: ``session`` already writes, and commits what is rendered with it (the
    automation engine's batch): the link secret is read, or made, in that transaction —
    on SQLite a session of its own would wait for the lock this one holds. Otherwise
    (a session that only reads, and never commits) the secret is made in its own."""
    ids = embedded_poll_ids(*texts)
    if not ids:
        return None
    found = await _embedded(session, team_id, ids)
    if strict:
        _refuse_unknown(ids, found)
    secret = await instance_secret(context.database, context.settings, session if writing else None)
    polls = {
        poll.id: EmbeddedPoll(poll.id, poll.team_id, poll.question, tuple(poll.options))
        for poll in found.values()
    }
    return PollLinks(polls, context.settings.public_url, secret)
