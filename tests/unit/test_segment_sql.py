"""Segment membership compiles to SQL on both dialects: the database resolves it."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Dialect, select
from sqlalchemy.dialects import postgresql, sqlite

from mailbridge.services.audiences._segment_filters import SegmentFilter, membership_condition
from mailbridge.storage.tables import Contact, ContactProperty

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PROPERTIES = {
    "plan": ContactProperty(key="plan", type="string", fallback_value="free"),
    "age": ContactProperty(key="age", type="number", fallback_value=None),
}
FILTER = SegmentFilter.model_validate(
    {
        "status": "subscribed",
        "email_contains": "shop",
        "property_filters": [
            {"key": "plan", "operator": "eq", "value": "pro"},
            {"key": "age", "operator": "gte", "value": 30},
        ],
        "engagement": {
            "event": "not_opened",
            "campaign_id": "0190a3a4-0000-7000-8000-000000000000",
        },
    }
)


def compiled(dialect: Dialect) -> str:
    query = select(Contact.id).where(membership_condition("seg", "aud", FILTER, PROPERTIES))
    return str(query.compile(dialect=dialect))


def test_sqlite_uses_json_extract_in_one_statement() -> None:
    sql = compiled(sqlite.dialect())
    assert "JSON_EXTRACT(contacts.properties" in sql
    assert "coalesce" in sql.lower()  # the fallback value
    assert "NOT (EXISTS" in sql and "segment_members" in sql and "contact_engagements" in sql


def test_postgresql_uses_json_operators() -> None:
    sql = compiled(postgresql.dialect())  # type: ignore[no-untyped-call]
    assert "contacts.properties ->>" in sql or "contacts.properties->>" in sql
    assert "LIKE" in sql
