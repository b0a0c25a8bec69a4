"""`filterd db …`, `filterd learn`, `filterd model …`: the model store from the command line."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import IO, TypedDict

import click
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import ArgumentError, OperationalError, ProgrammingError, SQLAlchemyError

from filterd.bayes.model import DEFAULT_SPEC
from filterd.bayes.statistics import not_ready
from filterd.cli.common import model_specs, read_records
from filterd.service.config import masked_url
from filterd.store import backup, database
from filterd.store.drift import drift_report
from filterd.store.expiry import prune
from filterd.store.learning import (
    LabelledTokens,
    Source,
    UnknownModel,
    apply_feedback,
    create_model,
    spec_from_json,
)
from filterd.store.schema import (
    ClassStats,
    FeedbackLedger,
    Holdout,
    ModelRow,
    Threshold,
    TokenStats,
)
from filterd.tokenize import Tokenizer

DB_HELP = f"Database URL (default: ${database.URL_VARIABLE}, else {database.DEFAULT_URL})."
db_option = click.option("--db", "url", metavar="URL", help=DB_HELP)
model_option = click.option(
    "--model", "name", default="default", show_default=True, help="Model name."
)


@contextlib.contextmanager
def store_errors() -> Iterator[None]:
    """Database problems as one-line errors."""
    try:
        yield
    except ArgumentError as error:
        raise click.ClickException(f"bad database URL: {error}") from None
    except (OperationalError, ProgrammingError) as error:
        message = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
        if "no such table" in message or ("does not exist" in message and "relation" in message):
            raise click.ClickException(
                "the database has no filterd schema: run `filterd db upgrade`"
            ) from None
        raise click.ClickException(f"database error: {message}") from None
    except (UnknownModel, ValueError) as error:
        raise click.ClickException(str(error.args[0] if error.args else error)) from None
    except SQLAlchemyError as error:
        raise click.ClickException(f"database error: {error.__class__.__name__}: {error}") from None


# --- db ------------------------------------------------------------------------------------------


@click.group(name="db")
def db() -> None:
    """The store's schema (Alembic migrations)."""


@db.command(name="upgrade")
@db_option
@click.argument("revision", default="head")
def db_upgrade(url: str | None, revision: str) -> None:
    """Migrate the database to REVISION (default: the latest)."""
    _migrate(database.upgrade, url, revision)


@db.command(name="downgrade")
@db_option
@click.argument("revision")
def db_downgrade(url: str | None, revision: str) -> None:
    """Migrate the database back to REVISION ("base": no filterd tables)."""
    _migrate(database.downgrade, url, revision)


def _migrate(step: Callable[[str | None, str], None], url: str | None, revision: str) -> None:
    with store_errors():
        step(url, revision)
        shown = masked_url(database.database_url(url))
        click.echo(f"{shown}: at revision {database.current(url) or 'base'}")


@db.command(name="current")
@db_option
def db_current(url: str | None) -> None:
    """The database's schema revision."""
    with store_errors():
        revision = database.current(url)
    click.echo(revision or "not migrated: run `filterd db upgrade`")


@db.command(name="prune")
@db_option
@model_option
@click.option(
    "--unseen-days",
    type=click.IntRange(0),
    required=True,
    help="Expire tokens not seen for this many days…",
)
@click.option(
    "--max-count",
    type=click.IntRange(0),
    required=True,
    help="…whose count over all classes is at most this.",
)
@click.option("--pause", type=click.FloatRange(0.0), default=0.05, show_default=True,
              help="Seconds between chunks of 500 tokens, to spare concurrent learners.")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Count what would go; change nothing.")
def db_prune(url: str | None, name: str, unseen_days: int, max_count: int, pause: float,
             dry_run: bool) -> None:  # fmt: skip
    """Expire rare tokens unseen for a while (run it as a scheduled job, not inline with scoring)."""
    with store_errors():
        result = prune(
            database.connect(url), name, unseen_days, max_count, pause=pause, dry_run=dry_run
        )
    verb = "would expire" if dry_run else "expired"
    click.echo(
        f"{verb} {result.tokens} tokens ({result.rows} rows, {result.counts_removed} occurrences)"
    )


# --- learn ---------------------------------------------------------------------------------------


@click.command(name="learn")
@click.argument("corpus", type=click.Path(dir_okay=True))
@db_option
@model_option
@click.option(
    "--label-source", type=click.Choice(["analyst", "auto"]), default="analyst", show_default=True
)
@click.option("--batch-size", type=click.IntRange(1, 100_000), default=2000, show_default=True)
@click.option("--holdout-fraction", type=click.FloatRange(0.0, 1.0), default=0.1, show_default=True,
              help="Share of message ids kept for calibration instead of learned.")  # fmt: skip
