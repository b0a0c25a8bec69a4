"""Declarative rules beside the model: a condition over a message's attributes and its
entities' features, and an outcome (pure: no I/O).

A rule's condition is text an analyst writes, e.g.

    amount > 5000 and customer:count_1h >= 3
    country in ["NG", "RU"] and not (customer:amount_vs_30d < 4)
    terminal:fraud_28d >= 2 or sender == "payments@example.com"

Grammar (keywords in lower case; `and` binds tighter than `or`):

    condition  := conjunct ("or" conjunct)*
    conjunct   := term ("and" term)*
    term       := "not" term | "(" condition ")" | NAME OP literal
                | NAME ["not"] "in" "[" literal ("," literal)* "]"
    OP         := "<" | "<=" | ">" | ">=" | "==" | "!="
    literal    := a number (12, -3.5, 1e6) | a text in quotes ("NG" or 'NG', no escapes)

A NAME is an attribute (dotted if nested: `geo.country`), the field `sender` or `tenant`, or an
entity feature as its token is named without its bin (`filterd.entities.memory`):
`KEY:count_W`, `KEY:amount_vs_W` (W the longest window; 0 while the entity has no amount),
`KEY:PARTYs_W`, `KEY:TARGET_W` (e.g. `terminal:fraud_28d`). A number compares with numbers and
a text with texts (`<`, `>` with numbers only); a comparison with a value the message lacks,
or of another kind, is false (`not` makes it true).

Parsing reads the text once, left to right (each piece is matched at its position by patterns
that cannot backtrack), nested at most MAX_DEPTH deep, at most MAX_RULE_LENGTH characters:
rules come from analysts through the HTTP API too. Evaluating a condition is linear in its
size.

When several rules match a message, the most cautious wins (block, then review, then allow;
by name among equals). A list entry for one of the message's entities comes before any rule
(`filterd.entities.overrides`).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, get_args

from filterd.entities.lists import LIST_OUTCOMES, ListOutcome
from filterd.entities.memory import EntityFeatures, EntitySpec, field_value, token_names

MAX_RULE_LENGTH = 2000  # characters of a condition
MAX_DEPTH = 20  # `not` and parentheses nested within one another
MAX_NAME_LENGTH = 64  # characters of a rule's name
_NAME = re.compile("[a-z0-9][a-z0-9_.-]*")  # a rule's name, all of it (`check_rule_name`)
NAME_PATTERN = f"^{_NAME.pattern}$"  # the same, for a JSON Schema

Operator = Literal["<", "<=", ">", ">=", "==", "!="]
Value = float | str  # a literal of a condition

_PIECE = re.compile(
    r"""(?P<space>\s+)
    |(?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
    |(?P<text>"[^"]*"|'[^']*')
    |(?P<op><=|>=|==|!=|<|>|\(|\)|\[|\]|,)
    |(?P<name>[A-Za-z_][A-Za-z0-9_.-]*(?::[A-Za-z0-9_.-]+)?)""",
    re.VERBOSE,
)
_KEYWORDS = frozenset({"and", "or", "not", "in"})
_OPERATORS: dict[str, Operator] = {op: op for op in get_args(Operator)}
_COMPARE: dict[Operator, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


class RuleError(ValueError):
    """A condition that does not parse, or names what the model has not."""


@dataclass(frozen=True)
class _Piece:
    kind: str  # number, text, op, name, keyword, end
    text: str
    at: int  # its column, from 1


def _pieces(text: str) -> list[_Piece]:
    if len(text) > MAX_RULE_LENGTH:
        raise RuleError(f"a condition takes at most {MAX_RULE_LENGTH} characters")
    out, at = [], 0
    while at < len(text):
        found = _PIECE.match(text, at)
        if found is None:
            raise RuleError(f"column {at + 1}: unexpected {text[at]!r}")
        kind = found.lastgroup or ""
        if kind != "space":
            piece = found.group()
            if kind == "name" and piece in _KEYWORDS:
                kind = "keyword"
            out.append(_Piece(kind, piece, at + 1))
        at = found.end()
    out.append(_Piece("end", "", len(text) + 1))
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Compare:
    name: str
    op: Operator
    value: Value

    def holds(self, facts: Mapping[str, Any]) -> bool:
        seen = facts.get(self.name)
        if isinstance(self.value, str):
            return isinstance(seen, str) and _COMPARE[self.op](seen, self.value)
        return _number(seen) and _COMPARE[self.op](seen, self.value)


@dataclass(frozen=True)
class InSet:
    name: str
    values: frozenset[Value]
    negated: bool = False

    def holds(self, facts: Mapping[str, Any]) -> bool:
        seen = facts.get(self.name)
        if not (isinstance(seen, str) or _number(seen)):
            return False
        return (seen in self.values) != self.negated


@dataclass(frozen=True)
class Not:
    term: Condition

    def holds(self, facts: Mapping[str, Any]) -> bool:
        return not self.term.holds(facts)


@dataclass(frozen=True)
class AllOf:
    terms: tuple[Condition, ...]

    def holds(self, facts: Mapping[str, Any]) -> bool:
        return all(t.holds(facts) for t in self.terms)


@dataclass(frozen=True)
class AnyOf:
    terms: tuple[Condition, ...]

    def holds(self, facts: Mapping[str, Any]) -> bool:
        return any(t.holds(facts) for t in self.terms)


Condition = Compare | InSet | Not | AllOf | AnyOf


class _Parser:
    def __init__(self, text: str) -> None:
        self.pieces = _pieces(text)
        self.i = 0
        self.names: set[str] = set()

    def peek(self) -> _Piece:
        return self.pieces[self.i]

    def take(self, kind: str, text: str | None = None, what: str = "") -> _Piece:
        piece = self.peek()
        if piece.kind != kind or (text is not None and piece.text != text):
            found = "the end" if piece.kind == "end" else repr(piece.text)
            raise RuleError(f"column {piece.at}: expected {what or text or kind}, found {found}")
        self.i += 1
        return piece

    def at(self, kind: str, text: str) -> bool:
        piece = self.peek()
        return piece.kind == kind and piece.text == text

    def condition(self, depth: int) -> Condition:
        terms = [self.conjunct(depth)]
        while self.at("keyword", "or"):
            self.i += 1
            terms.append(self.conjunct(depth))
        return terms[0] if len(terms) == 1 else AnyOf(tuple(terms))

    def conjunct(self, depth: int) -> Condition:
        terms = [self.term(depth)]
        while self.at("keyword", "and"):
            self.i += 1
            terms.append(self.term(depth))
        return terms[0] if len(terms) == 1 else AllOf(tuple(terms))

    def term(self, depth: int) -> Condition:
        if depth >= MAX_DEPTH:
            raise RuleError(f"column {self.peek().at}: nested more than {MAX_DEPTH} deep")
        if self.at("keyword", "not"):
            self.i += 1
            return Not(self.term(depth + 1))
        if self.at("op", "("):
            self.i += 1
            inner = self.condition(depth + 1)
            self.take("op", ")")
            return inner
        name = self.take("name", what="a name, `not` or `(`").text
        self.names.add(name)
        if self.at("keyword", "not") or self.at("keyword", "in"):
            negated = self.at("keyword", "not")
            if negated:
                self.i += 1
            self.take("keyword", "in")
            self.take("op", "[")
            values = [self.literal()]
            while self.at("op", ","):
                self.i += 1
                values.append(self.literal())
            self.take("op", "]")
            return InSet(name, frozenset(values), negated)
        piece = self.take("op", what="a comparison (<, <=, >, >=, ==, !=) or `in`")
        op = _OPERATORS.get(piece.text)
        if op is None:
            raise RuleError(f"column {piece.at}: expected a comparison, found {piece.text!r}")
        value = self.literal()
        if isinstance(value, str) and op not in ("==", "!="):
            raise RuleError(f"column {piece.at}: a text compares with == or != only")
        return Compare(name, op, value)

    def literal(self) -> Value:
        piece = self.peek()
        if piece.kind == "text":
            self.i += 1
            return piece.text[1:-1]
        number = self.take("number", what="a number or a text in quotes")
        value = float(number.text)
        if not math.isfinite(value):
            raise RuleError(f"column {number.at}: {number.text} is not a finite number")
        return value


def parse(text: str) -> tuple[Condition, frozenset[str]]:
    """The condition of `text` and the names it reads (RuleError if it does not parse).

    >>> condition, names = parse('amount > 5000 and customer:count_1h >= 3')
    >>> sorted(names)
    ['amount', 'customer:count_1h']
    >>> condition.holds({"amount": 7200.5, "customer:count_1h": 4})
    True
    >>> condition.holds({"amount": "7200.5", "customer:count_1h": 4})  # a text is no number
    False
    >>> parse('amount >')
    Traceback (most recent call last):
    ...
    filterd.entities.rules.RuleError: column 9: expected a number or a text in quotes, found the end
    """
    parser = _Parser(text)
    if parser.peek().kind == "end":
        raise RuleError("an empty condition")
    condition = parser.condition(0)
    parser.take("end", what="`and`, `or` or the end")
    return condition, frozenset(parser.names)


def feature_names(spec: EntitySpec) -> list[str]:
    """The entity features a rule may name under `spec`, as `entity_facts` gives them.

    >>> feature_names(EntitySpec(keys=("customer",), windows=(3600, 86400)))
    ['customer:count_1h', 'customer:count_1d', 'customer:amount_vs_1d', 'customer:fraud_28d']
    """
    out = []
    for key in spec.keys:
        names = token_names(spec, key)
        out += [*names.counts, *([names.amount_vs] if spec.amount is not None else [])]
        out += [*names.parties, names.labelled]
    return out


def entity_facts(features: Iterable[EntityFeatures], spec: EntitySpec) -> dict[str, float]:
    """The numbers of a message's entity features by the names a rule reads.

    >>> spec = EntitySpec(keys=("customer",), windows=(3600, 86400))
    >>> entity_facts([EntityFeatures("customer", "c5", (7, 20), 5.1, (), 1)], spec)
    {'customer:count_1h': 7, 'customer:count_1d': 20, 'customer:amount_vs_1d': 5.1, \
'customer:fraud_28d': 1}
    """
    out: dict[str, float] = {}
    for f in features:
        names = token_names(spec, f.key)
        out.update(zip(names.counts, f.counts))
        if f.amount_vs is not None:
            out[names.amount_vs] = f.amount_vs
        out.update(zip(names.parties, f.parties))
        out[names.labelled] = f.labelled
    return out


def check_names(names: Iterable[str], spec: EntitySpec) -> None:
    """RuleError if a name of an entity feature (`KEY:…`) is not one of `spec`'s: a misspelt
    feature would never match, silently. An attribute cannot be checked (messages bring their
    own)."""
    known = set(feature_names(spec))
    wrong = sorted(n for n in names if ":" in n and n not in known)
    if wrong:
        offered = ", ".join(feature_names(spec)) or "none (no [entities] keys configured)"
        raise RuleError(f"no entity feature {', '.join(wrong)}; this model's: {offered}")


def check_rule_name(name: str) -> None:
    """RuleError unless `name` is 1 to MAX_NAME_LENGTH lower-case letters, digits, '_', '.' or
    '-', beginning with a letter or a digit (a name is typed on command lines and in URLs)."""
    if len(name) > MAX_NAME_LENGTH or not _NAME.fullmatch(name):
        raise RuleError(
            f"a rule's name is 1 to {MAX_NAME_LENGTH} lower-case letters, digits, '_', '.' or "
            f"'-', beginning with a letter or a digit, not {name[:80]!r}"
        )


@dataclass(frozen=True)
class Rule:
    """A named condition (text, as the analyst wrote it) and the outcome of the messages it
    holds for: block, review or allow, as a list's (`filterd.entities.lists`)."""

    name: str
    when: str
    outcome: ListOutcome
    reason: str | None = None
    created_by: str | None = None
    condition: Condition = field(init=False, repr=False, compare=False)
    names: frozenset[str] = field(init=False, repr=False, compare=False)

    decided_by: ClassVar[Literal["rule"]] = "rule"  # a decision's `decided_by` when it decides

    def __post_init__(self) -> None:
        check_rule_name(self.name)
        condition, names = parse(self.when)
        object.__setattr__(self, "condition", condition)
        object.__setattr__(self, "names", names)

    def describe(self) -> str:
        """The rule as a decision's evidence says it.

        >>> Rule("night-spend", "amount > 5000", "review", "large at night").describe()
        'review rule night-spend: amount > 5000 (large at night)'
        """
        why = f" ({self.reason})" if self.reason else ""
        return f"{self.outcome} rule {self.name}: {self.when}{why}"


class RuleSet:
    """The rules in force; `match` finds the one that decides a message."""

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        self.rules = sorted(rules, key=lambda r: (LIST_OUTCOMES.index(r.outcome), r.name))
        self.names = frozenset(n for r in self.rules for n in r.names)

    def __len__(self) -> int:
        return len(self.rules)

    def match(self, facts: Mapping[str, Any]) -> Rule | None:
        """The most cautious rule whose condition holds for `facts`, else None.

        >>> rules = RuleSet([Rule("big", "amount > 1000", "review"),
        ...                  Rule("bigger", "amount > 5000", "block")])
        >>> [getattr(rules.match({"amount": a}), "name", None) for a in (10, 2000, 9000)]
        [None, 'big', 'bigger']
        """
        return next((r for r in self.rules if r.condition.holds(facts)), None)


def message_facts(
    message: Mapping[str, Any],
    features: Iterable[EntityFeatures],
    spec: EntitySpec,
    names: Iterable[str],
) -> dict[str, Any]:
    """What rules reading `names` are told of a message: its attributes and fields by name
    (`filterd.entities.memory.field_value`) and its entity features (`entity_facts`)."""
    facts: dict[str, Any] = entity_facts(features, spec)
    for name in names:
        if ":" not in name:
            facts[name] = field_value(message, name)
    return facts
