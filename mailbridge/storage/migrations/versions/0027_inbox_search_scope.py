"""inbox search: an inbox's own token in the SQLite index

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-28 21:45:00.000000

The FTS5 table gets an indexed ``scope`` column (``i`` and the inbox id's hex), so a
search matches only its inbox's rows instead of every team's (``services.inboxes.
_search``); the rows are copied over. PostgreSQL's table is unchanged: its search
filters on the indexed ``inbox_id``.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = "subject, sender, recipients, body, message_id, thread_id, inbox_id"


def _rebuild(definition: str, copied: str) -> None:
    op.execute(f"CREATE VIRTUAL TABLE inbox_search_next USING fts5({definition})")
    op.execute(f"INSERT INTO inbox_search_next SELECT {copied} FROM inbox_search")
    op.execute("DROP TABLE inbox_search")
    op.execute("ALTER TABLE inbox_search_next RENAME TO inbox_search")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        return
    _rebuild(
        "subject, sender, recipients, body, message_id UNINDEXED, thread_id UNINDEXED, "
        "inbox_id UNINDEXED, scope, tokenize = 'unicode61 remove_diacritics 2'",
        f"{COLUMNS}, 'i' || lower(replace(inbox_id, '-', ''))",
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        return
    _rebuild(
        "subject, sender, recipients, body, message_id UNINDEXED, thread_id UNINDEXED, "
        "inbox_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2'",
        COLUMNS,
    )
