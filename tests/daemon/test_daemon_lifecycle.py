"""`filterd run` against a real broker and a real database: the process's life (SIGTERM,
SIGKILL and restart, a second signal, a stop during the group join, the dead-letter guard, two
daemons sharing the partitions, kill -9 of each role on PostgreSQL, an unreachable broker).

Apart from test_daemon.py so that two test workers share the daemon tests between them.
"""

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import select

from filterd.store.handle import Store
from filterd.store.schema import FeedbackLedger, Holdout
from tests.conftest import fresh_postgres, proc_status, stop_process
from tests.daemon.conftest import DaemonProcess, StartDaemon, ids_of, message, produce, read_all
from tests.daemon.test_daemon import (
    STREAM,
    counts,
    errors_of,
    events_of,
    feedback_of,
    messages_of,
)


def test_sigterm_finishes_commits_and_exits_0(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    produce(kafka_config, topics["messages"], messages_of(STREAM[:1000]))
    daemon = start_daemon(sqlite_url)
    read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 1000)
    daemon.wait_for(lambda: '"ready"' in daemon.log(), what="ready")
    daemon.signal(signal.SIGTERM)
    assert daemon.wait() == 0
    own = [(e["event"], e.get("role")) for e in events_of(daemon) if e["logger"] == "filterd"]
    steps = [
        ("starting", "all"),
        ("store ready", None),
        ("loading the model", None),
        ("model loaded", None),
        ("group joined", "scorer"),
        ("group joined", "learner"),
        ("ready", None),
        ("stopped", "scorer"),
        ("stopped", "learner"),
        ("stopped", None),
    ]
    assert [step for step in own if step in steps] == sorted(steps, key=own.index)
    assert own.index(("joining group", "scorer")) < own.index(("group joined", "scorer"))
    assert errors_of(daemon) == []  # a normal start and stop
    again = start_daemon(sqlite_url, config=daemon.config_path)
    produce(kafka_config, topics["messages"], messages_of(STREAM[1000:1100]))
    decisions = read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 1100)
    again.wait_for(
        lambda: again.metric("filterd_messages_total", outcome="decided") >= 100,
        what="new messages",
    )
    assert (
        Counter(ids_of(decisions)).most_common(1)[0][1] == 1
    )  # nothing decided before was read again


