"""`filterd feedback log` through click's runner, on a SQLite file: the filters, both output
forms, and its errors as one line."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from filterd.bayes.model import ModelSpec
from filterd.cli import main
from filterd.cli.feedback import as_json_object, render
from filterd.store.handle import Store
from filterd.store.labels import Event, LabelledTokens

NOW = datetime.now(UTC).replace(microsecond=0)


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["feedback", "log", *args], env=env)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store whose model 'default' has five label events, three days apart (the last today)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'store.db'}"
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"), seed=0)
    batches = [
        [LabelledTokens("m1", "spam", ["win"], analyst="alice", comment="obvious lure")],
        [LabelledTokens("m2", "ham", ["hello"], analyst="bob")],
        [LabelledTokens("m1", "ham", ["win"], analyst="bob", comment="a newsletter\n\x1b[31mred")],
        [LabelledTokens("m1", "spam", ["win"], "auto")],
        [
            LabelledTokens(
                "m3",
                "spam",
                ["cash"],
                analyst="alice",
                kafka_topic="filterd.feedback",
                kafka_partition=1,
                kafka_offset=7,
            )
        ],
    ]
    for days_ago, batch in zip(range(12, -1, -3), batches):
        model.learn(batch, holdout_fraction=0, now=NOW - timedelta(days=days_ago))
    store.close()
    return url


def lines(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_one_readable_line_per_event_newest_first(db: str) -> None:
    shown = lines(run("--db", db))
    assert [line.split()[2] for line in shown] == ["m3", "m1", "m1", "m2", "m1"]
    stamp = f"{NOW:%Y-%m-%d %H:%M:%S}Z"
    assert shown[0].split() == [
        *stamp.split(),
        "m3",
        "–",
        "→",
        "spam",
        "learned",
        "analyst",
        "alice",
    ]
    assert shown[1].split()[3:] == ["ham", "→", "spam", "kept_analyst_label", "auto"]
    # comments are quoted, and what a terminal would obey is escaped
    assert shown[2].endswith('analyst bob    "a newsletter\\n\\u001b[31mred"')
    assert shown[4].endswith('"obvious lure"')
    assert len({line.index("→") for line in shown}) == 1  # aligned columns


def test_filters_and_limit(db: str) -> None:
    def ids(*args: str) -> list[str]:
        return [line.split()[2] for line in lines(run("--db", db, *args))]

    assert ids("--message", "m1") == ["m1"] * 3
    assert ids("--analyst", "bob") == ["m1", "m2"]
    assert ids("--since", "4d") == ["m3", "m1"]
    assert ids("--since", f"{(NOW - timedelta(days=7)).date()}") == ["m3", "m1", "m1"]
    assert ids("--since", (NOW - timedelta(days=4)).isoformat()) == ["m3", "m1"]
    assert ids("--limit", "2") == ["m3", "m1"]
    assert len(ids("--limit", "0")) == 5  # 0: every event
    assert ids("--analyst", "nobody") == []


def test_json_lines_carry_every_field(db: str) -> None:
    events = [json.loads(line) for line in lines(run("--db", db, "--json", "--analyst", "alice"))]
    assert [e["message_id"] for e in events] == ["m3", "m1"]
    assert events[0] | {"applied_at": None, "received_at": None} == {
        "message_id": "m3",
        "label": "spam",
        "outcome": "learned",
        "stage": None,
        "previous_label": None,
        "source": "analyst",
        "analyst": "alice",
        "comment": None,
        "kafka_topic": "filterd.feedback",
        "kafka_partition": 1,
        "kafka_offset": 7,
        "applied_at": None,
        "received_at": None,
    }
    assert datetime.fromisoformat(events[0]["applied_at"]) == NOW


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "nope"], "Error: no model named 'nope' in the store"),
        (["--since", "yesterday"], "Error: --since 'yesterday' is neither a duration"),
        (["--since", "0d"], "Error: --since '0d' is neither a duration"),
        (["--limit", "-1"], "Invalid value for '--limit'"),
    ],
)
def test_mistakes_are_one_line_errors(db: str, args: list[str], message: str) -> None:
    result = run("--db", db, *args)
    assert result.exit_code in (1, 2) and "Traceback" not in result.output
    assert message in result.stderr.splitlines()[-1]
    if "Invalid value" not in message:  # click's own usage errors come with the usage
        assert len(result.stderr.splitlines()) == 1


def test_a_store_without_the_schema_or_with_an_older_one_is_one_line(tmp_path: Path) -> None:
    empty, old = f"sqlite:///{tmp_path / 'empty.db'}", f"sqlite:///{tmp_path / 'old.db'}"
    (tmp_path / "empty.db").touch()  # an empty file is an empty SQLite database
    older = Store.open(old)
    older.upgrade("0003")  # before the audit trail
    older.create_model("default", ModelSpec("mnb"))
    for url in (empty, old):
        result = run("--db", url)
        assert result.exit_code == 1
        assert result.stderr.splitlines() == [
            "Error: the database has no filterd schema, or an older one: run `filterd db upgrade`"
        ]


def test_a_labels_stage_is_shown_beside_its_outcome() -> None:
    early = Event("tx-9", "fraud", "learned", applied_at=NOW, stage="early")
    final = Event("tx-9", "legit", "relabelled", "fraud", applied_at=NOW, stage="final")
    first, second = render([early, final])
    assert "learned (early)" in first and "relabelled (final)" in second
    assert as_json_object(final)["stage"] == "final"


def forget(db: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["feedback", "forget", "--db", db, *args])


@pytest.fixture
def poisoned(tmp_path: Path) -> str:
    """A store whose model learned two labels from mallory and one from alice."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"), seed=0)
    model.learn(
        [
            LabelledTokens("m1", "ham", ["win", "cash"], analyst="mallory"),
            LabelledTokens("m2", "ham", ["prize"], analyst="mallory"),
            LabelledTokens("m3", "spam", ["cash"], analyst="alice"),
            LabelledTokens("m4", "spam", ["from:evil.example", "cash"], analyst="alice"),
        ],
        holdout_fraction=0,
    )
    store.close()
    return url


