"""Export a model to JSON lines and import it again (backup, restore, SQLite → PostgreSQL).

The first line describes the model; every other line is one row of one table, tagged with
the table's name. Byte columns are base64, times ISO 8601. Importing recreates the model under
its own name (or a new one) with the same token-key seed, so its statistics stay valid.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import IO, Any

from sqlalchemy import Column, Engine, insert, select

from filterd.store.errors import ModelExists
from filterd.store.models import ModelRef
from filterd.store.schema import (
    Base,
    ClassStats,
    FeedbackLedger,
    Holdout,
    LabelEvent,
    ModelRow,
    ParkedFeedback,
    ReviewItem,
    Threshold,
    TokenStats,
)

FORMAT = "filterd-model/1"
TABLES: dict[str, type[Base]] = {
    table.__tablename__: table
    for table in (
        ClassStats,
        TokenStats,
        FeedbackLedger,
        Holdout,
        Threshold,
        LabelEvent,
        ParkedFeedback,
        ReviewItem,
    )
}
# Not exported: the decided messages' coordinates (`DecidedMessage`), which name records of one
# Kafka cluster's messages topic and are kept only for feedback.resolve_ttl, and the entity
# memory's events and labels (`EntityEvent`, `EntityLabel`), which leave with their window.
BATCH = 5000


def export_model(engine: Engine, ref: ModelRef, out: IO[str]) -> int:
    """Write model `ref` to `out`; returns the number of rows written."""
    with engine.connect() as conn:
        model = conn.execute(select(ModelRow.__table__).where(ref.row())).one_or_none()
        if model is None:
            raise ref.gone()
        header = {
            "format": FORMAT,
            "name": model.name,
            "spec": model.spec,
            "hash_seed": model.hash_seed,
            "seq": model.seq,
            "created_at": model.created_at.isoformat(),
        }
        out.write(json.dumps(header) + "\n")
        rows = 0
        for table_name, table in TABLES.items():
            columns = exported_columns(table)
            result = conn.execution_options(yield_per=BATCH).execute(
                select(*columns).where(table.__table__.c.model_id == model.id)
            )
            for row in result:
                out.write(
                    json.dumps(
                        {"table": table_name, **{c.name: _encode(v) for c, v in zip(columns, row)}}
                    )
                    + "\n"
                )
                rows += 1
    return rows


def import_model(engine: Engine, lines: IO[str], name: str | None = None) -> str:
    """Recreate an exported model (as `name` if given); returns the model's name."""
    first = next(iter(lines), "")
    try:
        header = json.loads(first) if first.strip() else {}
    except json.JSONDecodeError:
        header = {}
    if header.get("format") != FORMAT:
        raise ValueError(
            f"not a filterd model export (format {header.get('format')!r}, expected {FORMAT})"
        )
    name = name or header["name"]
    with engine.begin() as conn:
        if conn.execute(select(ModelRow.id).where(ModelRow.name == name)).first() is not None:
            raise ModelExists(f"a model named {name!r} exists already; import under another name")
        model_id = conn.execute(
            insert(ModelRow)
            .values(
                name=name,
                spec=header["spec"],
                hash_seed=header["hash_seed"],
                seq=header["seq"],
                created_at=datetime.fromisoformat(header["created_at"]),
            )
            .returning(ModelRow.id)
        ).scalar_one()
        pending: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
        for row in _rows(lines):
            table = row.pop("table")
            pending[table].append({"model_id": model_id, **_decode(TABLES[table], row)})
            if len(pending[table]) >= BATCH:
                conn.execute(insert(TABLES[table]), pending[table])
                pending[table] = []
        for table, rows in pending.items():
            if rows:
                conn.execute(insert(TABLES[table]), rows)
    return name


def exported_columns(table: type[Base]) -> list[Column[Any]]:
    """The columns an export holds: not the model's id, nor a surrogate key the importing
    store numbers afresh (the audit trail's event ids)."""
    return [
        c
        for c in table.__table__.columns
        if c.name != "model_id" and not (c.primary_key and c.autoincrement is True)
    ]


def _rows(lines: IO[str]) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(lines, start=2):
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"line {number}: not JSON ({error.msg})") from None
            if row.get("table") not in TABLES:
                raise ValueError(f"line {number}: unknown table {row.get('table')!r}")
            yield row


def _encode(value: object) -> object:
    """A column value as JSON can hold it."""
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _decode(table: type[Base], row: Mapping[str, Any]) -> dict[str, Any]:
    """The column values of an exported row of `table` (the inverse of `_encode`)."""
    out = {}
    for key, value in row.items():
        column = table.__table__.c[key]
        if isinstance(value, dict) and "base64" in value:
            value = base64.b64decode(value["base64"])
        elif value is not None and column.type.python_type is datetime:
            value = datetime.fromisoformat(value)
        out[key] = value
    return out
