"""a received message is stored once a team: the same bytes again are a sender's retry

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 11:05:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "uq_received_emails_team_blob", "received_emails", ["team_id", "blob"], unique=True
    )


def downgrade() -> None:
    op.drop_index("uq_received_emails_team_blob", table_name="received_emails")
