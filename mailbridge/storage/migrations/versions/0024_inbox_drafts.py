"""inbox drafts

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 17:43:36.393068
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "inbox_drafts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("inbox_id", sa.String(length=36), nullable=False),
        sa.Column("thread_id", sa.String(length=36), nullable=True),
        sa.Column("reply_to_email_id", sa.String(length=36), nullable=True),
        sa.Column("to", sa.JSON(), nullable=True),
        sa.Column("cc", sa.JSON(), nullable=False),
        sa.Column("bcc", sa.JSON(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("html", sa.Text(), nullable=True),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("email_id", sa.String(length=36), nullable=True),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["inbox_id"],
            ["inboxes.id"],
            name=op.f("fk_inbox_drafts_inbox_id_inboxes"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_inbox_drafts_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["inbox_threads.id"],
            name=op.f("fk_inbox_drafts_thread_id_inbox_threads"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbox_drafts")),
    )
    with op.batch_alter_table("inbox_drafts", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inbox_drafts_inbox_created", ["inbox_id", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "uq_inbox_drafts_inbox_key", ["inbox_id", "idempotency_key"], unique=True
        )

    op.create_table(
        "inbox_draft_attachments",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("draft_id", sa.String(length=36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("content_type", sa.String(length=255), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["draft_id"],
            ["inbox_drafts.id"],
            name=op.f("fk_inbox_draft_attachments_draft_id_inbox_drafts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbox_draft_attachments")),
    )
    with op.batch_alter_table("inbox_draft_attachments", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inbox_draft_attachments_draft", ["draft_id", "position"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("inbox_draft_attachments", schema=None) as batch_op:
        batch_op.drop_index("ix_inbox_draft_attachments_draft")

    op.drop_table("inbox_draft_attachments")
    with op.batch_alter_table("inbox_drafts", schema=None) as batch_op:
        batch_op.drop_index("uq_inbox_drafts_inbox_key")
        batch_op.drop_index("ix_inbox_drafts_inbox_created")

    op.drop_table("inbox_drafts")