def test_sigkill_and_restart_loses_nothing_and_learns_once(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    produce(kafka_config, topics["feedback"], feedback_of(STREAM))
    produce(kafka_config, topics["messages"], messages_of(STREAM) * 3)
    daemon = start_daemon(sqlite_url, batches={"poll_records": 100, "feedback": 200})
    daemon.wait_for(
        lambda: daemon.metric("filterd_messages_total", outcome="decided") >= 1000, what="a start"
    )
    daemon.signal(signal.SIGKILL)
    daemon.wait()
    again = start_daemon(sqlite_url, config=daemon.config_path)
    decisions = read_all(
        kafka_config,
        topics["decisions"],
        until=lambda rs: len(set(ids_of(rs))) >= len(STREAM) and len(rs) >= 3 * len(STREAM),
    )
    assert set(ids_of(decisions)) == {r["id"] for r in STREAM}
    again.wait_for(lambda: sum(counts(sqlite_url)) == len(STREAM), what="all feedback in the store")
    ledger, _ = counts(sqlite_url)
    stats = Store.open(sqlite_url).model("default").load()[0]
    assert int(stats.D.sum()) == ledger  # each message learned exactly once


def test_the_dead_letter_guard_stops_the_daemon(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    produce(kafka_config, topics["messages"], [b"garbage"] * 50, keys=["k"] * 50)
    daemon = start_daemon(sqlite_url, dead_letter={"max_consecutive": 20, "window": 1000})
    assert daemon.wait(60) == 3
    assert "dead-letter guard tripped" in daemon.log()
    # nothing was committed: once the configuration is fixed, every record is read again
    assert read_all(kafka_config, topics["dead_letter"], timeout=1) == []
    fixed = start_daemon(sqlite_url, dead_letter={"max_consecutive": 0})
    fixed.wait_for(
        lambda: fixed.metric("filterd_messages_total", outcome="dead_lettered") == 50,
        what="re-read",
    )


def test_two_daemons_share_the_partitions_and_one_takes_over(
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    postgres_server: str,
) -> None:
    url = fresh_postgres(postgres_server)
    first, second = start_daemon(url), start_daemon(url)
    for daemon in (first, second):

        def joined(d: DaemonProcess = daemon) -> bool:
            return '"role": "scorer"' in d.log() and "group joined" in d.log()

        daemon.wait_for(joined, what="an assignment")
    first.wait_for(
        lambda: _scorer_partitions(first) + _scorer_partitions(second) == 4, what="a split"
    )
    produce(
        kafka_config,
        topics["messages"],
        messages_of(STREAM[:2000]),
        keys=[r["id"] for r in STREAM[:2000]],
    )
    read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 2000)
    assert first.metric("filterd_messages_total", outcome="decided") > 0
    assert second.metric("filterd_messages_total", outcome="decided") > 0

    first.signal(signal.SIGKILL)
    first.wait()
    produce(
        kafka_config,
        topics["messages"],
        messages_of(STREAM[2000:]),
        keys=[r["id"] for r in STREAM[2000:]],
    )
    decisions = read_all(
        kafka_config, topics["decisions"], until=lambda rs: len(set(ids_of(rs))) >= len(STREAM)
    )
    assert set(ids_of(decisions)) == {r["id"] for r in STREAM}
    assert second.metric("filterd_messages_total", outcome="decided") >= len(STREAM) - 2000


def _scorer_partitions(daemon: DaemonProcess) -> int:
    """Partitions of the messages topic the daemon holds, by its last assignment log line."""
    held = 0
    for line in daemon.log().splitlines():
        if line.startswith("{") and '"role": "scorer"' in line:
            event = json.loads(line)
            if event["event"] in ("group joined", "partitions assigned"):
                held = len(event["partitions"])
    return held


def test_labels_by_id_survive_kill_9_of_the_scorer_and_of_the_learner_on_postgresql(
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    postgres_server: str,
) -> None:
    """Scorer and learner as separate processes sharing one PostgreSQL; the feedback comes first
    (the learner runs ahead of the scorer), by id only; each process is killed mid-stream in
    turn. Every label is applied exactly once and nothing is dead-lettered."""
    url = fresh_postgres(postgres_server)
    stream = STREAM[:1200]
    fast: dict[str, dict[str, Any]] = {
        "feedback": {"retry_seconds": 0.5},
        "batches": {"poll_records": 100, "feedback": 200},
    }
    learner = start_daemon(url, role="learner", feedback=fast["feedback"], batches=fast["batches"])
    produce(
        kafka_config,
        topics["feedback"],
        feedback_of(stream, with_text=False),
        keys=[r["id"] for r in stream],
    )
    learner.wait_for(
        lambda: learner.metric("filterd_feedback_total", outcome="parked") >= 200, what="parking"
    )
    scorer = start_daemon(
        url, role="scorer", create_store=False, feedback=fast["feedback"], batches=fast["batches"]
    )
    produce(kafka_config, topics["messages"], messages_of(stream), keys=[r["id"] for r in stream])
    scorer.wait_for(
        lambda: scorer.metric("filterd_messages_total", outcome="decided") >= 300, what="a start"
    )
    scorer.signal(signal.SIGKILL)
    scorer.wait()
    scorer = start_daemon(url, role="scorer", create_store=False, config=scorer.config_path)
    learner.wait_for(lambda: sum(counts(url)) >= 600, timeout=90, what="half the labels")
    learner.signal(signal.SIGKILL)
    learner.wait()
    learner = start_daemon(url, role="learner", create_store=False, config=learner.config_path)
    learner.wait_for(lambda: sum(counts(url)) == len(stream), timeout=90, what="every label")
    ledger, _ = counts(url)
    stats = Store.open(url).model("default").load()[0]
    assert int(stats.D.sum()) == ledger  # each message learned exactly once
    truth = Counter(r["label"] for r in stream)
    with Store.open(url).engine.connect() as conn:
        labels = dict(conn.execute(select(FeedbackLedger.message_id, FeedbackLedger.label)).all())
        labels |= dict(conn.execute(select(Holdout.message_id, Holdout.label)).all())
    assert Counter(labels.values()) == truth
    assert read_all(kafka_config, topics["dead_letter"], timeout=1) == []


def test_a_stop_during_the_group_join_is_quick_and_quiet(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    # a long join (Tansu holds one for about session_timeout_ms / 2): the LeaveGroup a consumer
    # sends when it closes would wait behind its own JoinGroup and time out
    slow = {**kafka_config, "session_timeout_ms": 30000, "max_poll_interval_ms": 30000}
    daemon = start_daemon(sqlite_url, kafka=slow)
    daemon.wait_for(lambda: daemon.log().count('"joining group"') == 2, what="both joins under way")
    started = time.monotonic()
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(10) == 0
    assert time.monotonic() - started < 5
    assert "group joined" not in daemon.log() and errors_of(daemon) == []
    assert daemon.log().count("stopped during a group join") == 2


def test_a_second_signal_exits_at_once(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    daemon = start_daemon(sqlite_url)
    daemon.wait_for(lambda: "group joined" in daemon.log(), what="start-up")
    # The second signal must come while the first is being honoured, however fast the clean stop:
    # stopped, the daemon holds both pending and gets them together when it resumes. Two of one
    # kind would merge into one pending signal, hence Ctrl-C and SIGTERM.
    # The kernel takes a stop when the process next runs, and a SIGCONT sent before that cancels
    # it: each step is waited for in /proc, so neither signal can be taken before the resume.
    pid = daemon.started().pid
    stop_process(pid)
    daemon.signal(signal.SIGINT)
    daemon.signal(signal.SIGTERM)
    both = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    daemon.wait_for(
        lambda: int(proc_status(pid)["ShdPnd"], 16) & both == both, what="both signals pending"
    )
    daemon.signal(signal.SIGCONT)
    # 128 + the second signal's number (os._exit), not 0 (the clean stop)
    assert daemon.wait(10) in (128 + signal.SIGINT, 128 + signal.SIGTERM)


def test_a_broker_unreachable_at_start_up_is_waited_for_a_restart_survived_a_hang_not_waited_out(
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    sqlite_url: str,
    tmp_path: Path,
) -> None:
    from filterd.demo.broker import LocalBroker, free_port
    from filterd.kafka.admin import create_topics

    late = LocalBroker(port=free_port(), log_path=tmp_path / "late-broker.log")
    offline = {**kafka_config, "bootstrap_servers": late.bootstrap_servers}
    daemon = start_daemon(sqlite_url, kafka=offline)
    try:
        daemon.wait_for(
            lambda: "ECONNREFUSED" in daemon.log() or "broker unreachable" in daemon.log(),
            what="failed connection attempts",
        )
        assert daemon.get("/readyz")[0] == 503
        late.start()
        create_topics(offline, list(topics.values()))
        produce(offline, topics["messages"], [message(i) for i in range(50)])
        decisions = read_all(offline, topics["decisions"], until=lambda rs: len(rs) >= 50)
        assert sorted(ids_of(decisions)) == sorted(f"m{i}" for i in range(50))
        # a broker restart (Tansu's memory storage comes back empty): consumer and producer recover
        late.kill()
        late.start()
        create_topics(offline, list(topics.values()))
        produce(offline, topics["messages"], [message(i) for i in range(50, 100)])
        decisions = read_all(
            offline, topics["decisions"], until=lambda rs: len(set(ids_of(rs))) >= 50, timeout=90
        )
        assert set(ids_of(decisions)) == {
            f"m{i}" for i in range(50, 100)
        }  # at least once: duplicates allowed
        # hung: connections stay open and nothing is answered, so every wait of the stop runs to
        # its bound (a broker that is down refuses at once)
        produce(offline, topics["messages"], [message(i) for i in range(100, 2100)])
        assert late._process is not None
        os.kill(late._process.pid, signal.SIGSTOP)
        started = time.monotonic()
        daemon.signal(signal.SIGTERM)
        assert daemon.wait(15) == 0
        assert time.monotonic() - started < 5  # the contract (docs/operations.md)
        # the waits were bounded: the supervisor did not have to leave a loop behind
        assert "stopping without waiting for the loops" not in daemon.log()
        os.kill(late._process.pid, signal.SIGCONT)
    finally:
        daemon.stop()
        late.stop()
