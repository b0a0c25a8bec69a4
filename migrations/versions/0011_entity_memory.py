"""entity memory: the scorers' entity events and the learners' target labels per entity, and
what the memory knew of a decided message's entities

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("decided_messages") as batch:
        batch.add_column(sa.Column("entities", sa.Text(), nullable=True))
    op.create_table(
        "entity_events",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("id_hash", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("value", sa.String(length=200), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("amount", sa.Float(), nullable=True),
        sa.Column("party", sa.String(length=200), nullable=True),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_entity_events_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", "id_hash", "key", name=op.f("pk_entity_events")),
    )
    # BRIN on PostgreSQL: rows arrive in time order, and a B-tree would cost more than the row
    op.create_index(
        op.f("ix_entity_events_written_at"),
        "entity_events",
        ["written_at"],
        postgresql_using="brin",
    )
    op.create_index(op.f("ix_entity_events_at"), "entity_events", ["at"], postgresql_using="brin")
    op.create_table(
        "entity_labels",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("id_hash", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("value", sa.String(length=200), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_entity_labels_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", "id_hash", "key", name=op.f("pk_entity_labels")),
    )
    op.create_index(
        op.f("ix_entity_labels_written_at"),
        "entity_labels",
        ["written_at"],
        postgresql_using="brin",
    )


def downgrade() -> None:
    op.drop_table("entity_labels")
    op.drop_table("entity_events")
    with op.batch_alter_table("decided_messages") as batch:
        batch.drop_column("entities")
