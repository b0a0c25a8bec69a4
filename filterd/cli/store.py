"""`filterd db …`, `filterd learn`, `filterd model …`: the model store from the command line."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click

from filterd.bayes.estimators import format_value
from filterd.cli.common import (
    OptionError,
    config_option,
    confirmed,
    load_config,
    model_specs,
    read_records,
    setting_type,
    shown,
)
from filterd.evaluation.corpus import Record
from filterd.service.config import DEFAULTS, masked_url
from filterd.service.decide import tokenizer_of
from filterd.store import database
from filterd.store.downgrades import Drops
from filterd.store.errors import (
    BadDatabaseURL,
    ModelChanged,
    SchemaMissing,
    StoreError,
    UnknownModel,
    UnknownRevision,
    UnsupportedDatabase,
)
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens, Source
from filterd.store.models import LABEL_TABLES
from filterd.store.report import ThresholdReport
from filterd.store.sql import as_utc

if TYPE_CHECKING:
    from filterd.store.drift import Delivered


@contextlib.contextmanager
def store_errors() -> Iterator[None]:
    """Problems with the database, its schema migrations or a file as one-line errors."""
    try:
        yield
    # a scheme filterd does not run on, a missing driver (psycopg), a SQLite directory that
    # cannot be made: the message says what to do
    except UnsupportedDatabase as error:
        raise click.ClickException(str(error)) from None
    except BadDatabaseURL as error:  # a malformed URL, or a scheme SQLAlchemy has no dialect for
        raise click.ClickException(f"bad database URL: {error}") from None
    except SchemaMissing:
        raise click.ClickException(
            "the database has no filterd schema, or an older one: run `filterd db upgrade`"
        ) from None
    except UnknownRevision as error:  # an unknown revision, a downgrade that cannot be
        raise click.ClickException(f"{error} (revisions: {_revisions()})") from None
    except StoreError as error:
        raise click.ClickException(f"database error: {error}") from None
    except (UnknownModel, ModelChanged, ValueError) as error:
        raise click.ClickException(str(error.args[0] if error.args else error)) from None
    except OSError as error:  # an export file that cannot be read or written…
        where = f"{error.filename}: " if error.filename else ""
        raise click.ClickException(where + (error.strerror or str(error))) from None


def open_store(url: str | None, *, writes: bool = False) -> Store:
    """The store at `url`, checked first (`database.check_file`: a SQLite file must exist, so
    that a mistyped path creates nothing). Within `store_errors()`."""
    database.check_file(url, writes=writes)
    return Store.open(url)


def open_model(url: str | None, name: str, *, writes: bool = False) -> ModelStore:
    """Model `name` of the store at `url` (`open_store`); an UnknownModel that lists the store's
    models if there is none. Within `store_errors()`."""
    return open_store(url, writes=writes).model(name)


def _revisions() -> str:
    """The schema revisions this filterd knows, oldest first, for an error message."""
    known = Store.revisions()
    return ", ".join(["base", *known[:-1], f"{known[-1]} (head)"] if known else ["base"])


def _checked_url(_ctx: click.Context, _param: click.Parameter, url: str | None) -> str | None:
    """--db (or $FILTERD_DATABASE_URL, or the default) checked before anything connects: a
    scheme filterd supports, or one line saying which are."""
    with store_errors():
        database.database_url(url)
    return url


DB_HELP = f"Database URL (default: ${database.URL_VARIABLE}, else {database.DEFAULT_URL})."
db_option = click.option("--db", "url", metavar="URL", help=DB_HELP, callback=_checked_url)
model_option = click.option(
    "--model", "name", default=DEFAULTS.model.name, show_default=True, help="Model name."
)
min_docs_option = click.option(
    "--min-docs",
    type=setting_type("model.min_docs"),
    default=DEFAULTS.model.min_docs,
    show_default=True,
    help="Learned documents each class needs before the model decides.",
)


# --- db ------------------------------------------------------------------------------------------


@click.group(name="db")
def db() -> None:
    """The store's schema (Alembic migrations)."""


@db.command(name="upgrade")
@db_option
@click.argument("revision", default="head")
def db_upgrade(url: str | None, revision: str) -> None:
    """Migrate the database to REVISION (default: the latest); a SQLite file is created if
    there is none."""
    with store_errors():
        database.check_file(url, missing_ok=True, writes=True)
    _migrate(Store.upgrade, url, revision)


