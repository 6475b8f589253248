"""webhook sequences: an email's events reach a webhook in the order they happened

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 17:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHERE = "due_at IS NOT NULL AND sequence_key IS NOT NULL"


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("sequence_key", sa.String(length=80), nullable=True))
    op.create_index(
        "ix_webhook_deliveries_sequence",
        "webhook_deliveries",
        ["webhook_id", "sequence_key", "event_id"],
        unique=False,
        postgresql_where=sa.text(WHERE),
        sqlite_where=sa.text(WHERE),
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_sequence", table_name="webhook_deliveries")
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("sequence_key")
