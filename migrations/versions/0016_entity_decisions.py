"""entity decisions: an entity event keeps its message's decision (label, score, and whether the
model, a list or a rule made it), for the workbench's entity page

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("entity_events") as batch:
        batch.add_column(sa.Column("label", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("score", sa.Float(), nullable=True))
        batch.add_column(sa.Column("decided_by", sa.String(length=8), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("entity_events") as batch:
        batch.drop_column("decided_by")
        batch.drop_column("score")
        batch.drop_column("label")