def learn_command(corpus: str, url: str | None, name: str, label_source: Source, batch_size: int,
                  holdout_fraction: float) -> None:  # fmt: skip
    """Learn a labelled CORPUS into the store (idempotent: a second run changes nothing)."""
    records = read_records(corpus)
    if any(len(r.labels) != 1 for r in records):
        raise click.ClickException(f"{corpus}: multi-label records cannot be learned as feedback")
    tokenize = Tokenizer()
    totals = dict.fromkeys(
        ("learned", "relabelled", "duplicates", "held_out", "kept_analyst_label"), 0
    )
    with store_errors():
        engine = database.connect(url)
        with engine.connect() as conn:
            exists = (
                conn.execute(select(ModelRow.id).where(ModelRow.name == name)).first() is not None
            )
        if not exists:
            create_model(engine, name, DEFAULT_SPEC)
            click.echo(f"created model {name!r}: {DEFAULT_SPEC}", err=True)
        with click.progressbar(length=len(records), label="learning", file=sys.stderr) as bar:
            for start in range(0, len(records), batch_size):
                part = records[start : start + batch_size]
                items = [
                    LabelledTokens(r.id, r.label, tokenize(r.message()).tokens, label_source)
                    for r in part
                ]
                applied = apply_feedback(engine, name, items, holdout_fraction)
                for key in totals:
                    totals[key] += getattr(applied, key)
                bar.update(len(part))
    click.echo(", ".join(f"{key.replace('_', ' ')} {value}" for key, value in totals.items()))


# --- model ---------------------------------------------------------------------------------------


@click.group(name="model")
def model() -> None:
    """Models in the store: create, inspect, export, import."""


@model.command(name="create")
@click.argument("name")
@db_option
@click.option(
    "--variant",
    metavar="NAME[+sow]",
    help="Default: robinson_fisher with the default parameters and selection.",
)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE")
@click.option(
    "--select",
    "selection",
    metavar="SPEC",
    help="Default: none with --variant, else the default selection.",
)
def model_create(name: str, url: str | None, variant: str | None, params: tuple[str, ...],
                 selection: str | None) -> None:  # fmt: skip
    """Add a model NAME with an estimator and a selection."""
    (spec,) = model_specs((variant,) if variant else (), params, (selection,) if selection else ())
    with store_errors():
        engine = database.connect(url)
        with engine.connect() as conn:
            if conn.execute(select(ModelRow.id).where(ModelRow.name == name)).first() is not None:
                raise click.ClickException(f"a model named {name!r} exists already")
        create_model(engine, name, spec)
    click.echo(f"created model {name!r}: {spec}")


@model.command(name="stats")
@db_option
@model_option
@click.option("--min-docs", type=click.IntRange(1), default=20, show_default=True,
              help="Learned documents each class needs before the model decides.")  # fmt: skip
