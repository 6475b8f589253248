"""``GET /emails/metrics``: how the team's mail fared over a range, as Resend answers it —
totals, and with dimensions a row a period, domain, email or broadcast.

A metric counts what happened in the range (by the time it happened, not the email's):
the email events ``sent``, ``delivered``, ``delivery_delayed``, ``bounced`` (with
``bounced_permanent`` / ``bounced_transient`` by the report's kind: soft is transient,
anything else permanent, so ``bounced_undetermined`` stays 0), ``complained``,
``suppressed``, ``failed``, ``opened``, ``clicked``; ``unique_opened`` /
``unique_clicked`` count the emails opened or clicked, once each; ``unsubscribed``
counts a campaign's recipients' first unsubscribe (``contact_engagements``, matched to
the email they got); ``received`` counts mail received for the team (messages, replies
and auto-replies; not reports), by the domain it was sent to — not when the query is by
email or broadcast. Rates are fractions (four decimals, 0 when nothing to divide):
delivered / sent, unique opens / delivered, unique clicks / delivered, bounced / sent,
complained / delivered, unsubscribed / delivered.

The ``domain`` and ``broadcast`` dimensions keep the mail that has one (a broadcast
dimension counts broadcast mail only); ``period`` alone lists every period of the
range, empty ones too, so a chart needs no gaps filled. Events are read a row at a time
(``stream``) and counted here; a row a combination, at most ``MAX_ROWS``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.clock import isoformat_ms
from mailbridge.errors import ValidationError
from mailbridge.services.email._metric_query import (
    MetricsQuery,
    every_period,
    period_label,
    period_start,
)
from mailbridge.storage.tables import (
    Campaign,
    ContactEngagement,
    Domain,
    Email,
    EmailEvent,
    ReceivedEmail,
)

MAX_ROWS = 10_000
COUNTED_EVENTS = (
    "sent", "delivered", "delivery_delayed", "bounced", "complained", "suppressed", "failed",
    "opened", "clicked",
)  # fmt: skip
RECEIVED_KINDS = ("message", "reply", "auto_reply")
Key = tuple[str | None, ...]


@dataclass
class _Tally:
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    opened: set[str] = field(default_factory=set)
    clicked: set[str] = field(default_factory=set)

    def add_event(self, kind: str, bounce_kind: str | None, email_id: str) -> None:
        self.counts[kind] += 1
        if kind == "bounced":
            self.counts["bounced_transient" if bounce_kind == "soft" else "bounced_permanent"] += 1
        elif kind == "opened":
            self.opened.add(email_id)
        elif kind == "clicked":
            self.clicked.add(email_id)

    def merge(self, other: _Tally) -> None:
        for name, count in other.counts.items():
            self.counts[name] += count
        self.opened |= other.opened
        self.clicked |= other.clicked

    def values(self, metrics: Iterable[str]) -> dict[str, float | int]:
        count = self.counts
        whole: dict[str, float | int] = {name: count[name] for name in (
            "received", "delivered", "complained", "suppressed", "bounced",
            "bounced_transient", "bounced_permanent", "opened", "clicked", "unsubscribed",
            "delivery_delayed", "failed", "sent",
        )}  # fmt: skip
        whole["bounced_undetermined"] = 0
        whole["unique_opened"], whole["unique_clicked"] = len(self.opened), len(self.clicked)
        sent, delivered = count["sent"], count["delivered"]
        whole["delivery_rate"] = _rate(delivered, sent)
        whole["open_rate"] = _rate(len(self.opened), delivered)
        whole["click_rate"] = _rate(len(self.clicked), delivered)
        whole["bounce_rate"] = _rate(count["bounced"], sent)
        whole["complaint_rate"] = _rate(count["complained"], delivered)
        whole["unsubscribe_rate"] = _rate(count["unsubscribed"], delivered)
        return {name: whole[name] for name in metrics}


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _sent_mail_filters(query: MetricsQuery, team_id: str, statement: Select[Any]) -> Select[Any]:
    statement = statement.where(Email.team_id == team_id)
    if query.domain_ids:
        statement = statement.where(Email.domain_id.in_(query.domain_ids))
    if query.email_ids:
        statement = statement.where(Email.id.in_(query.email_ids))
    if query.broadcast_ids:
        statement = statement.where(Email.campaign_id.in_(query.broadcast_ids))
    if "domain" in query.dimensions:
        statement = statement.where(Email.domain_id.is_not(None))
    if "broadcast" in query.dimensions:
        statement = statement.where(Email.campaign_id.is_not(None))
    return statement


class _Counter:
    def __init__(self, query: MetricsQuery) -> None:
        self.query = query
        self.groups: dict[Key, _Tally] = {}

    def tally(self, at: datetime, domain_id: str | None, email_id: str | None,
              broadcast_id: str | None) -> _Tally:  # fmt: skip
        parts: list[str | None] = []
        for dimension in self.query.dimensions:
            if dimension == "period":
                parts.append(period_start(at, self.query).isoformat())
            elif dimension == "domain":
                parts.append(domain_id)
            elif dimension == "email":
                parts.append(email_id)
            else:
                parts.append(broadcast_id)
        key = tuple(parts)
        found = self.groups.get(key)
        if found is None:
            if len(self.groups) >= MAX_ROWS:
                raise ValidationError(
                    f"Over {MAX_ROWS:,} rows: narrow the range, the filters or the dimensions."
                )
            found = self.groups[key] = _Tally()
        return found


async def email_metrics(session: AsyncSession, team_id: str, query: MetricsQuery) -> dict[str, Any]:
    counter = _Counter(query)
    events = _sent_mail_filters(
        query, team_id,
        select(
            EmailEvent.created_at, EmailEvent.type, EmailEvent.data["bounce"]["type"].as_string(),
            Email.id, Email.domain_id, Email.campaign_id,
        )
        .join(Email, Email.id == EmailEvent.email_id)
        .where(
            EmailEvent.team_id == team_id,
            EmailEvent.created_at >= query.start,
            EmailEvent.created_at < query.end,
            EmailEvent.type.in_(COUNTED_EVENTS),
        ),
    )  # fmt: skip
    async for at, kind, bounce_kind, email_id, domain_id, campaign_id in _rows(session, events):
        counter.tally(at, domain_id, email_id, campaign_id).add_event(kind, bounce_kind, email_id)
    unsubscribes = _sent_mail_filters(
        query, team_id,
        select(ContactEngagement.first_at, Email.id, Email.domain_id, Email.campaign_id)
        .join(Email, (Email.campaign_id == ContactEngagement.campaign_id)
              & (Email.contact_id == ContactEngagement.contact_id))
        .where(
            ContactEngagement.team_id == team_id,
            ContactEngagement.kind == "unsubscribed",
            ContactEngagement.first_at >= query.start,
            ContactEngagement.first_at < query.end,
        ),
    )  # fmt: skip
    async for at, email_id, domain_id, campaign_id in _rows(session, unsubscribes):
        counter.tally(at, domain_id, email_id, campaign_id).counts["unsubscribed"] += 1
    domains = await _domains(session, team_id)
    if not query.about_sent_mail_only:
        await _count_received(session, team_id, query, counter, domains)
    return await _answer(session, query, counter, domains)


async def _rows(session: AsyncSession, statement: Select[Any]) -> AsyncIterator[Any]:
    result = await session.stream(statement.execution_options(yield_per=2_000))
    async for row in result:
        yield row


async def _domains(session: AsyncSession, team_id: str) -> dict[str, tuple[str, str]]:
    """The team's domains: by name, their (id, name)."""
    rows = await session.execute(select(Domain.id, Domain.name).where(Domain.team_id == team_id))
    return {name.lower(): (domain_id, name) for domain_id, name in rows}


