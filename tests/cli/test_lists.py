"""`filterd lists`: entities put on the allow, block and review lists, shown, logged, and taken
off only when confirmed."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from filterd.bayes.model import ModelSpec
from filterd.cli import main
from filterd.store.handle import Store


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["lists", *args])


def test_an_analyst_blocks_snoozes_and_unblocks_an_entity(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store.open(db)
    store.upgrade()
    store.create_model("default", ModelSpec("mnb"))
    added = run(
        "add",
        "customer",
        "c596",
        "--outcome",
        "block",
        "--reason",
        "stolen card",
        "--analyst",
        "erin",
        "--db",
        db,
    )
    assert added.exit_code == 0, added.output
    assert added.stdout == "block list: customer c596 (stolen card)\n"
    snoozed = run("add", "terminal", "t3156", "--outcome", "allow", "--for", "7d", "--db", db)
    assert snoozed.exit_code == 0 and snoozed.stdout.startswith("allow list: terminal t3156 until")
    # `filterd score` decides with the lists as the scorer does, even before a model is ready
    line = json.dumps({"id": "x1", "text": "hi", "attributes": {"customer": "c596"}})
    scored = CliRunner().invoke(main, ["score", "--db", db], input=line + "\n")
    decision = json.loads(scored.stdout)
    assert (decision["label"], decision["decided_by"]) == ("spam", "list"), scored.output
    shown = run("show", "--db", db).stdout.splitlines()
    assert shown[0] == "block list: customer c596 (stolen card)  by erin"
    assert shown[1].startswith("allow list: terminal t3156 until")

    refused = run("remove", "customer", "c596", "--db", db)  # not on a terminal: needs --yes
    assert refused.exit_code == 1
    assert refused.stderr.strip() == (
        "Error: taking block list: customer c596 (stolen card) off its list: add --yes"
    )
    removed = run("remove", "customer", "c596", "--analyst", "dana", "--yes", "--db", db)
    assert removed.exit_code == 0 and removed.stdout.startswith("removed block list: customer")
    assert run("remove", "customer", "c596", "--yes", "--db", db).stderr.strip() == (
        "Error: customer c596 is on no list"
    )
    log = run("log", "--db", db).stdout.splitlines()
    assert [line.split()[2:6] for line in log] == [
        ["removed", "block", "customer", "c596"],
        ["added", "allow", "terminal", "t3156"],
        ["added", "block", "customer", "c596"],
    ]
    assert log[0].endswith('dana  "stolen card"')


def test_mistakes_are_one_line_errors_and_create_nothing(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store.open(db)
    store.upgrade()
    store.create_model("default", ModelSpec("mnb"))
    for args, message in [
        (["--outcome", "block", "--for", "a week"], "Error: --for: "),
        (["--outcome", "blok"], "Invalid value for '--outcome'"),
        (["--outcome", "block", "--model", "nope"], "Error: no model named 'nope'"),
    ]:
        result = run("add", "customer", "c1", *args, "--db", db)
        assert result.exit_code != 0 and message in result.output, result.output
    assert Store.open(db).model("default").list_entries() == []
