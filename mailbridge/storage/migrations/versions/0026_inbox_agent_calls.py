"""inbox agent calls

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 20:25:23.313049
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "inbox_agent_calls",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("inbox_id", sa.String(length=36), nullable=False),
        sa.Column("thread_id", sa.String(length=36), nullable=False),
        sa.Column("email_id", sa.String(length=36), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("due_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("leased_by", sa.String(length=100), nullable=True),
        sa.Column(
            "lease_until", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("outcome", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["inbox_id"],
            ["inboxes.id"],
            name=op.f("fk_inbox_agent_calls_inbox_id_inboxes"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_inbox_agent_calls_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["inbox_threads.id"],
            name=op.f("fk_inbox_agent_calls_thread_id_inbox_threads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbox_agent_calls")),
    )
    with op.batch_alter_table("inbox_agent_calls", schema=None) as batch_op:
        batch_op.create_index("ix_inbox_agent_calls_due", ["status", "due_at"], unique=False)
        batch_op.create_index(
            "ix_inbox_agent_calls_thread", ["thread_id", "created_at"], unique=False
        )
        batch_op.create_index("uq_inbox_agent_calls_email", ["email_id"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("inbox_agent_calls", schema=None) as batch_op:
        batch_op.drop_index("uq_inbox_agent_calls_email")
        batch_op.drop_index("ix_inbox_agent_calls_thread")
        batch_op.drop_index("ix_inbox_agent_calls_due")

    op.drop_table("inbox_agent_calls")
