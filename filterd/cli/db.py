"""`filterd db …`: the store's schema (upgrade, downgrade, current) and its upkeep (prune)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import click

from filterd.cli.common import config_option, confirmed, load_config, setting_type
from filterd.cli.store import db_option, model_option, open_model, open_store, store_errors
from filterd.service.config import DEFAULTS, masked_url
from filterd.store import database
from filterd.store.downgrades import Drops
from filterd.store.handle import Store
from filterd.store.models import LABEL_TABLES


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
    retention, review items older than the queue's, the decided messages' coordinates older
    than feedback.resolve_ttl, and the entity memory's events and labels older than its longest
    window and its label window, before its newest event (run it as a scheduled job, not
    inline with scoring)."""
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
        entities = config.entities.spec(config.decision.target_class)
        entity_events, entity_labels = model.prune_entities(
            entities.windows[-1], entities.label_window, pause=pause, dry_run=dry_run
        )
    verb = "would expire" if dry_run else "expired"
    delete = "would delete" if dry_run else "deleted"
    click.echo(
        f"{verb} {result.tokens} tokens ({result.rows} rows, {result.counts_removed} occurrences)"
        f"; {delete} {events} label events ({kept(audit_days)})"
        f"; {delete} {items} review items ({kept(review_days)})"
        f"; {delete} {decided} decided messages "
        f"(older than feedback.resolve_ttl = {config.feedback.resolve_ttl})"
        f"; {delete} {entity_events} entity events and {entity_labels} entity labels "
        "(past the [entities] windows)"
    )


def kept(days: int) -> str:
    return f"older than {days} days" if days else "none: kept for ever"
