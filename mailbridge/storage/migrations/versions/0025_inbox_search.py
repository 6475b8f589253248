"""inbox search: full text over the messages of inboxes (SQLite FTS5, PostgreSQL tsvector)

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28 18:00:00.000000

Outside the models (``services.inboxes._search``): an FTS5 virtual table on SQLite, a
table with a generated ``tsvector`` and a GIN index on PostgreSQL.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

POSTGRES = """
CREATE TABLE inbox_search (
    message_id varchar(36) PRIMARY KEY,
    thread_id varchar(36) NOT NULL REFERENCES inbox_threads (id) ON DELETE CASCADE,
    inbox_id varchar(36) NOT NULL,
    subject text NOT NULL,
    sender text NOT NULL,
    recipients text NOT NULL,
    body text NOT NULL,
    document tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', subject), 'A')
        || setweight(to_tsvector('simple', sender || ' ' || recipients), 'B')
        || to_tsvector('simple', body)
    ) STORED
)
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(POSTGRES)
        op.execute("CREATE INDEX ix_inbox_search_document ON inbox_search USING gin (document)")
        op.execute("CREATE INDEX ix_inbox_search_inbox ON inbox_search (inbox_id)")
        op.execute("CREATE INDEX ix_inbox_search_thread ON inbox_search (thread_id)")
    else:
        op.execute(
            "CREATE VIRTUAL TABLE inbox_search USING fts5(subject, sender, recipients, body, "
            "message_id UNINDEXED, thread_id UNINDEXED, inbox_id UNINDEXED, "
            "tokenize = 'unicode61 remove_diacritics 2')"
        )


def downgrade() -> None:
    op.execute("DROP TABLE inbox_search")
