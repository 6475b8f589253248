"""a webhook's previous signing secret, still signing for a day after a rotation

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28 04:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhooks") as batch:
        batch.add_column(sa.Column("previous_secret", sa.String(length=100), nullable=True))
        batch.add_column(
            sa.Column(
                "previous_secret_until",
                mailbridge.storage.types.UTCDateTime(timezone=True),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("webhooks") as batch:
        batch.drop_column("previous_secret_until")
        batch.drop_column("previous_secret")
