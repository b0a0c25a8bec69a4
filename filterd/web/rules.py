"""GET, POST /v1/rules and DELETE /v1/rules/{name}: the declarative rules beside the model
(`filterd.entities.rules`, kept by `filterd.store.rules`), as `filterd rules` manages them: a
condition checked before anything is stored (it parses; the entity features it names are the
configuration's), every change on the rules' log with the analyst of the credential, read by
every scorer within seconds."""

from __future__ import annotations

from collections.abc import Mapping

from filterd.entities.rules import Rule, RuleError, check_names, check_rule_name
from filterd.web.api import RuleInfo, RuleRequest, RulesPage
from filterd.web.context import WebContext
from filterd.web.errors import Problem, decode_body


def rules_page(context: WebContext) -> RulesPage:
    return RulesPage(rules=[rule_info(r) for r in context.model.rules(on_error=_left_out)])


def rules_reading(context: WebContext, key: str) -> list[RuleInfo]:
    """The rules that read the entity key `key`: as an attribute or by its features."""
    return [
        rule_info(r)
        for r in context.model.rules(on_error=_left_out)
        if any(n == key or n.startswith(f"{key}:") for n in r.names)
    ]


def add_rule(context: WebContext, body: bytes, analyst: str) -> RuleInfo:
    """The rule of `body` added by `analyst`, or a Problem: 400 not JSON, 422 a field that does
    not validate (a condition that does not parse, or names an entity feature the configuration
    has not)."""
    return add(context, decode_body(body, RuleRequest), analyst)


def add(context: WebContext, request: RuleRequest, analyst: str) -> RuleInfo:
    """`add_rule` of a request already decoded (the workbench's form)."""
    config = context.config
    try:
        check_rule_name(request.name)  # all of it: a pattern's $ lets a newline end it
    except RuleError as error:
        raise Problem(422, str(error), "$.name") from None
    try:
        rule = Rule(request.name, request.when, request.outcome, request.reason, analyst)
        check_names(rule.names, config.entities.spec(config.decision.target_class))
    except RuleError as error:
        raise Problem(422, str(error), "$.when") from None
    context.model.put_rule(rule)
    return rule_info(rule)


def remove_rule(context: WebContext, name: str, analyst: str) -> RuleInfo:
    """The rule removed by `analyst`, or a 404 Problem if there is none of that name."""
    removed = context.model.remove_rule(name, analyst)
    if removed is None:
        raise Problem(404, "there is no rule of that name")
    return _info(removed.name, removed.when, removed.outcome, removed.reason, removed.analyst)


def rule_name(path_params: Mapping[str, object]) -> str:
    """The rule name of a request's path, or a 422 Problem naming `name`."""
    name = str(path_params.get("name", ""))
    try:
        check_rule_name(name)
    except RuleError as error:
        raise Problem(422, str(error), "name") from None
    return name


def rule_info(rule: Rule) -> RuleInfo:
    return _info(rule.name, rule.when, rule.outcome, rule.reason, rule.created_by)


def _info(name: str, when: str, outcome: str, reason: str | None, by: str | None) -> RuleInfo:
    return RuleInfo(name=name, when=when, outcome=outcome, reason=reason, created_by=by)


def _left_out(name: str, error: str) -> None:
    """A stored rule that no longer parses is not listed (the scorers leave it out too, and
    log it; `filterd rules show` names it)."""
