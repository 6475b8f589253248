"""fewer index writes per woken run

The runs' automation/contact index loses the status (finishing a run no longer moves
its entry), and run steps are keyed by (run_id, step_key): that key is also the index
listing a run's steps, so a step record writes one index instead of two.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 01:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _contact_index(columns: list[str]) -> None:
    op.drop_index("ix_automation_runs_automation_contact", table_name="automation_runs")
    op.create_index("ix_automation_runs_automation_contact", "automation_runs", columns)


def upgrade() -> None:
    _contact_index(["automation_id", "contact_id"])
    op.drop_index("ix_automation_run_steps_run", table_name="automation_run_steps")
    with op.batch_alter_table("automation_run_steps", recreate="always") as batch:
        batch.drop_constraint("pk_automation_run_steps", type_="primary")
        batch.create_primary_key("pk_automation_run_steps", ["run_id", "step_key"])


def downgrade() -> None:
    with op.batch_alter_table("automation_run_steps", recreate="always") as batch:
        batch.drop_constraint("pk_automation_run_steps", type_="primary")
        batch.create_primary_key("pk_automation_run_steps", ["id"])
    op.create_index("ix_automation_run_steps_run", "automation_run_steps", ["run_id", "sequence"])
    _contact_index(["automation_id", "contact_id", "status"])
