"""review_items: an index on (model_id, |score − threshold|), the review queue's order, so that
a page of the most informative items is read in order instead of sorted from the whole queue

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

NAME = "ix_review_items_model_id_distance"


def upgrade() -> None:
    op.create_index(NAME, "review_items", ["model_id", sa.text("abs(score - threshold)")])


def downgrade() -> None:
    op.drop_index(NAME, table_name="review_items")