def test_forget_asks_first_then_unlearns_and_logs(poisoned: str) -> None:
    assert lines(forget(poisoned, "--analyst", "mallory", "--dry-run")) == [
        "would forget 2 learned and 0 held-out labels of model 'default'"
    ]
    refused = forget(poisoned, "--analyst", "mallory")  # no terminal, no --yes
    assert refused.exit_code != 0 and "add --yes" in refused.output
    done = forget(poisoned, "--analyst", "mallory", "--operator", "oscar", "--yes")
    assert lines(done) == ["forgot 2 learned and 0 held-out labels"]
    store = Store.open(poisoned)
    model = store.model("default")
    assert set(model.load()[0].canonical()["ham"][1]) == set()  # no ham token counts left
    events = list(model.events(analyst="oscar"))
    assert sorted(e.message_id for e in events) == ["m1", "m2"]
    assert {e.outcome for e in events} == {"forgotten"}
    store.close()
    assert lines(forget(poisoned, "--analyst", "mallory", "--yes")) == ["nothing to forget"]


def test_forget_finds_a_senders_labels_and_refuses_what_is_no_sender(poisoned: str) -> None:
    assert lines(forget(poisoned, "--sender", "Evil.example", "--dry-run")) == [
        "would forget 1 learned and 0 held-out labels of model 'default'"
    ]
    bad = forget(poisoned, "--sender", "mallory@", "--yes")
    assert bad.exit_code == 2 and "--sender: not an address, a domain or a sender id" in bad.output


def test_forget_needs_a_selector_and_a_known_model(poisoned: str) -> None:
    bare = forget(poisoned, "--yes")
    assert bare.exit_code == 2 and "say which labels to forget" in bare.output
    unknown = forget(poisoned, "--model", "nope", "--source", "auto", "--yes")
    assert unknown.exit_code != 0 and "nope" in unknown.output
    late = forget(poisoned, "--until", "yesterday", "--yes")
    assert late.exit_code == 2 and "--until 'yesterday'" in late.output
