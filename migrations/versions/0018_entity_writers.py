"""entity writers: an entity event names the scorer process that wrote it (entity_events.writer),
so that a scorer in step with the others reads each of their rows once and never its own (null
for the rows written before); and the entity tables' time indexes lead with the model, so that
SQLite reads a model's newest rows by them instead of all of the model's rows by its key

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# (table, time column): one index each; BRIN on PostgreSQL, where rows arrive in time order
TIME_INDEXES = (
    ("entity_events", "written_at"),
    ("entity_events", "at"),
    ("entity_labels", "written_at"),
)


def upgrade() -> None:
    with op.batch_alter_table("entity_events") as batch:
        batch.add_column(sa.Column("writer", sa.BigInteger(), nullable=True))
    for table, column in TIME_INDEXES:
        op.drop_index(f"ix_{table}_{column}", table_name=table)
        op.create_index(
            f"ix_{table}_model_id_{column}", table, ["model_id", column], postgresql_using="brin"
        )


def downgrade() -> None:
    for table, column in TIME_INDEXES:
        op.drop_index(f"ix_{table}_model_id_{column}", table_name=table)
        op.create_index(f"ix_{table}_{column}", table, [column], postgresql_using="brin")
    with op.batch_alter_table("entity_events") as batch:
        batch.drop_column("writer")
