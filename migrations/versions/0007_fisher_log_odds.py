"""Robinson–Fisher scores as log-odds: the stored thresholds, scores on arrival and review-queue
scores of robinson_fisher models move from S − H to logit((1 + S − H)/2), the scale the scorer
now computes (in log space, so that long messages keep distinct scores). The map is strictly
increasing, so every decision at a stored τ stays the same.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

import json
import math
from collections.abc import Callable

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# (table, key columns, score columns)
SCORED = (
    ("thresholds", ("model_id", "version"), ("tau",)),
    ("prequential", ("model_id", "message_id"), ("score",)),
    ("review_items", ("id",), ("score", "threshold")),
)
EDGE = 1.0 - 2.0**-53  # S − H rounded to ±1 becomes the largest finite log-odds of a double


def to_log_odds(d: float) -> float:
    d = min(EDGE, max(-EDGE, d))
    return math.log1p(d) - math.log1p(-d)


def to_s_minus_h(value: float) -> float:
    return math.tanh(value / 2.0)


def _convert(convert: Callable[[float], float]) -> None:
    conn = op.get_bind()
    models = conn.execute(sa.text("SELECT id, spec FROM models")).all()
    fisher = [
        m.id
        for m in models
        if (json.loads(m.spec) if isinstance(m.spec, str) else m.spec).get("variant")
        == "robinson_fisher"
    ]
    for model_id in fisher:
        for table, keys, columns in SCORED:
            selected = ", ".join((*keys, *columns))
            where = "model_id = :model_id"
            rows = conn.execute(
                sa.text(f"SELECT {selected} FROM {table} WHERE {where}"), {"model_id": model_id}
            ).all()
            if not rows:
                continue
            sets = ", ".join(f"{c} = :{c}" for c in columns)
            match = " AND ".join(f"{k} = :{k}" for k in keys)
            conn.execute(
                sa.text(f"UPDATE {table} SET {sets} WHERE {match}"),
                [
                    {
                        **{k: getattr(r, k) for k in keys},
                        **{c: convert(getattr(r, c)) for c in columns},
                    }
                    for r in rows
                ],
            )


def upgrade() -> None:
    _convert(to_log_odds)


def downgrade() -> None:
    _convert(to_s_minus_h)