@db.command(name="downgrade")
@db_option
@click.argument("revision")
@click.option(
    "--yes",
    is_flag=True,
    help="Confirm a downgrade that drops tables or columns: their data is gone for good.",
)
def db_downgrade(url: str | None, revision: str, yes: bool) -> None:
    """Migrate the database back to REVISION ("base": no filterd tables).

    A downgrade that drops tables or columns says which, with their rows and the labels among
    them, and goes ahead only with --yes (or a yes at the prompt, on a terminal)."""
    with store_errors():
        store = open_store(url, writes=True)
        drops = store.downgrade_drops(revision)
        if drops.tables or drops.columns:
            confirmed(_dropped(store, revision, drops), yes)
        store.close()
    _migrate(Store.downgrade, url, revision)


def _dropped(store: Store, revision: str, drops: Drops) -> str:
    """What migrating down to `revision` drops, in one line: tables with their rows, columns,
    and the labels (which the store keeps nowhere else) among the rows."""
    rows = store.row_counts(drops.tables)
    parts = []
    if drops.tables:
        counted = (
            f"{t} ({rows.get(t, 0):,} row{'' if rows.get(t) == 1 else 's'})" for t in drops.tables
        )
        parts.append("the tables " + ", ".join(counted))
    if drops.columns:
        parts.append("the columns " + ", ".join(drops.columns))
    labels = sum(rows.get(t, 0) for t in LABEL_TABLES)
    kept = (
        f"; {labels:,} labels among them, which the store keeps nowhere else (`filterd model "
        "export --model NAME -o FILE` keeps a model's)"
        if labels
        else ""
    )
    return (
        f"downgrading {masked_url(store.url)} from revision {store.revision()} to {revision} drops "
        + " and ".join(parts)
        + kept
    )


def _migrate(step: Callable[[Store, str], None], url: str | None, revision: str) -> None:
    with store_errors():
        store = Store.open(url)
        try:
            step(store, revision)
            click.echo(f"{masked_url(store.url)}: at revision {store.revision() or 'base'}")
        finally:
            store.close()


@db.command(name="current")
@db_option
def db_current(url: str | None) -> None:
    """The database's schema revision."""
    with store_errors():
        database.check_file(url, missing_ok=True)
        revision = Store.open(url).revision()
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
@click.option(
    "--pause",
    type=click.FloatRange(0.0),
    default=0.05,
    show_default=True,
    help="Seconds between chunks (500 tokens, 10,000 label events), to spare concurrent learners.",
)
@click.option(
    "--audit-days",
    type=setting_type("feedback.audit_retention_days"),
    metavar="N",
    help="Delete label events of the audit trail applied more than N days ago; 0 keeps "
    "them all (default: feedback.audit_retention_days of the configuration, "
    f"{DEFAULTS.feedback.audit_retention_days}).",
)
@click.option(
    "--review-days",
    type=setting_type("review.retention_days"),
    metavar="N",
    help="Delete review queue items queued more than N days ago; 0 keeps them "
    f"(default: review.retention_days of the configuration, {DEFAULTS.review.retention_days}).",
)
@config_option  # for the retention settings only: the database is --db's
@click.option("--dry-run", is_flag=True, help="Count what would go; change nothing.")
def db_prune(
    url: str | None,
    name: str,
    unseen_days: int,
    max_count: int,
    pause: float,
    audit_days: int | None,
    review_days: int | None,
    config_path: str | None,
    dry_run: bool,
) -> None:
    """Expire rare tokens unseen for a while; delete label events older than the audit trail's
    retention, review items older than the queue's, and the decided messages' coordinates older
    than feedback.resolve_ttl (run it as a scheduled job, not inline with scoring)."""
    config = load_config(config_path)
    audit_days = config.feedback.audit_retention_days if audit_days is None else audit_days
    review_days = config.review.retention_days if review_days is None else review_days
    ttl = config.feedback.resolve_within
    with store_errors():
        model = open_model(url, name, writes=True)
        result = model.prune_tokens(unseen_days, max_count, pause=pause, dry_run=dry_run)
        events = model.prune_events(audit_days, pause=pause, dry_run=dry_run)
        items = model.prune_review(review_days, pause=pause, dry_run=dry_run)
        decided = model.prune_decided(datetime.now(UTC) - ttl, pause=pause, dry_run=dry_run)
    verb = "would expire" if dry_run else "expired"
    delete = "would delete" if dry_run else "deleted"
    click.echo(
        f"{verb} {result.tokens} tokens ({result.rows} rows, {result.counts_removed} occurrences)"
        f"; {delete} {events} label events ({kept(audit_days)})"
        f"; {delete} {items} review items ({kept(review_days)})"
        f"; {delete} {decided} decided messages "
        f"(older than feedback.resolve_ttl = {config.feedback.resolve_ttl})"
    )


