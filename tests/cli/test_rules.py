"""`filterd rules`: rules added (their condition and its entity features checked first), shown,
logged, decided with by `filterd score`, and removed only when confirmed."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from filterd.bayes.model import ModelSpec
from filterd.cli import main
from filterd.store.handle import Store
from tests.store.test_rules import store_unparsed_rule


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["rules", *args])


def store_of(tmp_path: Path) -> str:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store.open(db)
    store.upgrade()
    store.create_model("default", ModelSpec("mnb"))
    return db


def test_an_analyst_adds_shows_replaces_and_removes_a_rule(tmp_path: Path) -> None:
    db = store_of(tmp_path)
    config = tmp_path / "filterd.toml"
    config.write_text('[entities]\nkeys = ["customer"]\n')
    added = run(
        *("add", "huge", "--when", "amount >= 5000 and customer:count_1h >= 1"),
        *("--outcome", "block", "--reason", "over the limit", "--analyst", "erin"),
        *("--config", str(config), "--db", db),
    )
    assert added.exit_code == 0, added.output
    assert added.stdout == (
        "block rule huge: amount >= 5000 and customer:count_1h >= 1 (over the limit)\n"
    )
    tiny = run("add", "tiny", "--when", "amount < 1", "--outcome", "allow", "--db", db)
    assert tiny.exit_code == 0, tiny.output
    # `filterd score` decides with the rules as the scorer does, even before a model is ready
    line = json.dumps({"id": "x1", "text": "hi", "attributes": {"amount": 0.5}})
    scored = CliRunner().invoke(main, ["score", "--db", db], input=line + "\n")
    decision = json.loads(scored.stdout)
    assert (decision["decided_by"], decision["evidence"][0]) == (
        "rule",
        "allow rule tiny: amount < 1",
    ), scored.output
    assert run("show", "--db", db).stdout.splitlines() == [
        "block rule huge: amount >= 5000 and customer:count_1h >= 1 (over the limit)  by erin",
        "allow rule tiny: amount < 1",
    ]
    replaced = run("add", "tiny", "--when", "amount < 0.5", "--outcome", "allow", "--db", db)
    assert replaced.exit_code == 0 and "amount < 0.5" in run("show", "--db", db).stdout

    refused = run("remove", "huge", "--db", db)  # not on a terminal: needs --yes
    assert (refused.exit_code, refused.stderr.strip()) == (
        1,
        "Error: removing the rule huge: add --yes",
    )
    removed = run("remove", "huge", "--analyst", "dana", "--yes", "--db", db)
    assert removed.exit_code == 0, removed.output
    assert removed.stdout == "removed block rule huge: amount >= 5000 and customer:count_1h >= 1\n"
    gone = run("remove", "huge", "--yes", "--db", db)
    assert (gone.exit_code, gone.stderr.strip()) == (1, "Error: there is no rule huge")
    log = run("log", "--db", db).stdout.splitlines()
    assert [entry.split("  ", 1)[1].split(":")[0] for entry in log] == [
        "removed  block huge",
        "added    allow tiny",
        "added    allow tiny",
        "added    block huge",
    ]
    assert log[0].endswith('  dana  "over the limit"') and log[-1].endswith(
        '  erin  "over the limit"'
    )


def test_a_rule_that_does_not_parse_or_names_no_feature_creates_nothing(tmp_path: Path) -> None:
    db = store_of(tmp_path)
    cases = [
        (
            ["bad", "--when", "amount >"],
            "--when: column 9: expected a number or a text in quotes, found the end",
        ),
        (
            ["Bad Name", "--when", "amount > 1"],
            "NAME: a rule's name is 1 to 64 lower-case "
            "letters, digits, '_', '.' or '-', beginning with a letter or a digit, not 'Bad Name'",
        ),
        (
            ["burst", "--when", "customer:count_1h > 3"],
            "--when: no entity feature "
            "customer:count_1h; this model's: none (no [entities] keys configured)",
        ),
    ]
    for args, error in cases:
        result = run("add", *args, "--outcome", "review", "--db", db)
        assert (result.exit_code, result.stderr.strip()) == (2, f"Error: {error}"), args
    assert run("show", "--db", db).stdout == "" and run("log", "--db", db).stdout == ""


def test_a_stored_rule_that_no_longer_parses_is_named_by_show_and_can_be_removed(
    tmp_path: Path,
) -> None:
    db = store_of(tmp_path)
    model = Store.open(db).model("default")
    store_unparsed_rule(model)
    shown = run("show", "--db", db)
    assert shown.exit_code == 0 and shown.stdout == ""
    assert shown.stderr == (
        "rule odd does not parse (column 8: unexpected '~'): the scorers leave it out\n"
    )
    removed = run("remove", "odd", "--yes", "--db", db)
    assert removed.exit_code == 0, removed.output
    assert removed.stdout == "removed block rule odd: amount ~= 1\n"