async def _count_received(
    session: AsyncSession, team_id: str, query: MetricsQuery, counter: _Counter,
    domains: dict[str, tuple[str, str]],
) -> None:  # fmt: skip
    received = select(ReceivedEmail.created_at, ReceivedEmail.recipient).where(
        ReceivedEmail.team_id == team_id,
        ReceivedEmail.created_at >= query.start,
        ReceivedEmail.created_at < query.end,
        ReceivedEmail.kind.in_(RECEIVED_KINDS),
    )
    async for at, recipient in _rows(session, received):
        domain = domains.get(recipient.rpartition("@")[2].lower())
        domain_id = domain[0] if domain else None
        if (query.domain_ids or "domain" in query.dimensions) and (
            domain_id is None or (query.domain_ids and domain_id not in query.domain_ids)
        ):
            continue
        counter.tally(at, domain_id, None, None).counts["received"] += 1


async def _answer(
    session: AsyncSession, query: MetricsQuery, counter: _Counter,
    domains: dict[str, tuple[str, str]],
) -> dict[str, Any]:  # fmt: skip
    totals = _Tally()
    for tally in counter.groups.values():
        totals.merge(tally)
    answer: dict[str, Any] = {
        "object": "metrics",
        "start_date": isoformat_ms(query.start),
        "end_date": isoformat_ms(query.end),
        "timezone": query.zone.key,
        "metrics": list(query.metrics),
        "dimensions": list(query.dimensions),
        "granularity": query.granularity,
        "totals": totals.values(query.metrics),
    }
    if not query.dimensions:
        return answer
    if query.dimensions == ("period",):
        for start in every_period(query):
            counter.groups.setdefault((start.isoformat(),), _Tally())
    names = {domain_id: name for domain_id, name in domains.values()}
    broadcasts = await _broadcast_names(
        session, [key[query.dimensions.index("broadcast")] for key in counter.groups]
    ) if "broadcast" in query.dimensions else {}  # fmt: skip
    rows = []
    for key in sorted(counter.groups, key=lambda parts: tuple(part or "" for part in parts)):
        row: dict[str, Any] = {}
        for dimension, value in zip(query.dimensions, key, strict=True):
            if dimension == "period" and value is not None:
                row["period"] = period_label(datetime.fromisoformat(value), query)
            elif dimension == "domain":
                row["domain_id"], row["domain_name"] = value, names.get(value or "")
            elif dimension == "email":
                row["email_id"] = value
            elif dimension == "broadcast":
                row["broadcast_id"], row["broadcast_name"] = value, broadcasts.get(value or "")
        rows.append({**row, **counter.groups[key].values(query.metrics)})
    answer["data"] = rows
    return answer


async def _broadcast_names(session: AsyncSession, ids: list[str | None]) -> dict[str, str | None]:
    wanted = [one for one in dict.fromkeys(ids) if one]
    if not wanted:
        return {}
    rows = await session.execute(select(Campaign.id, Campaign.name).where(Campaign.id.in_(wanted)))
    return {campaign_id: name for campaign_id, name in rows}
