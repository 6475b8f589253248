"""inboxes

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 17:31:11.432138
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "inboxes",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("domain_id", sa.String(length=36), nullable=False),
        sa.Column("email_address", sa.String(length=320), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("from_name", sa.String(length=200), nullable=True),
        sa.Column("forwarding", sa.Boolean(), nullable=False),
        sa.Column(
            "last_received", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["domain_id"],
            ["domains.id"],
            name=op.f("fk_inboxes_domain_id_domains"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"], ["teams.id"], name=op.f("fk_inboxes_team_id_teams"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inboxes")),
    )
    with op.batch_alter_table("inboxes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inboxes_team_created", ["team_id", "created_at", "id"], unique=False
        )
        batch_op.create_index("uq_inboxes_email_address", ["email_address"], unique=True)

    op.create_table(
        "inbox_labels",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("inbox_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("color", sa.String(length=7), nullable=False),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["inbox_id"],
            ["inboxes.id"],
            name=op.f("fk_inbox_labels_inbox_id_inboxes"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_inbox_labels_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbox_labels")),
    )
    with op.batch_alter_table("inbox_labels", schema=None) as batch_op:
        batch_op.create_index("uq_inbox_labels_inbox_name", ["inbox_id", "name"], unique=True)

    op.create_table(
        "inbox_threads",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("inbox_id", sa.String(length=36), nullable=False),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.Column("subject_key", sa.String(length=200), nullable=False),
        sa.Column("correspondent_domain", sa.String(length=255), nullable=False),
        sa.Column("from_address", sa.Text(), nullable=True),
        sa.Column("to", sa.JSON(), nullable=False),
        sa.Column("cc", sa.JSON(), nullable=False),
        sa.Column("folder", sa.String(length=16), nullable=False),
        sa.Column("read", sa.Boolean(), nullable=False),
        sa.Column("email_count", sa.Integer(), nullable=False),
        sa.Column("has_attachment", sa.Boolean(), nullable=False),
        sa.Column("assignee_id", sa.String(length=36), nullable=True),
        sa.Column("latest_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("trashed_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["inbox_id"],
            ["inboxes.id"],
            name=op.f("fk_inbox_threads_inbox_id_inboxes"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_inbox_threads_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbox_threads")),
    )
    with op.batch_alter_table("inbox_threads", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inbox_threads_inbox_latest", ["inbox_id", "latest_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_inbox_threads_inbox_subject", ["inbox_id", "subject_key"], unique=False
        )

    op.create_table(
        "inbox_messages",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("inbox_id", sa.String(length=36), nullable=False),
        sa.Column("thread_id", sa.String(length=36), nullable=False),
        sa.Column("direction", sa.String(length=8), nullable=False),
        sa.Column("message_id", sa.String(length=998), nullable=True),
        sa.Column("read", sa.Boolean(), nullable=False),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["inbox_id"],
            ["inboxes.id"],
            name=op.f("fk_inbox_messages_inbox_id_inboxes"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_inbox_messages_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["inbox_threads.id"],
            name=op.f("fk_inbox_messages_thread_id_inbox_threads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbox_messages")),
    )
    with op.batch_alter_table("inbox_messages", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inbox_messages_inbox_message_id", ["inbox_id", "message_id"], unique=False
        )
        batch_op.create_index(
            "ix_inbox_messages_thread_created", ["thread_id", "created_at", "id"], unique=False
        )

    op.create_table(
        "inbox_thread_labels",
        sa.Column("thread_id", sa.String(length=36), nullable=False),
        sa.Column("label_id", sa.String(length=36), nullable=False),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["label_id"],
            ["inbox_labels.id"],
            name=op.f("fk_inbox_thread_labels_label_id_inbox_labels"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["inbox_threads.id"],
            name=op.f("fk_inbox_thread_labels_thread_id_inbox_threads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("thread_id", "label_id", name=op.f("pk_inbox_thread_labels")),
    )


def downgrade() -> None:
    op.drop_table("inbox_thread_labels")
    with op.batch_alter_table("inbox_messages", schema=None) as batch_op:
        batch_op.drop_index("ix_inbox_messages_thread_created")
        batch_op.drop_index("ix_inbox_messages_inbox_message_id")

    op.drop_table("inbox_messages")
    with op.batch_alter_table("inbox_threads", schema=None) as batch_op:
        batch_op.drop_index("ix_inbox_threads_inbox_subject")
        batch_op.drop_index("ix_inbox_threads_inbox_latest")

    op.drop_table("inbox_threads")
    with op.batch_alter_table("inbox_labels", schema=None) as batch_op:
        batch_op.drop_index("uq_inbox_labels_inbox_name")

    op.drop_table("inbox_labels")
    with op.batch_alter_table("inboxes", schema=None) as batch_op:
        batch_op.drop_index("uq_inboxes_email_address")
        batch_op.drop_index("ix_inboxes_team_created")

    op.drop_table("inboxes")
