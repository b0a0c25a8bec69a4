"""undecodable_batches: record batches a consumer group could not decode, and the operators'
skips of them (who, when, why, which offsets)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "undecodable_batches",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("consumer_group", sa.String(length=249), nullable=False),
        sa.Column("topic", sa.String(length=249), nullable=False),
        sa.Column("kafka_partition", sa.Integer(), nullable=False),
        sa.Column("kafka_offset", sa.BigInteger(), nullable=False),
        sa.Column("next_offset", sa.BigInteger(), nullable=False),
        sa.Column("records", sa.Integer(), nullable=False),
        sa.Column("codec", sa.String(length=32), nullable=False),
        sa.Column("problem", sa.Text(), nullable=False),
        sa.Column("found_by", sa.String(length=200), nullable=False),
        sa.Column("found_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("skip_requested_by", sa.String(length=200), nullable=True),
        sa.Column("skip_requested_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("skip_reason", sa.Text(), nullable=True),
        sa.Column("skipped_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_undecodable_batches")),
        sa.UniqueConstraint(
            "consumer_group",
            "topic",
            "kafka_partition",
            "kafka_offset",
            name="uq_undecodable_batches_position",
        ),
    )


def downgrade() -> None:
    op.drop_table("undecodable_batches")
