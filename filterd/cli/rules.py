"""`filterd rules …`: the declarative rules beside the model (`filterd.entities.rules`), which
every scorer reads within seconds: `add`, `remove` (asks first), `show`, `log`.
"""

from __future__ import annotations

import click

from filterd.cli.common import (
    OptionError,
    config_option,
    confirmed,
    load_config,
    quoted,
    shown,
)
from filterd.cli.store import bounded, db_option, model_option, open_model, store_errors
from filterd.entities.lists import LIST_OUTCOMES, outcome_of
from filterd.entities.rules import Rule, RuleError, check_names, check_rule_name


@click.group(name="rules")
def rules() -> None:
    """Rules beside the model: a condition over a message's attributes and its entities'
    features, and an outcome (block, review, allow)."""


@rules.command(name="add")
@click.argument("rule", metavar="NAME")
@click.option(
    "--when",
    metavar="CONDITION",
    required=True,
    help='The condition, e.g. "amount > 5000 and customer:count_1h >= 3" (docs/operations.md, '
    "Rules).",
)
@click.option(
    "--outcome",
    type=click.Choice(LIST_OUTCOMES),
    required=True,
    help="block: decided the target class; allow: decided not the target class (whatever the "
    "score); review: decided by the model and queued for an analyst.",
)
@click.option("--reason", metavar="TEXT", help="Why, on the decisions' evidence and the log.")
@click.option("--analyst", metavar="NAME", help="Who (on the log).")
@config_option
@db_option
@model_option
def rules_add(
    rule: str,
    when: str,
    outcome: str,
    reason: str | None,
    analyst: str | None,
    config_path: str | None,
    url: str | None,
    name: str,
) -> None:
    """Add the rule NAME (lower-case letters, digits, '_', '.', '-'), replacing the rule of that
    name if there is one, e.g. `filterd rules add night-spend --when "amount > 5000 and
    customer:count_1h >= 3" --outcome review`. The entity features it names must be those of
    the configuration's [entities] (--config)."""
    config = load_config(config_path)
    try:
        check_rule_name(rule)
    except RuleError as error:
        raise OptionError(f"NAME: {error}") from None
    try:
        added = Rule(
            rule,
            when,
            outcome_of(outcome),
            bounded(reason, "--reason", 2000),
            bounded(analyst, "--analyst", 200),
        )
        check_names(added.names, config.entities.spec(config.decision.target_class))
    except RuleError as error:
        raise OptionError(f"--when: {error}") from None
    with store_errors():
        open_model(url, name, writes=True).put_rule(added)
    click.echo(added.describe())


@rules.command(name="remove")
@click.argument("rule", metavar="NAME")
@click.option("--analyst", metavar="NAME", help="Who (on the log).")
@click.option("--yes", is_flag=True, help="Do not ask first.")
@db_option
@model_option
def rules_remove(rule: str, analyst: str | None, yes: bool, url: str | None, name: str) -> None:
    """Remove the rule NAME."""
    with store_errors():
        model = open_model(url, name, writes=True)
        names: set[str] = set()  # those that no longer parse too: they can still be removed
        names |= {r.name for r in model.rules(on_error=lambda found, _: names.add(found))}
        if rule not in names:
            raise click.ClickException(f"there is no rule {shown(rule)}")
        confirmed(f"removing the rule {shown(rule)}", yes)
        removed = model.remove_rule(rule, bounded(analyst, "--analyst", 200))
    if removed is None:  # removed by another meanwhile
        raise click.ClickException(f"there is no rule {shown(rule)}")
    click.echo(f"removed {removed.outcome} rule {shown(rule)}: {shown(removed.when)}")


@rules.command(name="show")
@db_option
@model_option
def rules_show(url: str | None, name: str) -> None:
    """The rules, one a line: outcome, name, condition, why, by whom."""
    with store_errors():
        found = open_model(url, name).rules(on_error=_unparsed)
    for rule in found:
        by = f"  by {shown(rule.created_by)}" if rule.created_by else ""
        click.echo(f"{shown(rule.describe())}{by}")


@rules.command(name="log")
@click.option("--limit", type=click.IntRange(min=0), default=100, help="The newest N (0: all).")
@db_option
@model_option
def rules_log(limit: int, url: str | None, name: str) -> None:
    """Every change to the rules, newest first: who added or removed which rule, when, with
    which condition, and why."""
    with store_errors():
        changes = open_model(url, name).rule_changes(limit or None)
    for change in changes:
        who = f"  {shown(change.analyst)}" if change.analyst else ""
        why = f"  {quoted(change.reason)}" if change.reason else ""
        click.echo(
            f"{change.changed_at:%Y-%m-%d %H:%M:%SZ}  {change.action:<7}  {change.outcome} "
            f"{shown(change.name)}: {shown(change.when)}{who}{why}"
        )


def _unparsed(name: str, error: str) -> None:
    click.echo(f"rule {shown(name)} does not parse ({error}): the scorers leave it out", err=True)
