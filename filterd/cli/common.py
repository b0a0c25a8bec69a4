"""What several command groups share: reading a corpus, turning options into model specs, and
showing text that came from outside (messages, feedback, corpora) on a terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import click
from msgspec import inspect

from filterd.bayes.estimators import parameters
from filterd.bayes.model import ROBINSON_FISHER_SPEC, ModelSpec
from filterd.cli.corpus_files import read_corpus
from filterd.daemon.settings import load_settings
from filterd.evaluation.corpus import CorpusError, Record
from filterd.service.config import Config, ConfigError, declared


class OptionError(click.ClickException):
    """A bad option value in one line ("Error: …"), with the exit status of click's usage errors
    (2): the message says what to fix, where click's BadParameter would print the usage around
    it."""

    exit_code = 2


def parse_time(text: str) -> datetime:
    """An ISO 8601 time, UTC unless it names a zone (as the daemon reads a message's `ts`);
    else ValueError.

    >>> parse_time("2018-05-01").isoformat(), parse_time("2018-05-01T02:00+02:00").isoformat()
    ('2018-05-01T00:00:00+00:00', '2018-05-01T02:00:00+02:00')
    """
    moment = datetime.fromisoformat(text.strip())
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


class IsoTime(click.ParamType[datetime, str | datetime]):
    """An option's ISO 8601 time (`parse_time`)."""

    name = "ISO-TIME"

    def convert(
        self, value: str | datetime, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            return parse_time(value)
        except ValueError:
            self.fail(f"{value!r} is not an ISO 8601 time (e.g. 2018-05-01T00:00:00Z)", param, ctx)


def model_specs(
    variants: Sequence[str],
    params: Sequence[str],
    selections: Sequence[str],
    default: ModelSpec = ROBINSON_FISHER_SPEC,
) -> list[ModelSpec]:
    """One spec per variant × selection from --variant NAME[+sow], --param [VARIANT.]KEY=VALUE,
    --select.

    Without a variant: `default`, its parameters overridden by --param and its selection unless
    --select is given. With variants but no --select: no selection. Any of them invalid: an
    OptionError.
    """
    if not variants:
        variants = (default.variant + ("+sow" if default.set_of_words else ""),)
        params = (*(f"{k}={v}" for k, v in default.params.items()), *params)
        selections = selections or (str(default.selection),)
    selections = selections or ("none",)
    names = [v.removesuffix("+sow") for v in variants]
    scoped: dict[str, dict[str, str]] = {name: {} for name in names}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise OptionError(f"--param {item!r} is not KEY=VALUE")
        variant, dot, key = key.rpartition(".")
        targets = [variant] if dot else [n for n in names if _accepts(n, key)]
        if dot and variant not in scoped:
            raise OptionError(f"--param {item!r} names variant {variant!r}, which is not evaluated")
        if not targets:
            raise OptionError(f"--param {item!r}: no evaluated variant has a parameter {key!r}")
        for name in targets:
            scoped[name][key] = value
    try:
        return [
            ModelSpec.parse(variant, scoped[name], selection)
            for variant, name in zip(variants, names)
            for selection in selections
        ]
    except ValueError as error:
        raise OptionError(str(error)) from None


def _accepts(variant: str, key: str) -> bool:
    try:
        return key in parameters(variant)
    except ValueError:  # an unknown variant: ModelSpec.parse says so
        return False


def read_records(path: str) -> list[Record]:
    """A corpus file's records, or a one-line error."""
    try:
        records = read_corpus(path)
    except CorpusError as error:
        raise click.ClickException(str(error)) from None
    if not records:
        raise click.ClickException(f"{path}: the corpus is empty")
    return records


broker_override = click.option(
    "--bootstrap-servers",
    "kafka__bootstrap_servers",
    metavar="HOST:PORT[,…]",
    help="Kafka brokers (overrides kafka.bootstrap_servers).",
)
config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    envvar="FILTERD_CONFIG",
    help="Configuration file (TOML; default: $FILTERD_CONFIG, else the built-in defaults).",
)


def load_config(path: str | None, **overrides: object) -> Config:
    """The configuration (file ← environment ← flags), or a one-line error naming the key."""
    try:
        return load_settings(
            path, overrides={k.replace("__", "."): v for k, v in overrides.items()}
        )
    except ConfigError as error:
        raise click.ClickException(f"invalid configuration: {error}") from None


def setting_type(key: str) -> click.ParamType[Any, Any]:
    """The click type of an option for the setting `key` ("section.key"): the range or the
    choices of its declaration (`filterd.service.config`), so that the flag takes what the
    configuration takes."""
    section, _, name = key.partition(".")
    kind = declared()[section][name]
    while isinstance(kind, inspect.Metadata):
        kind = kind.type
    if isinstance(kind, inspect.LiteralType):
        return click.Choice([str(value) for value in kind.values])
    if isinstance(kind, inspect.IntType):
        return click.IntRange(*_bounds(kind))
    if isinstance(kind, inspect.FloatType):
        return click.FloatRange(*_bounds(kind))
    raise ValueError(f"{key}: its declaration has no range or choices")


def _bounds(kind: inspect.IntType | inspect.FloatType) -> tuple[Any, Any, bool, bool]:
    """A declared range as click's (min, max, min_open, max_open)."""
    low = kind.ge if kind.ge is not None else kind.gt
    high = kind.le if kind.le is not None else kind.lt
    return low, high, kind.gt is not None, kind.lt is not None


def confirmed(what: str, yes: bool) -> None:
    """Go ahead with what `what` says a command is about to do only with --yes, or a yes at the
    prompt on a terminal; else a one-line error that says to add --yes."""
    if yes:
        click.echo(what, err=True)
    elif sys.stdin.isatty():
        click.confirm(f"{what}. Go ahead?", abort=True, err=True)
    else:
        raise click.ClickException(f"{what}: add --yes")


def shown(text: str | None) -> str:
    """`text` as it is if it is printable, else as a JSON string (control characters escaped),
    so that text from a message or a feedback record cannot move the cursor or recolour an
    operator's terminal."""
    text = text or ""
    return text if text.isprintable() else json.dumps(text)


def quoted(text: str) -> str:
    """`text` in double quotes, escaped as JSON; non-ASCII kept where it is printable."""
    return json.dumps(text, ensure_ascii=not text.isprintable())
