"""`filterd topics stuck` against a real broker: a batch reported as undecodable shows as held
while its group stands before it, and as read since once the group has committed past it
(after a restart decoded it, e.g. with the codec library installed) — never as held forever."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

from filterd.cli import main
from filterd.store.database import connect, upgrade
from filterd.store.undecodable import Undecodable, report


def stuck(config: Path, *more: str) -> Result:
    return CliRunner().invoke(main, ["topics", "stuck", "--config", str(config), *more])


def commit(bootstrap: str, group: str, tp: TopicPartition, offset: int) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
    finally:
        consumer.close()


def reported(tmp_path: Path, bootstrap: str, **batch: object) -> Path:
    """A store holding one reported batch (`batch` overrides the defaults below), and a
    configuration file naming it and `bootstrap`."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    upgrade(url)
    fields: dict[str, Any] = {
        "consumer_group": "g",
        "topic": "t",
        "kafka_partition": 1,
        "kafka_offset": 5,
        "next_offset": 25,
        "records": 20,
        "codec": "snappy",
        "problem": "compressed with snappy, whose library is not installed here",
        "found_by": "scorer@host",
        "found_at": datetime.now(UTC),
    }
    report(connect(url), Undecodable(**(fields | batch)))
    config = tmp_path / "filterd.toml"
    config.write_text(f'[database]\nurl = "{url}"\n[kafka]\nbootstrap_servers = "{bootstrap}"\n')
    return config


def test_a_held_batch_shows_as_read_once_its_group_commits_past_it(
    kafka_config: dict[str, Any], topics: dict[str, str], tmp_path: Path
) -> None:
    topic, group = topics["messages"], f"stuck-{topics['messages']}"
    bootstrap = kafka_config["bootstrap_servers"]
    config = reported(tmp_path, bootstrap, consumer_group=group, topic=topic)
    tp = TopicPartition(topic, 1)

    commit(bootstrap, group, tp, 5)  # held at the batch
    held = stuck(config, "--json")
    assert held.exit_code == 0, held.output
    (row,) = [json.loads(line) for line in held.stdout.splitlines()]
    assert row["status"].startswith("held: filterd topics skip") and row["committed_offset"] == 5

    commit(bootstrap, group, tp, 31)  # a restart read it and went on
    read = stuck(config)
    assert read.exit_code == 0, read.output
    assert "read since: the group has committed offset 31, past the batch" in read.stdout
    assert "held" not in read.stdout


def test_without_kafka_the_store_s_view_is_shown_and_the_doubt_said(tmp_path: Path) -> None:
    result = stuck(reported(tmp_path, "127.0.0.1:9"))
    assert result.exit_code == 0, result.output
    assert "held: filterd topics skip" in result.stdout
    assert "whether a held batch was read since is not known" in result.stderr
