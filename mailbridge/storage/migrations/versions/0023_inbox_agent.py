"""inbox agent: the instructions, tone and allowed actions of an inbox's agent

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 17:55:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("inboxes") as batch:
        batch.add_column(sa.Column("agent_instructions", sa.Text(), nullable=True))
        batch.add_column(sa.Column("agent_tone", sa.String(length=32), nullable=True))
        batch.add_column(sa.Column("agent_actions", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("inboxes") as batch:
        batch.drop_column("agent_actions")
        batch.drop_column("agent_tone")
        batch.drop_column("agent_instructions")
