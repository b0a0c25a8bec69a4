"""`filterd run` with `[http] enabled`, as a child process against the session's broker: a
check over HTTP scores a message as the daemon scored it from the messages topic, and a label
sent over HTTP reaches the feedback topic as the credential's analyst and is learned."""

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from filterd.demo.broker import free_port
from filterd.evaluation.synth import SynthConfig, generate
from filterd.service.passwords import hash_secret
from filterd.store.database import connect
from filterd.store.schema import FeedbackLedger, LabelEvent
from tests.daemon.conftest import StartDaemon, produce, read_all, valid
from tests.web.conftest import PASSWORD, ROUNDS, basic, call, learned_store
from tests.web.test_workbench_browser import workbench


def test_http_checks_like_kafka_and_its_labels_are_learned(
    sqlite_url: str,
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    learned_store(sqlite_url)
    # the credential from the environment, as an operator keeps it
    users = '{dana = "%s"}' % hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)
    monkeypatch.setenv("FILTERD_HTTP_USERS", users)
    port = free_port()
    daemon = start_daemon(
        sqlite_url,
        create_store=False,
        http={"enabled": True, "port": port},
        model={"min_docs": 5, "variant": "mnb", "holdout_fraction": 0.0},
    )
    daemon.wait_for(lambda: daemon.get("/readyz")[0] == 200, what="readiness")
    assert "pbkdf2_sha256$" not in daemon.log()  # the hash is never logged

    text = next(
        r["text"] for r in generate(SynthConfig(n_messages=40, seed=3)) if r["label"] == "spam"
    )
    produce(kafka_config, topics["messages"], [json.dumps({"id": "h1", "text": text}).encode()])
    (record,) = read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 1)
    through_kafka = valid("decision", record.value)

    auth = basic("dana", PASSWORD)
    status, body, _ = call(port, "POST", "/v1/check", {"id": "h1", "text": text}, auth=auth)
    assert status == 200, body
    (through_http,) = body["decisions"]
    valid("decision", json.dumps(through_http).encode())
    assert through_http["score"] == through_kafka["score"] != 0.0
    for key in ("label", "threshold", "model_version", "threshold_version", "explanation"):
        assert through_http[key] == through_kafka[key], key

    assert call(port, "POST", "/v1/feedback", {"message_id": "h1", "label": "spam"})[0] == 401
    # counted by route and status on the daemon's /metrics (a path's id is not a label)
    assert daemon.metric("filterd_http_requests_total", route="/v1/check", status="200") >= 1
    assert daemon.metric("filterd_http_requests_total", route="/v1/feedback", status="401") == 1
    assert daemon.metric("filterd_http_request_seconds_count", route="/v1/check") >= 1
    status, body, _ = call(
        port,
        "POST",
        "/v1/feedback",
        {"message_id": "h1", "label": "spam", "analyst": "mallory"},
        auth=auth,
    )
    assert status == 202 and body["analyst"] == "dana", body
    (sent,) = read_all(kafka_config, topics["feedback"], until=lambda rs: len(rs) >= 1)
    label = valid("feedback", sent.value)
    assert (label["message_id"], label["analyst"], label["source"]) == ("h1", "dana", "analyst")

    engine = connect(sqlite_url)

    def learned() -> bool:
        with engine.connect() as conn:
            return (
                conn.execute(
                    select(FeedbackLedger.label).where(FeedbackLedger.message_id == "h1")
                ).scalar()
                == "spam"
            )

    daemon.wait_for(learned, timeout=30, what="the label in the ledger")
    with engine.connect() as conn:
        analysts = (
            conn.execute(select(LabelEvent.analyst).where(LabelEvent.message_id == "h1"))
            .scalars()
            .all()
        )
    assert analysts == ["dana"]
    status, info, _ = call(port, "GET", "/v1/decisions/h1", auth=auth)
    assert status == 200 and info["provenance"]["source_topic"] == topics["messages"]
    assert [(e["label"], e["analyst"]) for e in info["labels"]] == [("spam", "dana")]
    engine.dispose()

    # `filterd serve`: the API alone, on the same store, checks with the model synced from it
    serve_port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        serving = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "filterd",
                "serve",
                "--config",
                str(daemon.config_path),
                "--port",
                str(serve_port),
                "--metrics-port",
                "0",
            ],  # the daemon has its port
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 20
        status = 0
        while time.monotonic() < deadline and status != 200:
            time.sleep(0.2)
            try:
                status, body, _ = call(
                    serve_port, "POST", "/v1/check", {"id": "h1", "text": text}, auth=auth
                )
            except OSError:
                continue
        assert status == 200, log.read_text()
        # the label was learned since: both processes score with the model that learned it
        alone = body["decisions"][0]
        _, body, _ = call(port, "POST", "/v1/check", {"id": "h1", "text": text}, auth=auth)
        assert (
            alone["model_version"]
            == body["decisions"][0]["model_version"]
            > through_kafka["model_version"]
        )
        assert alone["score"] == body["decisions"][0]["score"] != through_kafka["score"]
        # it serves the workbench too (the pages themselves: test_pages.py, the same app)
        with urllib.request.urlopen(f"http://127.0.0.1:{serve_port}/login", timeout=10) as page:
            assert page.status == 200 and 'name="csrf"' in page.read().decode()
    finally:
        serving.send_signal(signal.SIGTERM)
        assert serving.wait(15) == 0, log.read_text()
    daemon.stop()
    assert daemon.started().returncode == 0