def kept(days: int) -> str:
    return f"older than {days} days" if days else "none: kept for ever"


# --- learn ---------------------------------------------------------------------------------------


@click.command(name="learn")
@click.argument("corpus", type=click.Path(dir_okay=True))
@db_option
@model_option
@config_option  # for model.labels: the database is --db's
@click.option(
    "--label-source", type=click.Choice(["analyst", "auto"]), default="analyst", show_default=True
)
@click.option("--batch-size", type=click.IntRange(1, 100_000), default=2000, show_default=True)
@click.option(
    "--holdout-fraction",
    type=setting_type("model.holdout_fraction"),
    help="Share of message ids kept for calibration instead of learned (default: "
    f"model.holdout_fraction of the configuration, {DEFAULTS.model.holdout_fraction}).",
)
@click.option(
    "--analyst",
    metavar="NAME",
    help="Who gave the labels, for the audit trail.",
    callback=lambda _ctx, _param, value: bounded(value, "--analyst", 200),
)
@click.option(
    "--skip-other-labels",
    is_flag=True,
    help="Learn the records labelled with one of model.labels and skip the others "
    "(counted on stderr), instead of refusing the corpus.",
)
def learn_command(
    corpus: str,
    url: str | None,
    name: str,
    config_path: str | None,
    label_source: Source,
    batch_size: int,
    holdout_fraction: float | None,
    analyst: str | None,
    skip_other_labels: bool,
) -> None:
    """Learn a labelled CORPUS into a model of the store (idempotent: a second run changes
    nothing). The model must exist (`filterd model create NAME`). Each label is an event of the
    audit trail (`filterd feedback log`), with --analyst as its author.

    Labels outside model.labels (of the configuration, as for the daemon's feedback) refuse the
    corpus, and nothing is learned: one made-up label would add a class and hold every decision
    at `unknown`. --skip-other-labels learns the rest."""
    config = load_config(config_path)
    labels = config.model.labels
    if holdout_fraction is None:
        holdout_fraction = config.model.holdout_fraction
    records = read_records(corpus)
    if any(len(r.labels) != 1 for r in records):
        raise click.ClickException(f"{corpus}: multi-label records cannot be learned as feedback")
    others = [r for r in records if labels and r.label not in labels]
    if others:
        which = f"{corpus}: {len(others)} of {len(records)} records {_other_labels(others, labels)}"
        if not skip_other_labels:
            raise click.ClickException(
                f"{which}; nothing learned (correct them, or give "
                "--skip-other-labels to learn the others)"
            )
        click.echo(f"skipped {which}", err=True)
        records = [r for r in records if r.label in labels]
    tokenize = tokenizer_of(config)
    totals = dict.fromkeys(
        ("learned", "relabelled", "duplicates", "held_out", "kept_analyst_label"), 0
    )
    with store_errors():
        model = open_model(url, name, writes=True)
        with click.progressbar(length=len(records), label="learning", file=sys.stderr) as bar:
            for start in range(0, len(records), batch_size):
                part = records[start : start + batch_size]
                items = [
                    LabelledTokens(
                        r.id, r.label, tokenize(r.message()).tokens, label_source, analyst=analyst
                    )
                    for r in part
                ]
                applied = model.learn(items, holdout_fraction)
                for key in totals:
                    totals[key] += getattr(applied, key)
                bar.update(len(part))
    click.echo(", ".join(f"{key.replace('_', ' ')} {value}" for key, value in totals.items()))


FIRST_LINES = 5  # line numbers named per label outside model.labels


def _other_labels(records: Sequence[Record], labels: Sequence[str]) -> str:
    """How `records` are labelled outside `labels`, in one line: each label with its count and
    its first lines."""
    lines: dict[str, list[int]] = {}
    for record in records:
        lines.setdefault(record.label, []).append(record.line or 0)
    each = []
    for label, found in sorted(lines.items(), key=lambda item: -len(item[1])):
        first = sorted(found)[:FIRST_LINES]
        more = ", …" if len(found) > FIRST_LINES else ""
        where = f"line{'s' if len(found) > 1 else ''} {', '.join(map(str, first))}{more}"
        each.append(f"{label!r} × {len(found)} ({where})")
    return f"have a label outside model.labels ({', '.join(labels)}): {', '.join(each)}"


