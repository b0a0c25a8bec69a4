"""`filterd learn`: a labelled corpus learned into a model of the store."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from filterd.cli.common import config_option, load_config, read_records, setting_type
from filterd.cli.store import bounded, db_option, model_option, open_model, store_errors
from filterd.evaluation.corpus import Record
from filterd.service.config import DEFAULTS
from filterd.service.decide import tokenizer_of
from filterd.store.labels import LabelledTokens, Source


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
                applied = model.learn(items, holdout_fraction, target=config.decision.target_class)
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
