"""Declarative rules (`filterd.entities.rules`): what a condition means, what it refuses, and
that any text either parses or says why in one RuleError."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from filterd.entities.memory import EntityFeatures, EntitySpec
from filterd.entities.rules import (
    MAX_DEPTH,
    MAX_RULE_LENGTH,
    Rule,
    RuleError,
    RuleSet,
    check_names,
    entity_facts,
    message_facts,
    parse,
)

SPEC = EntitySpec(keys=("customer", "terminal"), windows=(3600, 86400))
FACTS = {
    "amount": 7200.5,
    "country": "NG",
    "geo.city": "Lagos",
    "flag": True,
    "customer:count_1h": 4,
    "customer:amount_vs_1d": 5.1,
}


@pytest.mark.parametrize(
    ("condition", "holds"),
    [
        ("amount > 5000", True),
        ("amount >= 7200.5 and amount <= 7200.5", True),
        ("amount < 1e3", False),
        ("amount != 7200.5", False),
        ('country == "NG"', True),
        ("country == 'NG'", True),
        ('country != "NG"', False),
        ('country in ["NG", "RU"]', True),
        ('country not in ["NG", "RU"]', False),
        ("customer:count_1h in [1, 2, 4]", True),
        ('geo.city == "Lagos" and customer:amount_vs_1d > 5', True),
        ("amount > 9000 or customer:count_1h >= 3", True),
        ("amount > 9000 or customer:count_1h >= 5", False),
        # `and` binds tighter than `or`
        ("amount > 9000 and amount > 1 or amount > 1", True),
        ("amount > 9000 and (amount > 1 or amount > 1)", False),
        ("not amount > 9000", True),
        ("not (amount > 1 and country == 'NG')", False),
        ("not not amount > 1", True),
        # a missing value, or one of another kind, makes any comparison false
        ("missing > 1", False),
        ("missing != 1", False),
        ("not missing > 1", True),
        ('amount == "7200.5"', False),
        ("country == 1", False),
        ('missing not in ["x"]', False),
        ("flag == 1", False),  # true is not the number 1
        ("-amount > 1", None),
    ],
)
def test_a_condition_holds_as_its_text_says(condition: str, holds: bool | None) -> None:
    if holds is None:
        with pytest.raises(RuleError):
            parse(condition)
        return
    parsed, _ = parse(condition)
    assert parsed.holds(FACTS) is holds


@pytest.mark.parametrize(
    ("condition", "error"),
    [
        ("", "an empty condition"),
        ("amount >", "column 9: expected a number or a text in quotes, found the end"),
        ("amount > 5 amount", "column 12: expected `and`, `or` or the end, found 'amount'"),
        ("amount = 5", "column 8: unexpected '='"),
        ('country < "NG"', "column 9: a text compares with == or != only"),
        ("amount > 1e999", "column 10: 1e999 is not a finite number"),
        ("(amount > 1", "column 12: expected ), found the end"),
        ("amount in []", "column 12: expected a number or a text in quotes, found ']'"),
        ("and > 1", "column 1: expected a name, `not` or `(`, found 'and'"),
        ('country == "NG', "column 12: unexpected '\"'"),
        ("amount ( 1", "column 8: expected a comparison, found '('"),
    ],
)
def test_a_condition_that_does_not_parse_says_where_and_why(condition: str, error: str) -> None:
    with pytest.raises(RuleError) as raised:
        parse(condition)
    assert str(raised.value) == error


def test_nesting_and_length_are_bounded() -> None:
    deep = "(" * MAX_DEPTH + "amount > 1" + ")" * MAX_DEPTH
    with pytest.raises(RuleError, match=f"nested more than {MAX_DEPTH} deep"):
        parse(deep)
    shallow = "(" * (MAX_DEPTH - 1) + "amount > 1" + ")" * (MAX_DEPTH - 1)
    assert parse(shallow)[0].holds({"amount": 2})
    with pytest.raises(RuleError, match="nested"):
        parse("not " * (MAX_DEPTH + 1) + "amount > 1")
    with pytest.raises(RuleError, match=f"at most {MAX_RULE_LENGTH} characters"):
        parse("amount > 1 or " * 200 + "amount > 1")
    # as long as allowed: a flat chain parses, without recursion
    chain = " or ".join(["amount > 1"] * ((MAX_RULE_LENGTH - 10) // 14 + 1))
    assert len(chain) <= MAX_RULE_LENGTH and parse(chain)[0].holds({"amount": 2})


@given(st.text(max_size=300))
def test_any_text_parses_or_raises_one_rule_error(text: str) -> None:
    try:
        condition, names = parse(text)
    except RuleError:
        return
    assert isinstance(condition.holds(FACTS), bool) and all(isinstance(n, str) for n in names)


@given(
    st.lists(
        st.sampled_from(["(", ")", "not", "and", "or", "amount", ">", "1", "'x'", "in", "[", "]"]),
        max_size=80,
    )
)
def test_any_sequence_of_the_grammars_pieces_parses_or_raises_one_rule_error(
    pieces: list[str],
) -> None:
    try:
        condition, _ = parse(" ".join(pieces))
    except RuleError:
        return
    assert isinstance(condition.holds({"amount": 2, "x": "x"}), bool)


def test_entity_features_are_named_as_their_tokens_and_checked() -> None:
    spec = EntitySpec(
        keys=("customer",), windows=(3600,), counterparties=(("customer", "terminal"),)
    )
    features = [EntityFeatures("customer", "c1", (3,), 0.0, (2,), 1)]
    assert entity_facts(features, spec) == {
        "customer:count_1h": 3,
        "customer:amount_vs_1h": 0.0,  # no amount in the entity's history yet
        "customer:terminals_1h": 2,
        "customer:fraud_28d": 1,
    }
    check_names({"amount", "customer:count_1h", "customer:terminals_1h"}, spec)
    with pytest.raises(RuleError, match="no entity feature customer:count_2h; this model's: "):
        check_names({"customer:count_2h"}, spec)
    with pytest.raises(RuleError, match=r"none \(no \[entities\] keys configured\)"):
        check_names({"customer:count_1h"}, EntitySpec())


def test_message_facts_read_attributes_fields_and_features() -> None:
    message = {"attributes": {"amount": 12, "geo": {"country": "NG"}}, "sender": "a@b"}
    features = [EntityFeatures("customer", "c1", (7, 9), 2.0, (), 0)]
    facts = message_facts(message, features, SPEC, {"amount", "geo.country", "sender", "nope"})
    assert facts["amount"] == 12 and facts["geo.country"] == "NG" and facts["sender"] == "a@b"
    assert facts["nope"] is None and facts["customer:count_1h"] == 7


def test_the_most_cautious_matching_rule_decides_then_the_first_by_name() -> None:
    rules = RuleSet(
        [
            Rule("z-allow", "amount > 0", "allow"),
            Rule("b-review", "amount > 100", "review"),
            Rule("a-review", "amount > 100", "review"),
            Rule("block", "amount > 1000", "block"),
        ]
    )
    assert [getattr(rules.match({"amount": a}), "name", None) for a in (-1, 5, 500, 5000)] == [
        None,
        "z-allow",
        "a-review",
        "block",
    ]


@pytest.mark.parametrize("name", ["", "Big", "-x", "a b", "x" * 65, "ünï"])
def test_a_rules_name_is_short_lower_case_and_plain(name: str) -> None:
    with pytest.raises(RuleError, match="a rule's name is 1 to 64"):
        Rule(name, "amount > 1", "block")