def bounded(value: str | None, option: str, most: int) -> str | None:
    """`value` if it fits a column of `most` characters, else a one-line error."""
    if value is not None and len(value) > most:
        raise OptionError(f"{option}: at most {most} characters, not {len(value)}")
    return value


# --- model ---------------------------------------------------------------------------------------


@click.group(name="model")
def model() -> None:
    """Models in the store: list, create, show, stats, export, import, delete."""


@model.command(name="list")
@db_option
@min_docs_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per model.")
def model_list(url: str | None, min_docs: int, as_json: bool) -> None:
    """The models in the store, by name: when each was created, its learned documents per
    class, its distinct tokens and whether it is ready to decide."""
    with store_errors():
        summaries = open_store(url).model_summaries(min_docs)
    if as_json:
        for summary in summaries:
            created = as_utc(summary["created_at"]).isoformat()
            click.echo(json.dumps({**summary, "created_at": created}))
        return
    if not summaries:
        click.echo("no models in the store: `filterd model create NAME` adds one")
        return
    rows = [("model", "created", "documents", "tokens", "readiness")]
    for s in summaries:
        documents = ", ".join(f"{shown(label)} {n:,}" for label, n in s["documents"].items())
        readiness = "ready" if s["ready"] else f"not ready: {s['not_ready']}"
        rows.append(
            (
                shown(s["model"]),
                when(s["created_at"]),
                documents or "none learned yet",
                f"{s['distinct_tokens']:,}",
                readiness,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        click.echo("  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[4]]).rstrip())


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
@config_option  # for [model]: the database is --db's
def model_create(
    name: str,
    url: str | None,
    variant: str | None,
    params: tuple[str, ...],
    selection: str | None,
    config_path: str | None,
) -> None:
    """Add a model NAME with an estimator and a selection: those of --variant, --param and
    --select, else the configuration's [model] (as `filterd run` creates one)."""
    if variant or params or selection:
        (spec,) = model_specs(
            (variant,) if variant else (), params, (selection,) if selection else ()
        )
    else:
        spec = load_config(config_path).model.spec
    try:
        # the daemon and `filterd calibrate` decide on the target-vs-rest view: two classes
        spec.check_classes(("the target", "the rest"))
    except ValueError as error:
        raise OptionError(str(error)) from None
    with store_errors():
        store = open_store(url, writes=True)
        if name in store.model_names():
            raise click.ClickException(f"a model named {name!r} exists already")
        store.create_model(name, spec)
    click.echo(f"created model {name!r}: {spec}")


@model.command(name="stats")
@db_option
@model_option
@min_docs_option
@click.option(
    "--target-class",
    default=DEFAULTS.decision.target_class,
    show_default=True,
    help="The class of the drift figures.",
)
@click.option(
    "--drift-window",
    type=setting_type("drift.window"),
    default=DEFAULTS.drift.window,
    show_default=True,
    help="Newest feedback records the drift figures cover.",
)
@click.option("--json", "as_json", is_flag=True)
def model_stats(
    url: str | None, name: str, min_docs: int, target_class: str, drift_window: int, as_json: bool
) -> None:
    """Classes, documents, tokens, holdout size, last learn, current threshold, readiness, the
    rolling figures of feedback scored before it was learned (drift), and what the thresholds
    delivered on it: over the window, each record at the τ in force when it was scored; and
    since the τ in force was written."""
    with store_errors():
        model = open_model(url, name)
        report = model.report(min_docs)
        drift = model.drift_report(target_class, drift_window)
    if as_json:
        click.echo(json.dumps({**report, "drift": drift.as_dict()}, default=str))
        return
    click.echo(f"model {report['model']}: {report['spec']}  (change seq {report['seq']})")
    for c in report["classes"]:
        click.echo(f"  class {c['label']!r}: {c['docs']} documents, {c['tokens']} tokens")
    click.echo(
        f"  distinct tokens {report['distinct_tokens']}, holdout {report['holdout']}, "
        f"ledger {report['ledger']}, last learn {report['last_learn'] or 'never'}"
    )
    threshold = report["threshold"]
    click.echo(
        "  threshold: "
        + (
            f"version {threshold['version']}, τ = {threshold['tau']:.4g} for "
            f"{threshold['target_class']!r} at recall ≥ {threshold['target_recall']}"
            + _calibrated(threshold)
            if threshold
            else "none yet"
        )
    )
    click.echo("  ready" if report["ready"] else f"  not ready: {report['not_ready']}")
    if not drift.n:
        click.echo("  drift: no feedback scored yet (the daemon records it)")
        return
    click.echo(
        f"  drift, last {drift.n} feedback scored before learning "
        f"({drift.n_pos} {drift.target_class!r}): "
        f"AUC {_fraction(drift.auc)}, recall {_fraction(drift.recall)}, "
        f"specificity {_fraction(drift.specificity)} at τ = {drift.tau:.4g}"
    )
    judged = drift.delivered.n_pos + drift.delivered.n_neg
    target = "" if drift.target_recall is None else f" (target recall {drift.target_recall:g})"
    click.echo(
        f"  delivered, last {judged:,} feedback at the τ then in force: "
        f"{delivered_text(drift.delivered, drift.target_class)}{target}"
        if judged
        else "  delivered: no feedback scored while a threshold version was in force"
    )
    if drift.in_force_since is not None:
        d = drift.in_force
        click.echo(
            f"  τ in force since {when(drift.in_force_since)}: "
            + (
                delivered_text(d, drift.target_class)
                if d.n_pos or d.n_neg
                else "no feedback scored since"
            )
        )


def _fraction(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def delivered_text(
    d: Delivered, target: str, number: Callable[[float | None], str] = _fraction
) -> str:
    """Recall of the target items and specificity of the others, with their counts."""
    recall = (
        f"recall {number(d.recall)} of {d.n_pos:,} {target} ({d.missed:,} missed)"
        if d.n_pos
        else f"no {target} yet"
    )
    kept = f"specificity {number(d.specificity)} of {d.n_neg:,}" if d.n_neg else "no others yet"
    return f"{recall}, {kept}"


def _calibrated(threshold: ThresholdReport) -> str:
    """How the version was calibrated, where it was recorded: " (adaptive, miss level 0.008)"."""
    if threshold["source"] is None:
        return ""
    level = threshold["level"]
    return f" ({threshold['source']}" + ("" if level is None else f", miss level {level:.4g}") + ")"


@model.command(name="show")
@click.argument("name", default=DEFAULTS.model.name)
@db_option
@click.option("--json", "as_json", is_flag=True)
def model_show(name: str, url: str | None, as_json: bool) -> None:
    """Model NAME (default: default) in one block: its spec (variant, parameters, selection),
    when it was created, its documents per class, its tokens and its current threshold."""
    with store_errors():
        report = open_model(url, name).report(min_docs=1)
    documents = {c["label"]: c["docs"] for c in report["classes"]}
    threshold = report["threshold"]
    if as_json:
        shown = {
            key: report[key]
            for key in (
                "model",
                "spec",
                "variant",
                "params",
                "selection",
                "set_of_words",
                "created_at",
                "distinct_tokens",
                "threshold",
            )
        }
        click.echo(json.dumps({**shown, "documents": documents}, default=str))
        return
    params = ", ".join(f"{k}={format_value(v)}" for k, v in sorted(report["params"].items()))
    lines = [
        (
            "variant",
            report["variant"] + (" in set-of-words mode" if report["set_of_words"] else ""),
        ),
        ("parameters", params or "the variant's defaults"),
        ("selection", report["selection"]),
        ("created", when(report["created_at"])),
        (
            "documents",
            ", ".join(f"{label} {n:,}" for label, n in documents.items()) or "none learned yet",
        ),
        ("tokens", f"{report['distinct_tokens']:,} distinct"),
        (
            "threshold",
            "none yet"
            if threshold is None
            else f"version {threshold['version']}: τ = {threshold['tau']:.4g} "
            f"for {threshold['target_class']!r} "
            f"at recall ≥ {threshold['target_recall']}, {when(threshold['created_at'])}",
        ),
    ]
    click.echo(f"model {name!r}\n" + "\n".join(f"  {key:<11} {value}" for key, value in lines))


def when(moment: datetime) -> str:
    return f"{as_utc(moment):%Y-%m-%d %H:%M:%S} UTC"


@model.command(name="delete")
@click.argument("name")
@db_option
@click.option("--yes", is_flag=True, help="Confirm the deletion: it cannot be undone.")
@click.option(
    "--export",
    "archive",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Write the model, labels included, to FILE first (as `filterd model export`); "
    "required when the model holds labels.",
)
def model_delete(name: str, url: str | None, yes: bool, archive: str | None) -> None:
    """Delete model NAME and everything of it in the store: its statistics, class totals,
    threshold versions, drift scores, its labels (the feedback ledger and the holdout) and its
    audit trail of label events.

    Labels are the analysts' work, and the store holds them nowhere else: a model that holds any
    is deleted only with --export FILE, which writes the whole model, labels included, to FILE
    first; `filterd model import FILE` brings it back. If a learner writes to the model meanwhile,
    nothing is deleted. Stop the daemons that use the model first (`filterd run` creates a
    missing model afresh, empty).
    """
    with store_errors():
        model = open_model(url, name, writes=True)
        held = model.rows()
        if not yes:
            raise click.ClickException(
                f"deleting model {name!r} removes its statistics, {held.labels} labels, "
                f"{held.rows.get('thresholds', 0)} threshold versions and "
                f"{held.rows.get('label_events', 0)} label events for good: "
                "add --yes"
            )
        if held.labels and archive is None:
            raise click.ClickException(
                f"model {name!r} holds {held.labels} labels, which the store keeps nowhere "
                "else: give --export FILE to keep them (`filterd model import FILE` "
                "restores the model)"
            )
        if archive is not None:
            written = _export_to(model, archive)
            click.echo(f"exported model {name!r} to {archive}: {written} rows", err=True)
        deleted = model.delete(held.seq)
    counts = ", ".join(f"{table} {rows}" for table, rows in deleted.items() if rows)
    click.echo(f"deleted model {name!r}" + (f" ({counts} rows)" if counts else ""))


@model.command(name="export")
@db_option
@model_option
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True),
    help="File (.jsonl or .jsonl.gz); default: gzip on stdout.",
)
def model_export(url: str | None, name: str, output: str | None) -> None:
    """Write a model (statistics, ledger, holdout, thresholds) as gzip JSON lines."""
    if output is None and sys.stdout.isatty():
        raise click.UsageError(
            "refusing to write gzip to a terminal: redirect stdout or give --output"
        )
    with store_errors():
        model = open_model(url, name)
        if output is None:
            with (
                gzip.GzipFile(fileobj=sys.stdout.buffer, mode="wb", mtime=0) as raw,
                io.TextIOWrapper(raw, encoding="utf-8") as text,
            ):
                rows = model.export(text)
        else:
            rows = _export_to(model, output)
    click.echo(f"exported model {name!r}: {rows} rows", err=True)


def _export_to(model: ModelStore, path: str) -> int:
    """Export `model` to file `path` (gzip if it ends in .gz); returns the rows written.
    A failed export leaves no file: a partial one would look like a backup."""
    opened = False
    try:
        with (
            gzip.open(path, "wt", encoding="utf-8")
            if path.endswith(".gz")
            else open(path, "w", encoding="utf-8")
        ) as text:
            opened = True
            return model.export(text)
    except BaseException:
        if opened:  # not a file that was there already and could not be opened
            Path(path).unlink(missing_ok=True)
        raise


@model.command(name="import")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@db_option
@click.option("--as", "rename", metavar="NAME", help="Import under another name.")
def model_import(path: str, url: str | None, rename: str | None) -> None:
    """Restore a model exported by `filterd model export` (PATH, or - for stdin)."""
    with store_errors():
        store = open_store(url, writes=True)
        with _open_export(path) as lines:
            name = store.import_model(lines, rename)
    click.echo(f"imported model {name!r}", err=True)


@contextlib.contextmanager
def _open_export(path: str) -> Iterator[IO[str]]:
    """The export at `path` (gzip or not; - for stdin) as text; a file that cannot be read, or is
    no export or a damaged one, as one line naming it."""
    raw = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115 - closed below
    try:
        data = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        stream = gzip.GzipFile(fileobj=raw) if data == b"\x1f\x8b" else raw
        yield io.TextIOWrapper(stream, encoding="utf-8")
    except (OSError, EOFError) as error:  # gzip's: not gzip after all, or cut short
        raise click.ClickException(f"{path}: cannot read it ({error})") from None
    except UnicodeDecodeError:
        raise click.ClickException(f"{path}: not a filterd model export (not UTF-8 text)") from None
    except ValueError as error:  # backup's own: no export header, a line that is not JSON…
        raise click.ClickException(f"{path}: {error}") from None
    except (KeyError, TypeError, AttributeError) as error:
        # backup.import_model reads lines of the shapes it writes; others fail in it like this
        raise click.ClickException(
            f"{path}: not a filterd model export, or a damaged one "
            f"({error.__class__.__name__}: {error})"
        ) from None
    finally:
        if raw is not sys.stdin.buffer:
            raw.close()
