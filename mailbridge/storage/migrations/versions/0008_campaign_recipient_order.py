"""campaign recipients still without an email are read in position order from the index

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 09:30:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _pending_index(columns: list[str]) -> None:
    op.drop_index("ix_campaign_recipients_pending", table_name="campaign_recipients")
    op.create_index("ix_campaign_recipients_pending", "campaign_recipients", columns)


def upgrade() -> None:
    _pending_index(["campaign_id", "email_id", "position"])


def downgrade() -> None:
    _pending_index(["campaign_id", "email_id", "batch", "variant"])
