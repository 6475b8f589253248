"""inbound: received emails and their attachments; receiving domains

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 10:13:13.932121
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "received_emails",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("envelope_from", sa.String(length=640), nullable=False),
        sa.Column("envelope_to", sa.JSON(), nullable=False),
        sa.Column("from_address", sa.Text(), nullable=True),
        sa.Column("to", sa.JSON(), nullable=False),
        sa.Column("cc", sa.JSON(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.Column("message_id", sa.Text(), nullable=True),
        sa.Column("in_reply_to", sa.Text(), nullable=True),
        sa.Column("references", sa.JSON(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("html", sa.Text(), nullable=True),
        sa.Column("headers", sa.JSON(), nullable=False),
        sa.Column("spf", sa.String(length=16), nullable=True),
        sa.Column("dkim", sa.String(length=16), nullable=True),
        sa.Column("dmarc", sa.String(length=16), nullable=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("blob", sa.String(length=64), nullable=False),
        sa.Column("parse_error", sa.Text(), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("email_id", sa.String(length=36), nullable=True),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_received_emails_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_received_emails")),
    )
    with op.batch_alter_table("received_emails", schema=None) as batch_op:
        batch_op.create_index(
            "ix_received_emails_team_created", ["team_id", "created_at", "id"], unique=False
        )

    op.create_table(
        "received_attachments",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("received_email_id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("filename", sa.Text(), nullable=True),
        sa.Column("content_type", sa.String(length=255), nullable=False),
        sa.Column("content_id", sa.Text(), nullable=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("checksum", sa.String(length=64), nullable=False),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["received_email_id"],
            ["received_emails.id"],
            name=op.f("fk_received_attachments_received_email_id_received_emails"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_received_attachments_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_received_attachments")),
    )
    with op.batch_alter_table("received_attachments", schema=None) as batch_op:
        batch_op.create_index(
            "ix_received_attachments_email", ["received_email_id", "position"], unique=False
        )

    with op.batch_alter_table("domains", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("receiving", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("domains", schema=None) as batch_op:
        batch_op.drop_column("receiving")

    with op.batch_alter_table("received_attachments", schema=None) as batch_op:
        batch_op.drop_index("ix_received_attachments_email")

    op.drop_table("received_attachments")
    with op.batch_alter_table("received_emails", schema=None) as batch_op:
        batch_op.drop_index("ix_received_emails_team_created")

    op.drop_table("received_emails")
