"""`filterd score`, `filterd topics create`, and how `filterd run` refuses a bad configuration."""

import json
import os
import subprocess
import sys

from click.testing import CliRunner

from filterd.cli import main
from filterd.evaluation.corpus import write_corpus
from filterd.evaluation.synth import SynthConfig, generate
from tests.daemon.conftest import valid

STREAM = generate(SynthConfig(n_messages=1200, seed=5))


def run(*args, env=None, input=None):
    return CliRunner().invoke(main, list(args), env=env, input=input)


def test_score_decides_stdin_like_the_daemon(tmp_path):
    db = f"sqlite:///{tmp_path / 'store.db'}"
    corpus = tmp_path / "train.jsonl"
    write_corpus(STREAM[:1000], corpus)
    assert run("db", "upgrade", "--db", db).exit_code == 0
    assert run("learn", str(corpus), "--db", db).exit_code == 0
    lines = [json.dumps({"id": r["id"], "text": r["text"]}) for r in STREAM[1000:]]
    lines.insert(3, "{broken")
    result = subprocess.run([sys.executable, "-m", "filterd", "score", "--db", db], input="\n".join(lines) + "\n",
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    decisions = [valid("decision", line) for line in result.stdout.splitlines()]
    assert [d["message_id"] for d in decisions] == [r["id"] for r in STREAM[1000:]]
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


def test_topics_create_is_idempotent(broker):
    env = {"FILTERD_TOPICS_MESSAGES": "cli-messages", "FILTERD_TOPICS_DECISIONS": "cli-decisions",
           "FILTERD_TOPICS_FEEDBACK": "cli-feedback", "FILTERD_TOPICS_DEAD_LETTER": "cli-dead"}  # fmt: skip
    first = run("topics", "create", "--bootstrap-servers", broker.bootstrap_servers, env=env)
    assert first.exit_code == 0, first.output
    assert first.stdout.count("created") == 4
    second = run("topics", "create", "--bootstrap-servers", broker.bootstrap_servers, env=env)
    assert second.stdout.count("exists") == 4


def test_a_bad_configuration_stops_start_up_with_one_line_naming_the_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[decision]\ntarget_recall = 1.5\n")
    result = subprocess.run([sys.executable, "-m", "filterd", "run", "--config", str(bad)], capture_output=True,
                            text=True, timeout=60)  # fmt: skip
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


def test_run_refuses_a_store_that_is_not_a_database_at_once(tmp_path):
    corrupt = tmp_path / "filterd.db"
    corrupt.write_bytes(b"this is not an SQLite file " * 100)
    result = subprocess.run(
        [sys.executable, "-m", "filterd", "run", "--db", f"sqlite:///{corrupt}"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "FILTERD_OBSERVE_METRICS_PORT": "0"},
    )  # fmt: skip
    assert result.returncode == 1
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert "the store cannot be used" in line and "not a database" in line
    assert "Traceback" not in result.stderr


def test_a_misspelt_or_mistyped_kafka_setting_is_one_line_naming_it(tmp_path):
    cases = {
        "bootstrap_server = '127.0.0.1:9092'": "kafka.bootstrap_server: not a setting of kafka-python's clients (did you mean 'bootstrap_servers'?)",
        "bootstrap_servers = 9092": "kafka.bootstrap_servers: expected",
    }  # fmt: skip
    for setting, expected in cases.items():
        path = tmp_path / "filterd.toml"
        path.write_text(f"[kafka]\n{setting}\n")
        result = subprocess.run([sys.executable, "-m", "filterd", "topics", "create", "--config", str(path)],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert result.stderr.strip().splitlines() == [
            f"Error: invalid configuration: {expected}"
        ] or (expected in result.stderr and len(result.stderr.strip().splitlines()) == 1)
