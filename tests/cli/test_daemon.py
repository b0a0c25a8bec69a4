"""`filterd score`, `filterd topics create`, and how `filterd run` refuses a bad configuration."""

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner, Result

from filterd.cli import main
from filterd.cli.corpus_files import write_corpus
from filterd.demo.broker import LocalBroker
from filterd.evaluation.synth import SynthConfig, generate
from filterd.store.database import head
from tests.daemon.conftest import valid

STREAM = generate(SynthConfig(n_messages=1200, seed=5))


def run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, input=input)


def test_score_decides_stdin_like_the_daemon(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    corpus = tmp_path / "train.jsonl"
    write_corpus(STREAM[:1000], corpus)
    assert run("db", "upgrade", "--db", db).exit_code == 0
    assert run("model", "create", "default", "--db", db).exit_code == 0
    assert run("learn", str(corpus), "--db", db).exit_code == 0
    lines = [json.dumps({"id": r["id"], "text": r["text"]}) for r in STREAM[1000:]]
    lines.insert(3, "{broken")
    lines.insert(60, "")  # skipped, and counted: offsets are line numbers
    # batches of 50 lines: line numbers run on from one batch to the next
    env = {**os.environ, "FILTERD_BATCHES_POLL_RECORDS": "50"}
    result = subprocess.run(
        [sys.executable, "-m", "filterd", "score", "--db", db],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1, result.stderr  # a line was rejected
    decisions = [valid("decision", line) for line in result.stdout.splitlines()]
    assert [d["message_id"] for d in decisions] == [r["id"] for r in STREAM[1000:]]
    line_of = {
        json.loads(line)["id"]: n for n, line in enumerate(lines, 1) if line.startswith('{"id"')
    }
    assert [(d["source_topic"], d["partition"], d["offset"]) for d in decisions] == [
        ("stdin", 0, line_of[d["message_id"]]) for d in decisions
    ]
    truth = {r["id"]: r["label"] for r in STREAM[1000:]}
    assert sum(d["label"] == truth[d["message_id"]] for d in decisions) / len(decisions) > 0.9
    (letter,) = [
        valid("dead-letter", line)
        for line in result.stderr.splitlines()
        if line.startswith('{"source')
    ]
    assert (
        letter["reason"] == "invalid_json"
        and letter["offset"] == 4
        and letter["source_topic"] == "stdin"
    )
    assert result.stderr.splitlines()[-1] == (
        f"Error: 1 of {len(decisions) + 1} lines could not be decided: their dead letters are on "
        "stderr"
    )


def test_score_writes_only_decisions_to_stdout_and_fails_on_garbage(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    corpus = tmp_path / "train.jsonl"
    write_corpus(STREAM[:300], corpus)
    for command in (("db", "upgrade"), ("model", "create", "default"), ("learn", str(corpus))):
        assert run(*command, "--db", db).exit_code == 0
    good = json.dumps({"id": "m1", "text": "hello there"})
    garbage = "\n".join(["not json", good, '{"text": "no id"}', "\x00\x01", ""]) + "\n"
    letters = tmp_path / "dead.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "filterd", "score", "--db", db, "--dead-letter", str(letters)],
        input=garbage,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    (decision,) = [valid("decision", line) for line in result.stdout.splitlines()]
    assert decision["message_id"] == "m1"
    dead = [valid("dead-letter", line) for line in letters.read_text().splitlines()]
    assert [d["offset"] for d in dead] == [1, 3, 4]
    assert result.stderr.splitlines()[-1] == (
        f"Error: 3 of 4 lines could not be decided: their dead letters are on {letters}"
    )
    dash = run("score", "--db", db, "--dead-letter", "-", input="oops\n")  # - is stderr
    assert dash.exit_code == 1 and dash.stdout == "" and '"reason":"invalid_json"' in dash.stderr
    clean = run("score", "--db", db, input=good + "\n")
    assert clean.exit_code == 0 and clean.stdout.count("\n") == 1
    unwritable = run("score", "--db", db, "--dead-letter", str(corpus / "x"), input=good)
    assert unwritable.exit_code == 1
    assert (
        unwritable.stderr.splitlines()[-1]
        == f"Error: --dead-letter {corpus / 'x'}: Not a directory"
    )


def test_topics_create_is_idempotent(broker: LocalBroker) -> None:
    env = {
        "FILTERD_TOPICS_MESSAGES": "cli-messages",
        "FILTERD_TOPICS_DECISIONS": "cli-decisions",
        "FILTERD_TOPICS_FEEDBACK": "cli-feedback",
        "FILTERD_TOPICS_DEAD_LETTER": "cli-dead",
    }
    first = run("topics", "create", "--bootstrap-servers", broker.bootstrap_servers, env=env)
    assert first.exit_code == 0, first.output
    assert first.stdout.count("created") == 4
    second = run("topics", "create", "--bootstrap-servers", broker.bootstrap_servers, env=env)
    assert second.stdout.count("exists") == 4


def test_topics_create_without_a_broker_fails_within_seconds_naming_it() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "filterd",
            "topics",
            "create",
            "--bootstrap-servers",
            f"127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"Error: cannot create topics on 127.0.0.1:{port} (kafka.bootstrap_servers)"
    )
    assert took < 25  # kafka-python's own wait is 30 s


def test_a_bad_configuration_stops_start_up_with_one_line_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[decision]\ntarget_recall = 1.5\n")
    result = subprocess.run(
        [sys.executable, "-m", "filterd", "run", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "Error: invalid configuration: decision.target_recall: must be in (0, 1]"
    ]
    from_env = run("run", env={"FILTERD_MODEL_VARIANT": "nope"})
    assert (
        from_env.exit_code != 0
        and "model.variant" in from_env.output
        and "Traceback" not in from_env.output
    )
    typo = run("run", "--config", str(tmp_path / "missing.toml"))
    assert typo.exit_code != 0 and "cannot read the configuration" in typo.output


def test_run_refuses_a_store_that_is_not_a_database_at_once(tmp_path: Path) -> None:
    corrupt = tmp_path / "filterd.db"
    corrupt.write_bytes(b"this is not an SQLite file " * 100)
    result = subprocess.run(
        [sys.executable, "-m", "filterd", "run", "--db", f"sqlite:///{corrupt}"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FILTERD_OBSERVE_METRICS_PORT": "0"},
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"Error: {corrupt}: not a SQLite database file"]


def test_run_refuses_a_folder_as_its_sqlite_file_at_once_naming_it(tmp_path: Path) -> None:
    """Not an outage to wait for: `run`, `serve` and `db upgrade` say so alike, in one line (the
    daemon as a process; the others in this one, to spare their start-up)."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "filterd", "run", "--db", f"sqlite:///{tmp_path}"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FILTERD_OBSERVE_METRICS_PORT": "0"},
    )
    assert time.monotonic() - started < 30
    expected = [f"Error: {tmp_path}: a folder, not a SQLite database file"]
    assert (result.returncode, result.stderr.splitlines()) == (1, expected)
    for command in (["serve"], ["db", "upgrade"], ["run", "--create-store"]):
        refused = run(
            *command, "--db", f"sqlite:///{tmp_path}", env={"FILTERD_OBSERVE_METRICS_PORT": "0"}
        )
        assert (refused.exit_code, refused.stderr.splitlines()) == (1, expected), command


def test_a_misspelt_or_mistyped_kafka_setting_is_one_line_naming_it(tmp_path: Path) -> None:
    cases = {
        "bootstrap_server = '127.0.0.1:9092'": "kafka.bootstrap_server: not a setting of "
        "kafka-python's clients (did you mean 'bootstrap_servers'?)",
        "bootstrap_servers = 9092": 'kafka.bootstrap_servers: expected "host:port,…" or a list of '
        "them, got 9092",
        "client = 'librdkafka'": "kafka.client: 'librdkafka' is not one of kafka-python, confluent",
        "client = 'confluent'\nsocket_options = []": "kafka.socket_options: librdkafka has no "
        "equivalent; give librdkafka's own (dotted) setting instead",
        "client = 'kafka-python'\n'socket.keepalive.enable' = true": "kafka.socket.keepalive."
        "enable: not a setting of kafka-python's clients",
    }
    for i, (setting, expected) in enumerate(cases.items()):
        path = tmp_path / "filterd.toml"
        path.write_text(f"[kafka]\n{setting}\n")
        if i == 0:  # as a process once; the others in this one, to spare their start-up
            result = subprocess.run(
                [sys.executable, "-m", "filterd", "topics", "create", "--config", str(path)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            said = (result.returncode, result.stderr.splitlines())
        else:
            refused = run("topics", "create", "--config", str(path))
            said = (refused.exit_code, refused.stderr.splitlines())
        assert said == (1, [f"Error: invalid configuration: {expected}"]), setting


def test_score_refuses_a_store_without_schema_unless_told_to_create_it(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    refused = run("score", "--db", f"sqlite:///{missing}", input="")
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert refused.output.strip().splitlines()[-1] == (
        f"Error: sqlite:///{missing}: no filterd store here: run `filterd db upgrade --db URL` "
        "first, or start with --create-store"
    )
    assert not missing.exists()
    line = json.dumps({"id": "m0", "text": "hello"})
    created = run("score", "--db", f"sqlite:///{missing}", "--create-store", input=line + "\n")
    # the schema is created, not a model: only `filterd model create` (and `run`'s first start) does
    assert created.exit_code == 1 and created.stdout == ""
    assert created.stderr.splitlines()[-1] == (
        "Error: no model named 'default' in the store, which holds none yet: "
        "`filterd model create default` creates it"
    )
    assert run("model", "create", "default", "--db", f"sqlite:///{missing}").exit_code == 0
    created = run("score", "--db", f"sqlite:///{missing}", input=line + "\n")
    assert created.exit_code == 0, created.output
    assert json.loads(created.stdout.splitlines()[-1])["label"] == "unknown"


def test_score_against_an_older_schema_says_to_upgrade_at_once(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'old.db'}"
    assert run("db", "upgrade", "--db", db, "0002").exit_code == 0
    started = time.monotonic()
    result = run("score", "--db", db, input="")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        f"Error: the database schema is at revision 0002, this filterd needs {head()}: "
        "run `filterd db upgrade`"
    )
    assert time.monotonic() - started < 5  # nobody is migrating it: no reason to wait


def test_a_database_filterd_cannot_use_is_one_line_before_start_up(tmp_path: Path) -> None:
    for command in ("run", "score"):
        for url, expected in [
            (
                "mysql://u@h/x",
                "unsupported database URL scheme 'mysql': "
                "filterd supports sqlite:// and postgresql://",
            ),
            (
                f"sqlite:///{tmp_path}/file/x.db",
                f"cannot create {tmp_path}/file for the SQLite store",
            ),
        ]:
            (tmp_path / "file").write_text("")  # a file where the store's directory should be
            result = run(command, "--db", url, "--create-store", input="")
            assert result.exit_code == 1 and "Traceback" not in result.output, result.output
            (line,) = [x for x in result.output.splitlines() if x.startswith("Error: ")]
            assert expected in line


def test_score_against_a_newer_schema_says_to_upgrade_filterd(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    assert run("db", "upgrade", "--db", f"sqlite:///{path}").exit_code == 0
    with sqlite3.connect(path) as conn:  # as a later filterd would leave it
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    result = run("score", "--db", f"sqlite:///{path}", input="")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        f"Error: the database schema is at revision 9999, which this filterd does not know "
        f"(its newest: {head()}): upgrade filterd"
    )


def test_run_and_serve_refuse_a_model_the_store_lacks_naming_those_it_holds(tmp_path: Path) -> None:
    """A mistyped --model starts no empty model: `run` creates one only in a store that holds
    none (its first start), `serve` never."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    command: Sequence[str]
    for command in (("db", "upgrade"), ("model", "create", "default")):
        assert run(*command, "--db", db).exit_code == 0
    expected = (
        "Error: no model named 'defualt' in the store (its models: 'default'); "
        "`filterd model create NAME` adds one"
    )
    result = subprocess.run(
        [
            *(sys.executable, "-m", "filterd", "run", "--bootstrap-servers", "127.0.0.1:1"),
            *("--db", db, "--model", "defualt"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FILTERD_OBSERVE_METRICS_PORT": "0"},
    )
    assert (result.returncode, result.stderr.splitlines()[-1]) == (1, expected)
    served = run("serve", "--port", "0", "--db", db, "--model", "defualt")  # in this process
    assert (served.exit_code, served.stderr.splitlines()[-1]) == (1, expected)
    listed = run("model", "list", "--db", db, "--json").stdout.splitlines()
    assert [json.loads(line)["model"] for line in listed] == ["default"]
