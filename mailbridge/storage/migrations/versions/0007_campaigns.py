"""campaigns: campaigns and their recipients, a team's timezone, emails by campaign, and
the ``unsubscribed`` engagement kind

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 09:10:39.175902
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "campaigns",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("from_address", sa.String(length=640), nullable=True),
        sa.Column("subject", sa.String(length=998), nullable=True),
        sa.Column("html", sa.Text(), nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("template_id", sa.String(length=36), nullable=True),
        sa.Column("variables", sa.JSON(), nullable=False),
        sa.Column("reply_to", sa.JSON(), nullable=False),
        sa.Column("preview_text", sa.String(length=998), nullable=True),
        sa.Column("audience_id", sa.String(length=36), nullable=True),
        sa.Column("segment_id", sa.String(length=36), nullable=True),
        sa.Column("topic_id", sa.String(length=36), nullable=True),
        sa.Column("recurrence", sa.String(length=500), nullable=True),
        sa.Column("batch_size_per_day", sa.Integer(), nullable=True),
        sa.Column("ab", sa.JSON(), nullable=True),
        sa.Column("content", sa.JSON(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column(
            "scheduled_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("schedule_timezone", sa.String(length=64), nullable=True),
        sa.Column("parent_id", sa.String(length=36), nullable=True),
        sa.Column(
            "occurrence_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "last_occurrence_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("phase", sa.String(length=16), nullable=True),
        sa.Column("due_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column(
            "lease_until", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("started_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("resolved_after", sa.String(length=36), nullable=True),
        sa.Column("recipients", sa.Integer(), nullable=False),
        sa.Column("ab_winner", sa.String(length=1), nullable=True),
        sa.Column(
            "ab_decided_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("sent_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["team_id"], ["teams.id"], name=op.f("fk_campaigns_team_id_teams"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaigns")),
    )
    with op.batch_alter_table("campaigns", schema=None) as batch_op:
        batch_op.create_index("ix_campaigns_due", ["due_at"], unique=False)
        batch_op.create_index(
            "ix_campaigns_team_created", ["team_id", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "uq_campaigns_parent_occurrence", ["parent_id", "occurrence_at"], unique=True
        )

    op.create_table(
        "campaign_recipients",
        sa.Column("campaign_id", sa.String(length=36), nullable=False),
        sa.Column("contact_id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("batch", sa.Integer(), nullable=False),
        sa.Column("variant", sa.String(length=1), nullable=True),
        sa.Column("email_id", sa.String(length=36), nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_campaign_recipients_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_campaign_recipients_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("campaign_id", "contact_id", name=op.f("pk_campaign_recipients")),
    )
    with op.batch_alter_table("campaign_recipients", schema=None) as batch_op:
        batch_op.create_index(
            "ix_campaign_recipients_pending",
            ["campaign_id", "email_id", "batch", "variant"],
            unique=False,
        )

    with op.batch_alter_table("emails", schema=None) as batch_op:
        batch_op.create_index("ix_emails_campaign", ["campaign_id"], unique=False)

    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("timezone", sa.String(length=64), server_default="UTC", nullable=False)
        )

    with op.batch_alter_table("contact_engagements", schema=None) as batch_op:
        batch_op.alter_column(
            "kind", existing_type=sa.String(length=10), type_=sa.String(length=16)
        )


def downgrade() -> None:
    with op.batch_alter_table("contact_engagements", schema=None) as batch_op:
        batch_op.alter_column(
            "kind", existing_type=sa.String(length=16), type_=sa.String(length=10)
        )

    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.drop_column("timezone")

    with op.batch_alter_table("emails", schema=None) as batch_op:
        batch_op.drop_index("ix_emails_campaign")

    with op.batch_alter_table("campaign_recipients", schema=None) as batch_op:
        batch_op.drop_index("ix_campaign_recipients_pending")

    op.drop_table("campaign_recipients")
    with op.batch_alter_table("campaigns", schema=None) as batch_op:
        batch_op.drop_index("uq_campaigns_parent_occurrence")
        batch_op.drop_index("ix_campaigns_team_created")
        batch_op.drop_index("ix_campaigns_due")

    op.drop_table("campaigns")
