"""email shares: public links to one email, expiring and revocable

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28 14:36:03.701775
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "email_shares",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("email_id", sa.String(length=36), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "expires_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("revoked_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_email_shares_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_email_shares")),
    )
    with op.batch_alter_table("email_shares", schema=None) as batch_op:
        batch_op.create_index("ix_email_shares_email", ["team_id", "email_id"], unique=False)
        batch_op.create_index("uq_email_shares_token", ["token_digest"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("email_shares", schema=None) as batch_op:
        batch_op.drop_index("uq_email_shares_token")
        batch_op.drop_index("ix_email_shares_email")

    op.drop_table("email_shares")
