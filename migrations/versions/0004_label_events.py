"""label_events: the audit trail of label events, one append-only row per label received

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "label_events",
        # INTEGER PRIMARY KEY on SQLite (its autoincrementing rowid), bigint on PostgreSQL
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=256), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("previous_label", sa.String(length=200), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("analyst", sa.String(length=200), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("outcome", sa.String(length=24), nullable=False),
        sa.Column("kafka_topic", sa.String(length=249), nullable=True),
        sa.Column("kafka_partition", sa.Integer(), nullable=True),
        sa.Column("kafka_offset", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_label_events_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_label_events")),
    )
    op.create_index(
        op.f("ix_label_events_model_id_message_id"), "label_events", ["model_id", "message_id"]
    )
    op.create_index(
        op.f("ix_label_events_model_id_analyst"), "label_events", ["model_id", "analyst"]
    )
    op.create_index(
        op.f("ix_label_events_model_id_applied_at"), "label_events", ["model_id", "applied_at"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_label_events_model_id_applied_at"), table_name="label_events")
    op.drop_index(op.f("ix_label_events_model_id_analyst"), table_name="label_events")
    op.drop_index(op.f("ix_label_events_model_id_message_id"), table_name="label_events")
    op.drop_table("label_events")
