"""who changed members and roles (audit events); where each member session was opened

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_events",
        sa.Column("id", mailbridge.storage.types.IdColumnType(), nullable=False),
        sa.Column("team_id", mailbridge.storage.types.IdColumnType(), nullable=False),
        sa.Column("actor_member_id", mailbridge.storage.types.IdColumnType(), nullable=True),
        sa.Column("actor", sa.String(length=320), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("subject", sa.String(length=320), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_audit_events_team_created", "audit_events", ["team_id", "created_at", "id"])
    with op.batch_alter_table("member_sessions") as batch:
        batch.add_column(sa.Column("user_agent", sa.String(length=255), nullable=True))
        batch.add_column(sa.Column("client_address", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("member_sessions") as batch:
        batch.drop_column("client_address")
        batch.drop_column("user_agent")
    op.drop_index("ix_audit_events_team_created", table_name="audit_events")
    op.drop_table("audit_events")
