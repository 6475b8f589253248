"""a received message is stored once an envelope recipient; why a report was not acted on

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 21:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("received_emails") as batch:
        batch.add_column(sa.Column("recipient", sa.String(320), nullable=False, server_default=""))
        batch.add_column(sa.Column("unmatched_reason", sa.Text(), nullable=True))
    # Rows stored before: one a team, keyed by their first envelope recipient.
    if op.get_bind().dialect.name == "postgresql":
        first = "lower(coalesce(envelope_to->>0, ''))"
    else:
        first = "lower(coalesce(json_extract(envelope_to, '$[0]'), ''))"
    op.execute(f"UPDATE received_emails SET recipient = substr({first}, 1, 320)")
    op.drop_index("uq_received_emails_team_blob", table_name="received_emails")
    op.create_index(
        "uq_received_emails_team_blob_recipient", "received_emails",
        ["team_id", "blob", "recipient"], unique=True,
    )  # fmt: skip


def downgrade() -> None:
    op.drop_index("uq_received_emails_team_blob_recipient", table_name="received_emails")
    op.execute(
        "DELETE FROM received_emails WHERE id NOT IN"
        " (SELECT min(id) FROM received_emails GROUP BY team_id, blob)"
    )
    op.create_index(
        "uq_received_emails_team_blob", "received_emails", ["team_id", "blob"], unique=True
    )
    with op.batch_alter_table("received_emails") as batch:
        batch.drop_column("unmatched_reason")
        batch.drop_column("recipient")
