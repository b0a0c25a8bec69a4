"""The models of the store (`ModelRow`): finding one by name (`find_model`, once per handle:
`filterd.store.handle`), creating, locking, counting and deleting one.

A model's row lock (`lock_model`) is what every writer of a model takes first, learning among
them: concurrent writers queue instead of deadlocking. `delete_model` removes a model with
every row of it (`model_tables`) under that lock, and only if nothing was learned since the
caller counted them (`model_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Table,
    and_,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from filterd.bayes.model import ModelSpec
from filterd.bayes.selection import Selection
from filterd.store.errors import ModelChanged, ModelExists, UnknownModel
from filterd.store.schema import Base, FeedbackLedger, Holdout, ModelRow, ParkedFeedback


@dataclass(frozen=True)
class ModelRef:
    """A model of the store as found: its id, name, spec and token-key seed, none of which
    change while the model exists."""

    id: int
    name: str
    spec: ModelSpec
    hash_seed: int

    def row(self) -> ColumnElement[bool]:
        """Where the model's own row is: by its id, and its seed, which a model created after it
        was deleted does not share even where it gets the same id (SQLite reuses the ids of
        deleted rows)."""
        return and_(ModelRow.id == self.id, ModelRow.hash_seed == self.hash_seed)

    def gone(self) -> UnknownModel:
        """The error for a model deleted since it was found."""
        return UnknownModel(f"model {self.name!r} is no longer in the store (deleted)")


def find_model(conn: Connection, name: str) -> ModelRef | None:
    """Model `name`, or None if the store holds no such model."""
    row = conn.execute(
        select(ModelRow.id, ModelRow.spec, ModelRow.hash_seed).where(ModelRow.name == name)
    ).one_or_none()
    return None if row is None else ModelRef(row.id, name, spec_from_json(row.spec), row.hash_seed)


def lock_model(conn: Connection, model: ModelRef) -> None:
    """Lock the model's row until the transaction ends (the lock learning takes first); the
    model's UnknownModel if it was deleted."""
    found = conn.execute(
        update(ModelRow).where(model.row()).values(seq=ModelRow.seq).returning(ModelRow.id)
    ).scalar_one_or_none()
    if found is None:
        raise model.gone()


def model_names(conn: Connection) -> list[str]:
    """The names of the store's models, in alphabetical order."""
    return list(conn.execute(select(ModelRow.name).order_by(ModelRow.name)).scalars())


def create_model(engine: Engine, name: str, spec: ModelSpec, seed: int | None = None) -> None:
    """Add a model (its token-key seed is random unless given); ModelExists if there is one of
    that name."""
    seed = int(np.random.default_rng().integers(0, 2**62)) if seed is None else seed
    try:
        with engine.begin() as conn:
            conn.execute(
                insert(ModelRow).values(
                    name=name,
                    spec=spec_to_json(spec),
                    hash_seed=seed,
                    seq=0,
                    created_at=datetime.now(UTC),
                )
            )
    except IntegrityError:
        raise ModelExists(f"a model named {name!r} exists already") from None


# the tables of labels: the analysts' work, which nothing in the store can recompute
LABEL_TABLES = (FeedbackLedger.__tablename__, Holdout.__tablename__, ParkedFeedback.__tablename__)


def model_tables() -> list[Table]:
    """Every table whose rows belong to a model (a foreign key to models.id), read from the
    schema so that a table added later belongs too; dependents first."""
    return [
        table
        for table in reversed(Base.metadata.sorted_tables)
        if any(fk.column.table is ModelRow.__table__ for fk in table.foreign_keys)
    ]


@dataclass(frozen=True)
class ModelRows:
    """What a model holds: its change number, and its rows per table (`model_tables`)."""

    seq: int
    rows: dict[str, int]

    @property
    def labels(self) -> int:
        return sum(self.rows.get(name, 0) for name in LABEL_TABLES)


def model_rows(conn: Connection, model: ModelRef) -> ModelRows:
    """The rows the model holds."""
    seq = conn.execute(select(ModelRow.seq).where(model.row())).scalar_one_or_none()
    if seq is None:
        raise model.gone()
    rows = {
        table.name: conn.execute(
            select(func.count()).select_from(table).where(table.c.model_id == model.id)
        ).scalar_one()
        for table in model_tables()
    }
    return ModelRows(seq, rows)


def delete_model(conn: Connection, model: ModelRef, seq: int) -> dict[str, int]:
    """Delete the model and every row that belongs to it, in the caller's transaction, if it is
    still at change `seq` (`model_rows`): else ModelChanged, and nothing is deleted, so that
    nothing learned after the caller looked (and, say, exported the model) is lost. Returns the
    rows deleted per table."""
    # the row lock learning takes first: a learner of this model waits, then finds it gone
    found = conn.execute(
        update(ModelRow).where(model.row()).values(seq=ModelRow.seq).returning(ModelRow.seq)
    ).scalar_one_or_none()
    if found is None:
        raise model.gone()
    if found != seq:
        raise ModelChanged(
            f"model {model.name!r} changed since it was looked at (a learner wrote to it): "
            "nothing deleted; stop the daemons that learn it and try again"
        )
    deleted = {
        table.name: conn.execute(delete(table).where(table.c.model_id == model.id)).rowcount
        for table in model_tables()
    }
    conn.execute(delete(ModelRow).where(model.row()))
    return deleted


def spec_to_json(spec: ModelSpec) -> dict[str, Any]:
    return {
        "variant": spec.variant,
        "params": dict(spec.params),
        "selection": str(spec.selection),
        "set_of_words": spec.set_of_words,
    }


def spec_from_json(data: Mapping[str, Any]) -> ModelSpec:
    return ModelSpec(
        data["variant"],
        data.get("params", {}),
        Selection.parse(data.get("selection", "none")),
        data.get("set_of_words", False),
    )
