"""prequential: each feedback record's score before it was learned, for drift monitoring

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "prequential",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=256), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("target_class", sa.String(length=200), nullable=False),
        sa.Column("model_version", sa.BigInteger(), nullable=False),
        sa.Column("scored_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_prequential_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", "message_id", name=op.f("pk_prequential")),
    )
    op.create_index(
        op.f("ix_prequential_model_id_scored_at"), "prequential", ["model_id", "scored_at"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_prequential_model_id_scored_at"), table_name="prequential")
    op.drop_table("prequential")
