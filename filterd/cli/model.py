"""`filterd model …`: the models of the store listed, created, described (stats, show),
deleted, exported and imported."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import click

from filterd.bayes.estimators import format_value
from filterd.bayes.model import ROBINSON_FISHER_SPEC
from filterd.cli.common import (
    OptionError,
    config_option,
    load_config,
    model_specs,
    setting_type,
    shown,
)
from filterd.cli.store import (
    db_option,
    delivered_text,
    fraction,
    min_docs_option,
    model_option,
    open_model,
    open_store,
    store_errors,
    when,
)
from filterd.service.config import DEFAULTS
from filterd.store.handle import ModelStore
from filterd.store.report import ThresholdReport
from filterd.store.sql import as_utc


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
    help="Default: the configuration's [model] (built in: fusion); with --param or --select "
    "alone, robinson_fisher with filterd's parameters and selection.",
)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE")
@click.option(
    "--select",
    "selection",
    metavar="SPEC",
    help="Default: none with --variant, else robinson_fisher's "
    f"({ROBINSON_FISHER_SPEC.selection}).",
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
        f"AUC {fraction(drift.auc)}, recall {fraction(drift.recall)}, "
        f"specificity {fraction(drift.specificity)} at τ = {drift.tau:.4g}"
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
