"""thresholds.source and thresholds.level: where each τ was chosen from and, for the adaptive
source, the miss level it was chosen for

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("thresholds") as batch:
        batch.add_column(sa.Column("source", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("level", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("thresholds") as batch:
        batch.drop_column("level")
        batch.drop_column("source")
