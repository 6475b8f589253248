"""activity a domain-limited key caused triggers only that domain's automations

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 22:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("activity_events") as batch:
        batch.add_column(sa.Column("scope_domain", sa.String(length=253), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("activity_events") as batch:
        batch.drop_column("scope_domain")
