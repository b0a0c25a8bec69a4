"""What migrating the store's schema down would drop, for `filterd db downgrade` to say before
it does: the tables and columns, read from the migrations' own `downgrade()`, and their rows."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, func, inspect, select, table

from filterd.store.database import alembic_config, current


@dataclass(frozen=True)
class Drops:
    """What a downgrade removes: whole tables, and columns as "table.column"."""

    tables: list[str]
    columns: list[str]


def downgrade_drops(engine: Engine, revision: str) -> Drops:
    """The tables and columns migrating the database from its revision down to `revision` drops,
    read from the `downgrade()` of each migration it runs (their `drop_table` and `drop_column`
    calls), in the order it drops them. CommandError for a revision it cannot go down to."""
    from alembic.script import ScriptDirectory
    from alembic.script.revision import RevisionError
    from alembic.util import CommandError

    start = current(engine)
    if start is None:
        return Drops([], [])
    script = ScriptDirectory.from_config(
        alembic_config(engine.url.render_as_string(hide_password=False))
    )
    try:
        steps = list(script.iterate_revisions(start, revision))
    except RevisionError as error:
        raise CommandError(str(error)) from None
    tables: list[str] = []
    columns: list[str] = []
    for step in steps:
        for dropped_table, column in _drops(Path(step.path)):
            if column is None:
                tables.append(dropped_table)
            else:
                columns.append(f"{dropped_table}.{column}")
    return Drops(tables, [c for c in columns if c.partition(".")[0] not in tables])


def _drops(migration: Path) -> list[tuple[str, str | None]]:
    """(table, None) per `op.drop_table(TABLE)` and (table, column) per `op.drop_column(TABLE,
    COLUMN)` or `batch.drop_column(COLUMN)` in `with op.batch_alter_table(TABLE)`, of the
    migration's `downgrade()`; names given as module constants are looked up."""
    module = ast.parse(migration.read_text(encoding="utf-8"))
    constants = {
        target.id: node.value.value
        for node in module.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def text(node: ast.expr) -> str:
        value = (
            node.value if isinstance(node, ast.Constant) else constants.get(getattr(node, "id", ""))
        )
        if not isinstance(value, str):
            raise ValueError(f"{migration.name}: a table or column name that is not a constant")
        return value

    def calls(nodes: list[ast.stmt], batch_table: str | None) -> list[tuple[str, str | None]]:
        found: list[tuple[str, str | None]] = []
        for node in nodes:
            if isinstance(node, ast.With):
                batch = next(
                    (
                        item.context_expr
                        for item in node.items
                        if isinstance(item.context_expr, ast.Call)
                        and getattr(item.context_expr.func, "attr", "") == "batch_alter_table"
                    ),
                    None,
                )
                found += calls(node.body, text(batch.args[0]) if batch else batch_table)
                continue
            for call in ast.walk(node):
                if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
                    continue
                args = call.args
                if call.func.attr == "drop_table":
                    found.append((text(args[0]), None))
                elif call.func.attr == "drop_column" and len(args) == 2:
                    found.append((text(args[0]), text(args[1])))
                elif call.func.attr == "drop_column" and batch_table is not None:
                    found.append((batch_table, text(args[0])))
        return found

    (downgrade,) = [
        node
        for node in module.body
        if isinstance(node, ast.FunctionDef) and node.name == "downgrade"
    ]
    return calls(downgrade.body, None)


def row_counts(engine: Engine, tables: list[str]) -> dict[str, int]:
    """The rows of each of `tables` the database has (those it lacks are left out)."""
    present = set(inspect(engine).get_table_names())
    with engine.connect() as conn:
        return {
            name: conn.execute(select(func.count()).select_from(table(name))).scalar_one()
            for name in tables
            if name in present
        }