def test_kafka_filterd_score_and_http_decide_alike_and_refuse_alike(
    sqlite_url: str,
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    daemon, port = workbench(sqlite_url, start_daemon, monkeypatch, role="scorer")
    synth = generate(SynthConfig(n_messages=200, seed=1))  # as the store learned them
    spam, ham = (next(r["text"] for r in synth if r["label"] == label) for label in ("spam", "ham"))
    mail = (
        "From: Prize Desk <desk@prize.example>\nSubject: =?utf-8?q?You_won?=\n"
        "Content-Type: text/html\n\n<p>Claim your <b>prize</b> at http://win.example/now</p>"
    )
    messages: list[dict[str, Any]] = [
        {"id": "t1", "text": spam},
        {"id": "t2", "text": ham, "subject": "lunch?", "attributes": {"channel": "sms"}},
        {"id": "t3", "text": ""},
        {"id": "t4", "text": mail, "format": "email"},
        {"id": "t5", "text": "word " * 20_000},  # cut at limits.max_tokens: decided, truncated
    ]
    invalid = {"id": "", "text": "an empty id"}
    lines = [json.dumps(m) for m in [*messages, invalid]]
    # one partition, in order
    produce(kafka_config, topics["messages"], [line.encode() for line in lines], ["k"] * 6)
    decided = read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 5)
    kafka = {d["message_id"]: d for d in (valid("decision", r.value) for r in decided)}
    (letter,) = read_all(kafka_config, topics["dead_letter"], until=lambda rs: len(rs) >= 1)
    kafka_refusal = valid("dead-letter", letter.value)

    scored = subprocess.run(
        [sys.executable, "-m", "filterd", "score", "--config", str(daemon.config_path)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert scored.returncode == 1, scored.stderr  # the invalid line
    score = {d["message_id"]: d for d in map(json.loads, scored.stdout.splitlines())}
    (score_refusal,) = [
        json.loads(line) for line in scored.stderr.splitlines() if line.startswith('{"source')
    ]

    auth = basic("dana", PASSWORD)
    status, body, _ = call(port, "POST", "/v1/check", messages, auth=auth)
    assert status == 200, body
    http = {d["message_id"]: d for d in body["decisions"]}
    status, http_refusal, _ = call(port, "POST", "/v1/check", invalid, auth=auth)

    assert set(kafka) == set(score) == set(http) == {m["id"] for m in messages}
    assert (kafka["t1"]["label"], kafka["t2"]["label"], kafka["t5"]["truncated"]) == (
        "spam",
        "ham",
        True,
    )
    for message_id, decision in kafka.items():
        for key in ("label", "score", "explanation", "truncated", "model_version", "threshold"):
            assert score[message_id][key] == decision[key] == http[message_id][key], key
    # the same error: the message is not valid, at the same field, for the same reason
    assert kafka_refusal["reason"] == score_refusal["reason"] == "schema"
    assert kafka_refusal["error"] == score_refusal["error"]
    assert status == 422 and http_refusal["field"] == "$.id"
    error = f"not a valid message: {http_refusal['error']} - at `{http_refusal['field']}`"
    assert kafka_refusal["error"] == error
