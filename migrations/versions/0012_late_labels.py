"""late labels: a decided message's tokens kept with it when they are small, so that a label by
id learns it without the messages topic for as long as feedback.resolve_ttl; a label's stage
(early, final) on the audit trail

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("decided_messages") as batch:
        batch.add_column(sa.Column("tokens", sa.LargeBinary(), nullable=True))
    with op.batch_alter_table("label_events") as batch:
        batch.add_column(sa.Column("stage", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("label_events") as batch:
        batch.drop_column("stage")
    with op.batch_alter_table("decided_messages") as batch:
        batch.drop_column("tokens")
