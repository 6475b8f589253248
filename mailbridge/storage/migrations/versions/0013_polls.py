"""polls: questions embedded in mail, and one vote a voter

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "polls",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("question", sa.String(length=500), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("allow_change", sa.Boolean(), nullable=False),
        sa.Column("closes_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("closed_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["team_id"], ["teams.id"], name=op.f("fk_polls_team_id_teams"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_polls")),
    )
    with op.batch_alter_table("polls", schema=None) as batch_op:
        batch_op.create_index(
            "ix_polls_team_created", ["team_id", "created_at", "id"], unique=False
        )

    op.create_table(
        "poll_votes",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("poll_id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("voter", sa.String(length=320), nullable=False),
        sa.Column("contact_id", sa.String(length=36), nullable=True),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("option", sa.Integer(), nullable=False),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["poll_id"],
            ["polls.id"],
            name=op.f("fk_poll_votes_poll_id_polls"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_poll_votes_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_poll_votes")),
    )
    with op.batch_alter_table("poll_votes", schema=None) as batch_op:
        batch_op.create_index("uq_poll_votes_poll_voter", ["poll_id", "voter"], unique=True)
        batch_op.create_index(
            "ix_poll_votes_poll_created", ["poll_id", "created_at", "id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("poll_votes", schema=None) as batch_op:
        batch_op.drop_index("ix_poll_votes_poll_created")
        batch_op.drop_index("uq_poll_votes_poll_voter")

    op.drop_table("poll_votes")
    with op.batch_alter_table("polls", schema=None) as batch_op:
        batch_op.drop_index("ix_polls_team_created")

    op.drop_table("polls")
