"""logistic weights: the logistic component's steps beside the counts (token_stats.weight,
class_stats.weight) and each learned message's own step, to unlearn it (feedback_ledger.step);
fixed point, 0 for what was learned before

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

COLUMNS = (("token_stats", "weight"), ("class_stats", "weight"), ("feedback_ledger", "step"))


def upgrade() -> None:
    for table, column in COLUMNS:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column(column, sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    for table, column in COLUMNS:
        with op.batch_alter_table(table) as batch:
            batch.drop_column(column)
