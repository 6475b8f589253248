"""members sign in to the dashboard: a password hash; invitations by link

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 15:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("members", sa.Column("password_hash", sa.String(255), nullable=True))
    op.create_table(
        "member_invitations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("invited_by", sa.String(length=36), nullable=True),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "expires_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "accepted_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_member_invitations_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_member_invitations")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_member_invitations_token_hash")),
    )


def downgrade() -> None:
    op.drop_table("member_invitations")
    with op.batch_alter_table("members") as batch:
        batch.drop_column("password_hash")
