"""recipient states: where each recipient of an email stands, one envelope each

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28 17:05:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("emails") as batch:
        batch.add_column(sa.Column("recipient_states", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("emails") as batch:
        batch.drop_column("recipient_states")
