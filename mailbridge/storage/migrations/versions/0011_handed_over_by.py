"""who made an email's handover, kept while another runner leases it to settle it

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 15:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("emails", sa.Column("handed_over_by", sa.String(64), nullable=True))
    # A handover still unsettled was made by the runner that holds its lease.
    op.execute("UPDATE emails SET handed_over_by = lease_owner WHERE status = 'sent'")


def downgrade() -> None:
    with op.batch_alter_table("emails") as batch:
        batch.drop_column("handed_over_by")
