"""entity messages: each entity event keeps its message's id, and an index finds an entity's
messages newest first (the workbench's entity page, the review queue's entity filter)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("entity_events") as batch:
        batch.add_column(sa.Column("message_id", sa.String(length=256), nullable=True))
    op.create_index("ix_entity_events_entity", "entity_events", ["model_id", "key", "value", "at"])


def downgrade() -> None:
    op.drop_index("ix_entity_events_entity", table_name="entity_events")
    with op.batch_alter_table("entity_events") as batch:
        batch.drop_column("message_id")