@click.option(
    "--target-class", default="spam", show_default=True, help="The class of the drift figures."
)
@click.option("--drift-window", type=click.IntRange(1), default=5000, show_default=True,
              help="Newest feedback records the drift figures cover.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True)
def model_stats(url: str | None, name: str, min_docs: int, target_class: str, drift_window: int,
                as_json: bool) -> None:  # fmt: skip
    """Classes, documents, tokens, holdout size, last learn, current threshold, readiness, and the
    rolling figures of feedback scored before it was learned (drift)."""
    with store_errors():
        engine = database.connect(url)
        report = _model_report(engine, name, min_docs)
        drift = drift_report(engine, name, target_class, drift_window)
    if as_json:
        click.echo(json.dumps({**report, "drift": drift.as_dict()}, default=str))
        return
    click.echo(f"model {report['model']}: {report['spec']}  (change seq {report['seq']})")
    for c in report["classes"]:
        click.echo(f"  class {c['label']!r}: {c['docs']} documents, {c['tokens']} tokens")
    click.echo(f"  distinct tokens {report['distinct_tokens']}, holdout {report['holdout']}, "
               f"ledger {report['ledger']}, last learn {report['last_learn'] or 'never'}")  # fmt: skip
    threshold = report["threshold"]
    click.echo("  threshold: " + (f"version {threshold['version']}, τ = {threshold['tau']:.4g} for "
                                  f"{threshold['target_class']!r} at recall ≥ {threshold['target_recall']}"
                                  if threshold else "none yet"))  # fmt: skip
    click.echo("  ready" if report["ready"] else f"  not ready: {report['not_ready']}")
    if drift.n:

        def fmt(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.4f}"

        click.echo(f"  drift, last {drift.n} feedback scored before learning ({drift.n_pos} {drift.target_class!r}): "
                   f"AUC {fmt(drift.auc)}, recall {fmt(drift.recall)}, specificity {fmt(drift.specificity)} "
                   f"at τ = {drift.tau:.4g}")  # fmt: skip
    else:
        click.echo("  drift: no feedback scored yet (the daemon records it)")


class _ClassReport(TypedDict):
    label: str
    docs: int
    tokens: int


class _ThresholdReport(TypedDict):
    version: int
    tau: float
    target_class: str
    target_recall: float


class _ModelReport(TypedDict):
    """What `filterd model stats` shows of a model, drift aside (its JSON output, in order)."""

    model: str
    spec: str
    seq: int
    classes: list[_ClassReport]
    distinct_tokens: int
    holdout: int
    ledger: int
    last_learn: datetime | None
    ready: bool
    not_ready: str | None
    threshold: _ThresholdReport | None


def _model_report(engine: Engine, name: str, min_docs: int) -> _ModelReport:
    with engine.connect() as conn:
        row = conn.execute(select(ModelRow.__table__).where(ModelRow.name == name)).one_or_none()
        if row is None:
            raise UnknownModel(f"no model named {name!r} in the store")
        classes = conn.execute(select(ClassStats.label, ClassStats.docs, ClassStats.tokens)
                               .where(ClassStats.model_id == row.id).order_by(ClassStats.class_id)).all()  # fmt: skip

        def count(table: type[Holdout | FeedbackLedger]) -> int:
            return conn.execute(select(func.count()).select_from(table)
                                .where(table.model_id == row.id)).scalar_one()  # fmt: skip

        distinct = conn.execute(select(func.count(func.distinct(TokenStats.token_key)))
                                .where(TokenStats.model_id == row.id, TokenStats.doc_freq > 0)).scalar_one()  # fmt: skip
        last = conn.execute(
            select(func.max(FeedbackLedger.learned_at)).where(FeedbackLedger.model_id == row.id)
        ).scalar()
        threshold = conn.execute(select(Threshold.__table__).where(Threshold.model_id == row.id)
                                 .order_by(Threshold.version.desc()).limit(1)).one_or_none()  # fmt: skip
        reason = not_ready([c.label for c in classes], [c.docs for c in classes], min_docs)
        return {
            "model": name, "spec": str(spec_from_json(row.spec)), "seq": row.seq,
            "classes": [{"label": c.label, "docs": c.docs, "tokens": c.tokens} for c in classes],
            "distinct_tokens": distinct, "holdout": count(Holdout), "ledger": count(FeedbackLedger),
            "last_learn": last, "ready": reason is None, "not_ready": reason,
            "threshold": None if threshold is None else {
                "version": threshold.version, "tau": threshold.tau, "target_class": threshold.target_class,
                "target_recall": threshold.target_recall},
        }  # fmt: skip


@model.command(name="export")
@db_option
@model_option
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True),
              help="File (.jsonl or .jsonl.gz); default: gzip on stdout.")  # fmt: skip
def model_export(url: str | None, name: str, output: str | None) -> None:
    """Write a model (statistics, ledger, holdout, thresholds) as gzip JSON lines."""
    if output is None and sys.stdout.isatty():
        raise click.UsageError(
            "refusing to write gzip to a terminal: redirect stdout or give --output"
        )
    with store_errors():
        engine = database.connect(url)
        if output is None:
            with (
                gzip.GzipFile(fileobj=sys.stdout.buffer, mode="wb", mtime=0) as raw,
                io.TextIOWrapper(raw, encoding="utf-8") as text,
            ):
                rows = backup.export_model(engine, name, text)
        else:
            with (gzip.open(output, "wt", encoding="utf-8") if output.endswith(".gz")
                  else open(output, "w", encoding="utf-8")) as text:  # fmt: skip
                rows = backup.export_model(engine, name, text)
    click.echo(f"exported model {name!r}: {rows} rows", err=True)


@model.command(name="import")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@db_option
@click.option("--as", "rename", metavar="NAME", help="Import under another name.")
def model_import(path: str, url: str | None, rename: str | None) -> None:
    """Restore a model exported by `filterd model export` (PATH, or - for stdin)."""
    with store_errors():
        engine = database.connect(url)
        with _open_export(path) as lines:
            name = backup.import_model(engine, lines, rename)
    click.echo(f"imported model {name!r}", err=True)


@contextlib.contextmanager
def _open_export(path: str) -> Iterator[IO[str]]:
    raw = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115 - closed below
    try:
        data = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        stream = gzip.GzipFile(fileobj=raw) if data == b"\x1f\x8b" else raw
        yield io.TextIOWrapper(stream, encoding="utf-8")
    except OSError as error:
        raise click.ClickException(f"{path}: {error}") from None
    finally:
        if raw is not sys.stdin.buffer:
            raw.close()
