"""decided_messages, parked_feedback, review_items: feedback by id resolved across processes and
restarts (the decided messages' Kafka coordinates, the feedback parked until resolved) and the
review queue

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "decided_messages",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("id_hash", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("offset", sa.BigInteger(), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_decided_messages_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", "id_hash", name=op.f("pk_decided_messages")),
    )
    op.create_index(
        op.f("ix_decided_messages_decided_at"),
        "decided_messages",
        ["decided_at"],
        unique=False,
        postgresql_using="brin",
    )

    op.create_table(
        "parked_feedback",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=256), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("kafka_topic", sa.String(length=249), nullable=True),
        sa.Column("kafka_partition", sa.Integer(), nullable=True),
        sa.Column("kafka_offset", sa.BigInteger(), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("parked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_try_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_parked_feedback_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", "message_id", name=op.f("pk_parked_feedback")),
    )
    op.create_index(
        op.f("ix_parked_feedback_model_id_next_try_at"),
        "parked_feedback",
        ["model_id", "next_try_at"],
        unique=False,
    )

    op.create_table(
        "review_items",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=256), nullable=False),
        sa.Column("reason", sa.String(length=8), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("model_version", sa.BigInteger(), nullable=False),
        sa.Column("threshold_version", sa.Integer(), nullable=True),
        sa.Column("subject", sa.String(length=200), nullable=True),
        sa.Column("excerpt", sa.Text(), nullable=True),
        sa.Column("sender", sa.String(length=200), nullable=True),
        sa.Column("attributes", sa.JSON(), nullable=True),
        sa.Column("explanation", sa.JSON(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.Column("tokens", sa.LargeBinary(), nullable=False),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_review_items_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_review_items")),
    )
    op.create_index(
        op.f("ix_review_items_model_id_message_id"),
        "review_items",
        ["model_id", "message_id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_review_items_model_id_queued_at"),
        "review_items",
        ["model_id", "queued_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_review_items_model_id_queued_at"), table_name="review_items")
    op.drop_index(op.f("ix_review_items_model_id_message_id"), table_name="review_items")

    op.drop_table("review_items")
    op.drop_index(op.f("ix_parked_feedback_model_id_next_try_at"), table_name="parked_feedback")

    op.drop_table("parked_feedback")
    op.drop_index(op.f("ix_decided_messages_decided_at"), table_name="decided_messages")

    op.drop_table("decided_messages")
