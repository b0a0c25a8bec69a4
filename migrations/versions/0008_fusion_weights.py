"""thresholds.weights and prequential.components: a fusion model's weights, written with the τ
chosen for them, and the component scores on arrival they are learned from

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("thresholds") as batch:
        batch.add_column(sa.Column("weights", sa.JSON(), nullable=True))
    with op.batch_alter_table("prequential") as batch:
        batch.add_column(sa.Column("components", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("prequential") as batch:
        batch.drop_column("components")
    with op.batch_alter_table("thresholds") as batch:
        batch.drop_column("weights")
