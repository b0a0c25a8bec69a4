import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
import structlog
from click.testing import CliRunner, Result

from filterd.cli import main
from filterd.cli.corpus_files import write_corpus
from filterd.cli.daemon import loaded_model
from filterd.daemon.settings import load_settings
from filterd.evaluation.synth import SynthConfig, generate
from filterd.service.records import Message
from filterd.store.database import head as database_head


def run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, input=input)


def new_store(tmp_path: Path) -> str:
    """The URL of a migrated SQLite store with an empty model 'default'."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert run("db", "upgrade", "--db", db).exit_code == 0
    assert run("model", "create", "default", "--db", db).exit_code == 0
    return db


def learned_store(tmp_path: Path, messages: int) -> str:
    """The URL of a migrated SQLite store that learned a synthetic corpus into model 'default'."""
    db = new_store(tmp_path)
    corpus = tmp_path / "c.jsonl"
    write_corpus(generate(SynthConfig(n_messages=messages)), corpus)
    assert run("learn", str(corpus), "--db", db).exit_code == 0
    return db


def test_upgrade_learn_twice_stats_export_import(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    corpus = tmp_path / "c.jsonl"
    write_corpus(generate(SynthConfig(n_messages=300)), corpus)
    assert "not migrated" in run("db", "current", "--db", db).stdout
    assert run("db", "upgrade", "--db", db).exit_code == 0
    assert run("db", "current", "--db", db).stdout.strip() == database_head()
    assert run("model", "create", "default", "--db", db).exit_code == 0
    first = run("learn", str(corpus), "--db", db)
    assert first.exit_code == 0, first.output
    second = run("learn", str(corpus), "--db", db)
    assert "learned 0" in second.stdout and "duplicates 300" in second.stdout  # idempotent
    report = json.loads(run("model", "stats", "--db", db, "--json").stdout)
    assert sum(c["docs"] for c in report["classes"]) + report["holdout"] == 300
    assert report["ready"] is True and report["threshold"] is None
    export = tmp_path / "m.jsonl.gz"
    assert run("model", "export", "--db", db, "-o", str(export)).exit_code == 0
    assert run("model", "import", str(export), "--db", db, "--as", "copy").exit_code == 0
    copy = json.loads(run("model", "stats", "--db", db, "--model", "copy", "--json").stdout)
    assert copy["classes"] == report["classes"]


def test_the_url_can_come_from_the_environment(tmp_path: Path) -> None:
    env = {"FILTERD_DATABASE_URL": f"sqlite:///{tmp_path / 'env.db'}"}
    assert run("db", "upgrade", env=env).exit_code == 0
    assert run("db", "current", env=env).stdout.strip() == database_head()


def test_store_errors_are_one_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    result = run("model", "stats", "--db", db)
    assert (
        result.exit_code == 1
        and "filterd db upgrade" in result.output
        and "Traceback" not in result.output
    )
    run("db", "upgrade", "--db", db)
    assert "no model named 'nope'" in run("model", "stats", "--db", db, "--model", "nope").output
    assert "bad database URL" in run("db", "current", "--db", "not a url").output
    assert run("model", "create", "x", "--db", db, "--variant", "svm").exit_code == 2


def test_prune_from_the_command_line(tmp_path: Path) -> None:
    db = learned_store(tmp_path, 200)
    before = json.loads(run("model", "stats", "--db", db, "--json").stdout)["distinct_tokens"]
    dry = run(
        "db",
        "prune",
        "--db",
        db,
        "--unseen-days",
        "0",
        "--max-count",
        "1",
        "--dry-run",
        "--pause",
        "0",
    )
    assert dry.exit_code == 0 and dry.stdout.startswith(
        "would expire 0 tokens"
    )  # everything was seen today
    assert (
        json.loads(run("model", "stats", "--db", db, "--json").stdout)["distinct_tokens"] == before
    )
    assert run("db", "prune", "--db", db, "--unseen-days", "-1", "--max-count", "1").exit_code == 2


def test_a_relative_sqlite_path_is_shown_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from filterd.cli import main

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["db", "upgrade", "--db", "sqlite:///stores/filterd.db"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"sqlite:///{tmp_path / 'stores' / 'filterd.db'}: at revision")
    assert (tmp_path / "stores" / "filterd.db").exists()


def test_model_show_then_delete_with_its_labels_exported_first(tmp_path: Path) -> None:
    db = learned_store(tmp_path, 200)
    shown = run("model", "show", "default", "--db", db)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0] == "model 'default'" and [line.split()[0] for line in lines[1:]] == [
        "variant",
        "parameters",
        "selection",
        "created",
        "documents",
        "tokens",
        "threshold",
    ]
    report = json.loads(run("model", "show", "default", "--db", db, "--json").stdout)
    assert (report["variant"], report["params"]) == ("fusion", {})
    assert report["selection"] == "none" and report["threshold"] is None
    stats = json.loads(run("model", "stats", "--db", db, "--json").stdout)
    assert report["documents"] == {c["label"]: c["docs"] for c in stats["classes"]}
    assert f"documents   ham {report['documents']['ham']:,}" in shown.stdout

    # labels are kept: without an export the deletion is refused, with one it goes
    refused = run("model", "delete", "default", "--yes", "--db", db)
    assert refused.exit_code == 1 and "--export FILE" in refused.stderr
    archive = tmp_path / "default.jsonl.gz"
    deleted = run("model", "delete", "default", "--yes", "--export", str(archive), "--db", db)
    assert deleted.exit_code == 0, deleted.output
    assert (
        deleted.stdout.startswith("deleted model 'default' (")
        and "feedback_ledger" in deleted.stdout
    )
    assert "no model named 'default'" in run("model", "show", "default", "--db", db).stderr
    assert run("model", "import", str(archive), "--db", db).exit_code == 0
    assert json.loads(run("model", "show", "default", "--db", db, "--json").stdout) == report

    # a model without labels needs --yes only
    run("model", "create", "empty", "--db", db, "--variant", "mnb")
    assert run("model", "delete", "empty", "--yes", "--db", db).stdout == "deleted model 'empty'\n"


def test_prune_deletes_label_events_past_the_configured_retention(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from filterd.store.handle import Store
    from filterd.store.labels import LabelledTokens

    db = learned_store(tmp_path, 50)
    long_ago = datetime.now(UTC) - timedelta(days=400)
    model = Store.open(db).model("default")
    model.learn([LabelledTokens("old", "spam", ["x"])], now=long_ago)

    def prune(*args: str, env: dict[str, str] | None = None) -> str:
        result = run(
            "db",
            "prune",
            "--db",
            db,
            "--unseen-days",
            "9999",
            "--max-count",
            "0",
            "--pause",
            "0",
            *args,
            env=env,
        )
        assert result.exit_code == 0, result.output
        return result.stdout.split("; ")[1].strip()

    assert prune("--dry-run") == "would delete 1 label events (older than 365 days)"
    assert (
        prune("--dry-run", "--audit-days", "500")
        == "would delete 0 label events (older than 500 days)"
    )
    kept = prune("--dry-run", env={"FILTERD_FEEDBACK_AUDIT_RETENTION_DAYS": "0"})
    assert kept == "would delete 0 label events (none: kept for ever)"
    config = tmp_path / "filterd.toml"
    config.write_text("[feedback]\naudit_retention_days = 30\n")
    assert prune("--config", str(config)) == "deleted 1 label events (older than 30 days)"
    assert prune() == "deleted 0 label events (older than 365 days)"
    bad = run(
        "db",
        "prune",
        "--db",
        db,
        "--unseen-days",
        "1",
        "--max-count",
        "0",
        env={"FILTERD_FEEDBACK_AUDIT_RETENTION_DAYS": "-1"},
    )
    assert bad.exit_code == 1 and bad.stderr.splitlines() == [
        "Error: invalid configuration: feedback.audit_retention_days: must not be negative "
        "(0: keep every event)"
    ]


def test_prune_deletes_review_items_and_decided_messages_past_their_retention(
    tmp_path: Path,
) -> None:
    from datetime import UTC, datetime, timedelta

    from filterd.entities.memory import EntityEvent
    from filterd.store.entities import DecidedEvent, EntityLabelled
    from filterd.store.handle import Store
    from tests.queued import queued

    db = learned_store(tmp_path, 50)
    model = Store.open(db).model("default")
    now = datetime.now(UTC)
    item = queued("q", 0.1, 0.0, ["a"])
    with model.transaction() as writing:
        writing.record_decided([("old", 0, 1)], now - timedelta(days=4))
        writing.record_decided([("new", 0, 2)], now - timedelta(days=2))
        writing.queue_review([item], now - timedelta(days=20))
        # the entity memory's, by the stream's time: a month and a day before the newest event
        month = 31 * 86400.0
        writing.record_entity_events(
            [
                DecidedEvent("m1", EntityEvent("customer", "c1", 0.0, None, None)),
                DecidedEvent("m2", EntityEvent("customer", "c1", month, None, None)),
            ],
            now,
        )
        writing.record_entity_labels(
            [EntityLabelled(1, "customer", "c1", 0.0), EntityLabelled(2, "customer", "c1", month)],
            [],
            now,
        )

    def prune(*args: str) -> list[str]:
        result = run(
            "db",
            "prune",
            "--db",
            db,
            "--unseen-days",
            "9999",
            "--max-count",
            "0",
            "--pause",
            "0",
            *args,
        )
        assert result.exit_code == 0, result.output
        return result.stdout.strip().split("; ")[2:]

    assert prune("--dry-run") == [
        "would delete 1 review items (older than 14 days)",
        "would delete 1 decided messages (older than feedback.resolve_ttl = 3d)",
        "would delete 1 entity events and 1 entity labels (past the [entities] windows)",
    ]
    assert prune("--review-days", "30") == [
        "deleted 0 review items (older than 30 days)",
        "deleted 1 decided messages (older than feedback.resolve_ttl = 3d)",
        "deleted 1 entity events and 1 entity labels (past the [entities] windows)",
    ]
    assert [e.at for _, e in model.entity_events_since(0.0)] == [month]
    assert [x.at for x in model.entity_labels_since(0.0)] == [month]

    assert model.where_decided(["old", "new"]) == {"new": (0, 2)}
    assert prune()[0] == "deleted 1 review items (older than 14 days)"


def test_learn_records_who_gave_the_labels(tmp_path: Path) -> None:
    db = new_store(tmp_path)
    corpus = tmp_path / "c.jsonl"
    write_corpus(generate(SynthConfig(n_messages=40)), corpus)
    assert run("learn", str(corpus), "--db", db, "--analyst", "import-2026").exit_code == 0
    assert run("learn", str(corpus), "--db", db).exit_code == 0
    events = [
        json.loads(line)
        for line in run("feedback", "log", "--db", db, "--json", "--limit", "0").stdout.splitlines()
    ]
    assert len(events) == 80 and {e["kafka_topic"] for e in events} == {None}
    assert {(e["analyst"], e["outcome"]) for e in events[:40]} == {(None, "duplicate")}
    assert {e["analyst"] for e in events[40:]} == {"import-2026"}
    assert {e["outcome"] for e in events[40:]} == {"learned", "held_out"}
    too_long = run("learn", str(corpus), "--db", db, "--analyst", "x" * 201)
    assert too_long.exit_code == 2 and too_long.stderr.splitlines() == [
        "Error: --analyst: at most 200 characters, not 201"
    ]


def test_model_stats_shows_what_the_thresholds_delivered(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from filterd.evaluation.calibration import Threshold
    from filterd.store.drift import Scored
    from filterd.store.handle import Store

    db = learned_store(tmp_path, 50)
    model = Store.open(db).model("default")
    t0 = datetime.now(UTC) - timedelta(hours=1)

    def scored(at: datetime, prefix: str, pairs: list[tuple[str, float]]) -> None:
        items = [Scored(f"{prefix}{i}", label, score, 1) for i, (label, score) in enumerate(pairs)]
        model.record_scores("spam", items, keep=5000, now=at)

    def threshold(at: datetime, tau: float, source: str, level: float | None) -> None:
        figures = Threshold(tau, 0.99, 1.0, 1.0, 1.0, 100, 100, False, None)
        model.write_threshold(
            "spam",
            figures,
            0.99,
            None,
            None,
            "test",
            now=at,
            source=source,
            level=level,
        )

    scored(t0 - timedelta(hours=1), "a", [("spam", 2.0)] * 5 + [("ham", -2.0)] * 5)  # no τ yet
    threshold(t0, 0.0, "holdout", None)
    # at τ = 0: 2 of 20 spam missed, 1 of 30 ham flagged
    scored(
        t0 + timedelta(minutes=1),
        "b",
        [("spam", 1.0)] * 18 + [("spam", -0.5)] * 2 + [("ham", -2.0)] * 29 + [("ham", 0.5)],
    )
    threshold(t0 + timedelta(minutes=2), 0.8, "adaptive", 0.008)
    # at τ = 0.8: 1 of 10 spam missed (0.5 would have been caught at τ = 0)
    scored(
        t0 + timedelta(minutes=3), "c", [("spam", 1.0)] * 9 + [("spam", 0.5)] + [("ham", -2.0)] * 10
    )

    result = run("model", "stats", "--db", db)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert (
        "  threshold: version 2, τ = 0.8 for 'spam' at recall ≥ 0.99 (adaptive, miss level 0.008)"
        in lines
    )
    assert lines[-3].startswith("  drift, last 80 feedback scored before learning (35 'spam')")
    assert lines[-2] == (
        "  delivered, last 70 feedback at the τ then in force: recall 0.9000 of 30 spam "
        "(3 missed), specificity 0.9750 of 40 (target recall 0.99)"
    )
    since = f"{t0 + timedelta(minutes=2):%Y-%m-%d %H:%M:%S} UTC"
    assert lines[-1] == (
        f"  τ in force since {since}: recall 0.9000 of 10 spam (1 missed), specificity 1.0000 of 10"
    )
    report = json.loads(run("model", "stats", "--db", db, "--json").stdout)
    assert (report["threshold"]["source"], report["threshold"]["level"]) == ("adaptive", 0.008)
    drift = report["drift"]
    assert drift["delivered"] == {
        "n_pos": 30,
        "caught": 27,
        "n_neg": 40,
        "passed": 39,
        "recall": 0.9,
        "specificity": 0.975,
    }
    assert drift["in_force"] == {
        "n_pos": 10,
        "caught": 9,
        "n_neg": 10,
        "passed": 10,
        "recall": 0.9,
        "specificity": 1.0,
    }

    threshold(datetime.now(UTC), 0.5, "prequential", None)  # nothing scored since
    lines = run("model", "stats", "--db", db).stdout.splitlines()
    assert lines[-1].endswith(": no feedback scored since")
    assert "at recall ≥ 0.99 (prequential)" in run("model", "stats", "--db", db).stdout


# --- an operator's mistakes -----------------------------------------------------------------------


def with_labels(path: Path, changes: dict[int, str]) -> None:
    """Rewrite the corpus at `path` with the labels of `changes` ({line number: label})."""
    lines = path.read_text().splitlines()
    for number, label in changes.items():
        record = json.loads(lines[number - 1])
        lines[number - 1] = json.dumps({**record, "label": label})
    path.write_text("\n".join(lines) + "\n")


def test_learn_refuses_labels_outside_model_labels_and_learns_nothing(tmp_path: Path) -> None:
    db = new_store(tmp_path)
    corpus = tmp_path / "c.jsonl"
    write_corpus(generate(SynthConfig(n_messages=100)), corpus)
    with_labels(
        corpus,
        {
            5: "phish",
            9: "phish",
            12: "Spam",
            20: "phish",
            30: "phish",
            31: "phish",
            40: "phish",
            77: "phish",
        },
    )
    refused = run("learn", str(corpus), "--db", db)
    assert refused.exit_code == 1
    assert refused.stderr.splitlines() == [
        f"Error: {corpus}: 8 of 100 records have a label outside model.labels (ham, spam): "
        "'phish' × 7 (lines 5, 9, 20, 30, 31, …), 'Spam' × 1 (line 12); nothing learned "
        "(correct them, or give --skip-other-labels to learn the others)"
    ]
    report = json.loads(run("model", "stats", "--db", db, "--json").stdout)
    assert (report["classes"], report["ledger"], report["holdout"]) == ([], 0, 0)

    skipped = run("learn", str(corpus), "--db", db, "--skip-other-labels")
    assert skipped.exit_code == 0, skipped.output
    assert skipped.stderr.startswith(f"skipped {corpus}: 8 of 100 records have a label outside")
    report = json.loads(run("model", "stats", "--db", db, "--json").stdout)
    assert [c["label"] for c in report["classes"]] == ["ham", "spam"]  # no third class
    assert report["ledger"] + report["holdout"] == 92

    # model.labels comes from the configuration, as for the daemon's feedback
    wider = tmp_path / "filterd.toml"
    wider.write_text('[model]\nlabels = ["ham", "spam", "phish"]\n')
    assert (
        "'Spam' × 1 (line 12)"
        in run("learn", str(corpus), "--db", db, "--config", str(wider)).stderr
    )


def test_a_downgrade_that_drops_data_says_what_and_needs_yes(tmp_path: Path) -> None:
    db = learned_store(tmp_path, 100)
    refused = run("db", "downgrade", "base", "--db", db)
    assert refused.exit_code == 1
    (line,) = refused.stderr.splitlines()
    assert line.startswith(
        f"Error: downgrading {db} from revision {database_head()} to base "
        "drops the tables rule_changes (0 rows), rules (0 rows), list_changes (0 rows), "
        "list_entries (0 rows), entity_labels (0 rows), entity_events (0 rows), "
        "undecodable_batches (0 rows), review_items (0 rows), "
    )
    assert "feedback_ledger (" in line and "models (1 row)" in line
    assert line.endswith(
        "100 labels among them, which the store keeps nowhere else "
        "(`filterd model export --model NAME -o FILE` keeps a model's): add --yes"
    )
    assert run("db", "current", "--db", db).stdout.strip() == database_head()  # nothing dropped
    assert run("model", "stats", "--db", db).exit_code == 0

    columns = run("db", "downgrade", "0005", "--db", db)
    assert columns.exit_code == 1 and columns.stderr.splitlines() == [
        f"Error: downgrading {db} from revision {database_head()} to 0005 drops the tables "
        "rule_changes (0 rows), rules (0 rows), list_changes (0 rows), list_entries (0 rows), "
        "entity_labels (0 rows), entity_events (0 rows), undecodable_batches (0 rows) and the "
        "columns label_events.stage, decided_messages.tokens, decided_messages.entities, "
        "prequential.components, thresholds.weights, thresholds.level, thresholds.source: "
        "add --yes"
    ]
    assert run("db", "downgrade", "0009", "--db", db, "--yes").exit_code == 0
    # dropping an index only needs no confirmation
    assert run("db", "downgrade", "0008", "--db", db).exit_code == 0
    done = run("db", "downgrade", "base", "--db", db, "--yes")
    assert done.exit_code == 0, done.output
    assert done.stderr.startswith(f"downgrading {db} from revision 0008 to base drops the tables")
    assert done.stdout == f"{db}: at revision base\n"


def test_only_model_create_makes_a_model_and_a_typo_is_told_the_models(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    corpus = tmp_path / "c.jsonl"
    write_corpus(generate(SynthConfig(n_messages=300)), corpus)
    run("db", "upgrade", "--db", db)
    first = run("learn", str(corpus), "--db", db)
    assert first.exit_code == 1 and first.stderr.splitlines() == [
        "Error: no model named 'default' in the store, which holds none yet: "
        "`filterd model create default` creates it"
    ]
    assert run("model", "list", "--db", db).stdout == (
        "no models in the store: `filterd model create NAME` adds one\n"
    )
    assert run("model", "create", "default", "--db", db).exit_code == 0
    assert run("model", "create", "strict", "--db", db, "--variant", "mnb").exit_code == 0
    assert run("learn", str(corpus), "--db", db).exit_code == 0
    typo = (
        "no model named 'defualt' in the store (its models: 'default', 'strict'); "
        "`filterd model create NAME` adds one"
    )
    export = tmp_path / "x.jsonl.gz"
    for command in (
        ["learn", str(corpus)],
        ["model", "stats"],
        ["model", "export", "-o", str(export)],
        ["feedback", "log"],
        ["calibrate", "--dry-run"],
        ["review", "list"],
        ["db", "prune", "--unseen-days", "1", "--max-count", "0"],
    ):
        result = run(*command, "--db", db, "--model", "defualt")
        assert result.exit_code == 1 and result.stderr.splitlines() == [f"Error: {typo}"], command
    for command in (["model", "show", "defualt"], ["model", "delete", "defualt", "--yes"]):
        result = run(*command, "--db", db)
        assert result.exit_code == 1 and result.stderr.splitlines() == [f"Error: {typo}"], command
    scored = run("score", "--db", db, "--model", "defualt", input='{"id": "m", "text": "hi"}\n')
    assert scored.exit_code == 1 and scored.stdout == ""
    assert scored.stderr.splitlines()[-1] == f"Error: {typo}"
    assert not export.exists()
    listed = json.loads(run("model", "list", "--db", db, "--json").stdout.splitlines()[0])
    assert run("model", "list", "--db", db, "--json").stdout.count("\n") == 2  # no new model
    assert (listed["model"], listed["ready"], listed["not_ready"]) == ("default", True, None)
    assert (
        sum(listed["documents"].values())
        == json.loads(run("model", "stats", "--db", db, "--json").stdout)["ledger"]
    )
    text = run("model", "list", "--db", db).stdout.splitlines()
    assert text[0].split() == ["model", "created", "documents", "tokens", "readiness"]
    assert text[1].startswith("default ") and text[1].endswith("  ready")
    assert text[2].startswith("strict ") and "none learned yet" in text[2]
    assert text[2].endswith(
        "not ready: needs at least two classes with 20 learned documents each; has 0 class(es)"
    )


def test_model_show_defaults_to_the_default_model_as_stats_does(tmp_path: Path) -> None:
    db = learned_store(tmp_path, 60)
    shown = run("model", "show", "--db", db)
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == run("model", "show", "default", "--db", db).stdout
    assert shown.stdout.startswith("model 'default'\n")


def test_read_only_commands_create_nothing_and_name_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "store.db"
    url = f"sqlite:///{missing}"
    corpus, export = tmp_path / "c.jsonl", tmp_path / "x.jsonl.gz"
    write_corpus(generate(SynthConfig(n_messages=10)), corpus)
    for command in (
        ["model", "stats"],
        ["model", "show"],
        ["model", "list"],
        ["feedback", "log"],
        ["review", "list"],
        ["calibrate", "--dry-run"],
        ["model", "export", "-o", str(export)],
        ["learn", str(corpus)],
        ["db", "downgrade", "base"],
    ):
        result = run(*command, "--db", url)
        assert result.exit_code == 1, (command, result.output)
        assert result.stderr.splitlines() == [
            f"Error: no SQLite database at {missing}: check the path (`filterd db upgrade` "
            "creates a store)"
        ], command
    assert not missing.parent.exists() and not export.exists()
    assert run("db", "current", "--db", url).stdout == "not migrated: run `filterd db upgrade`\n"
    assert not missing.parent.exists()

    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("hello\n")
    for path, says in (
        (tmp_path, "a folder, not a SQLite database file"),
        (not_sqlite, "not a SQLite database file"),
    ):
        for command in (["model", "stats"], ["db", "upgrade"], ["db", "current"]):
            result = run(*command, "--db", f"sqlite:///{path}")
            assert result.exit_code == 1 and result.stderr.splitlines() == [
                f"Error: {path}: {says}"
            ], command


@pytest.mark.parametrize("answer, revision", [("n", database_head()), ("y", "base")])
def test_on_a_terminal_a_downgrade_asks_first(tmp_path: Path, answer: str, revision: str) -> None:
    db = learned_store(tmp_path, 40)
    main_side, terminal = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "filterd", "db", "downgrade", "base", "--db", db],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        os.close(terminal)
        os.write(main_side, f"{answer}\n".encode())
        _, err = process.communicate(timeout=60)
    os.close(main_side)
    assert err.startswith(f"downgrading {db} from revision {database_head()} to base drops the ")
    assert "labels among them" in err and "Go ahead? [y/N]" in err
    assert process.returncode == (1 if answer == "n" else 0)
    current = run("db", "current", "--db", db)
    assert current.stdout.strip() == (
        revision if answer == "n" else "not migrated: run `filterd db upgrade`"
    ), (current.output, current.exception)


def test_learn_reads_every_field_of_a_corpus_line(tmp_path: Path) -> None:
    db = new_store(tmp_path)
    corpus = tmp_path / "payments.jsonl"
    lines = [
        {
            "id": f"tx{i}",
            "label": label,
            "text": "",
            "ts": f"2018-04-01T00:0{i}:00Z",
            "attributes": {"terminal": f"t{i % 2}", "amount": 10.0 * (i + 1)},
            "sender": "shop@example.com",
            "scenario": 2,
        }
        for i, label in enumerate(["spam", "ham", "spam", "ham"])
    ]
    corpus.write_text("".join(json.dumps(line) + "\n" for line in lines))
    learned = run("learn", str(corpus), "--db", db, "--holdout-fraction", "0")
    assert learned.exit_code == 0, learned.output
    config = load_settings(None, environ={}, overrides={"database.url": db})
    state = loaded_model(config, structlog.get_logger(), create_store=False)
    stats, _ = state.model.load()
    vocabulary = set(stats.vocab.keys.tolist())
    for token in ("terminal=t0", "terminal=t1", "amount=40.0", "from:example.com"):
        assert int(stats.hasher.keys([token])[0]) in vocabulary, token
    assert not vocabulary & set(stats.hasher.keys(["scenario=2", "2"]).tolist())


def test_learn_reads_a_message_into_the_tokens_the_scorer_reads_under_the_same_limits(
    tmp_path: Path,
) -> None:
    """`filterd learn` and the daemon's scorer (the path of `filterd run` and `filterd score`)
    build their tokenizer from the same settings: a configured [limits] section shapes the
    tokens each reads from one message alike."""
    settings = tmp_path / "filterd.toml"
    settings.write_text("[limits]\nmax_token_length = 6\nmax_tokens = 12\n")
    db = new_store(tmp_path)
    text = "an extraordinarily persuasive offer " + " ".join(f"w{i}" for i in range(30))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "m1", "text": text, "label": "spam"}) + "\n")
    learned = run(
        "learn", str(corpus), "--db", db, "--config", str(settings), "--holdout-fraction", "0"
    )
    assert learned.exit_code == 0, learned.output
    config = load_settings(settings, environ={}, overrides={"database.url": db})
    state = loaded_model(config, structlog.get_logger(), create_store=False)
    assert state.decider is not None  # made by the load
    (scored,) = state.decider.tokens([Message(id="m1", text=text)])
    assert len(scored.tokens) == 12 and any(t.startswith("skip:") for t in scored.tokens)
    stats, _ = state.model.load()
    assert set(stats.vocab.keys.tolist()) == set(stats.hasher.keys(scored.tokens).tolist())
