"""contact imports: a CSV job and its chunks of rows

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 14:04:01.113697
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailbridge.storage.types

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "contact_imports",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("team_id", sa.String(length=36), nullable=False),
        sa.Column("audience_id", sa.String(length=36), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("on_conflict", sa.String(length=8), nullable=False),
        sa.Column("property_types", sa.JSON(), nullable=False),
        sa.Column("segment_ids", sa.JSON(), nullable=False),
        sa.Column("topics", sa.JSON(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("created", sa.Integer(), nullable=False),
        sa.Column("updated", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.Column("failure", sa.Text(), nullable=True),
        sa.Column("chunks", sa.Integer(), nullable=False),
        sa.Column("next_chunk", sa.Integer(), nullable=False),
        sa.Column(
            "created_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "completed_at", mailbridge.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.ForeignKeyConstraint(
            ["audience_id"],
            ["audiences.id"],
            name=op.f("fk_contact_imports_audience_id_audiences"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_contact_imports_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_contact_imports")),
    )
    with op.batch_alter_table("contact_imports", schema=None) as batch_op:
        batch_op.create_index("ix_contact_imports_status", ["status", "created_at"], unique=False)
        batch_op.create_index(
            "ix_contact_imports_team_created", ["team_id", "created_at", "id"], unique=False
        )

    op.create_table(
        "contact_import_chunks",
        sa.Column("import_id", sa.String(length=36), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("rows", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["import_id"],
            ["contact_imports.id"],
            name=op.f("fk_contact_import_chunks_import_id_contact_imports"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("import_id", "seq", name=op.f("pk_contact_import_chunks")),
    )


def downgrade() -> None:
    op.drop_table("contact_import_chunks")
    with op.batch_alter_table("contact_imports", schema=None) as batch_op:
        batch_op.drop_index("ix_contact_imports_team_created")
        batch_op.drop_index("ix_contact_imports_status")

    op.drop_table("contact_imports")
