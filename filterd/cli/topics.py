"""`filterd topics create`: the Kafka topics filterd reads and writes; `filterd topics stuck`
and `filterd topics skip`: the record batches daemons could not decode, and skipping one."""

from __future__ import annotations

import getpass
import json
from dataclasses import asdict

import click
from kafka import TopicPartition
from kafka.errors import KafkaError

from filterd.cli.common import broker_override, config_option, confirmed, load_config, shown
from filterd.cli.store import bounded, open_store, store_errors, when
from filterd.daemon.stuck import CHECK_SECONDS, skip_command
from filterd.kafka.admin import committed_offsets, create_topics
from filterd.kafka.settings import topic_configs
from filterd.service.config import Config
from filterd.store.undecodable import Undecodable


@click.group(name="topics")
def topics() -> None:
    """The Kafka topics filterd reads and writes."""


@topics.command(name="create")
@config_option
@broker_override
@click.option("--partitions", type=click.IntRange(1), default=4, show_default=True)
@click.option("--replication-factor", type=click.IntRange(1), default=1, show_default=True)
@click.option(
    "--timeout",
    type=click.FloatRange(0.1),
    default=5.0,
    show_default=True,
    help="Seconds to wait for a broker to answer.",
)
def topics_create(
    config_path: str | None,
    partitions: int,
    replication_factor: int,
    timeout: float,
    **overrides: object,
) -> None:
    """Create the configured topics that do not exist yet."""
    config = load_config(config_path, **overrides)
    names = [
        config.topics.messages,
        config.topics.decisions,
        config.topics.feedback,
        config.topics.dead_letter,
    ]
    try:
        created = create_topics(
            config.kafka,
            names,
            partitions,
            replication_factor,
            topic_configs(config.limits.max_bytes),
            connect_timeout=timeout,
        )
    except KafkaError as error:
        raise click.ClickException(
            f"cannot create topics on {config.kafka['bootstrap_servers']} "
            f"(kafka.bootstrap_servers): {error!r}"
        ) from None
    for name in names:
        click.echo(f"{name}: {'created' if name in created else 'exists'}")


db_override = click.option(
    "--db", "database__url", metavar="URL", help="Database URL (overrides database.url)."
)
group_option = click.option(
    "--group",
    metavar="NAME",
    help="The consumer group (default: the configured scorer group for the messages topic, "
    "the learner group for the feedback topic).",
)


def _group(config: Config, topic: str, group: str | None) -> str:
    """The consumer group that reads `topic`: `group` when given, else the configured one."""
    if group is not None:
        return group
    reading = {
        config.topics.messages: config.groups.scorer,
        config.topics.feedback: config.groups.learner,
    }
    if topic not in reading:
        raise click.UsageError(
            f"{topic!r} is neither topics.messages nor topics.feedback: give --group"
        )
    return reading[topic]


@topics.command(name="skip")
@config_option
@db_override
@click.argument("topic")
@click.argument("partition", type=click.IntRange(0))
@click.argument("offset", type=click.IntRange(0))
@group_option
@click.option(
    "--reason",
    required=True,
    help="Why the batch is skipped, for the audit trail.",
    callback=lambda _ctx, _param, value: bounded(value, "--reason", 2000),
)
@click.option(
    "--by",
    "operator",
    metavar="NAME",
    help="Who asks (default: your login name).",
    callback=lambda _ctx, _param, value: bounded(value, "--by", 200),
)
@click.option(
    "--yes", is_flag=True, help="Confirm: the batch's records are passed over, never read."
)
def topics_skip(
    config_path: str | None,
    topic: str,
    partition: int,
    offset: int,
    group: str | None,
    reason: str,
    operator: str | None,
    yes: bool,
    **overrides: object,
) -> None:
    """Skip the record batch a daemon could not decode at OFFSET of TOPIC's PARTITION.

    Only a batch a daemon reported (its log line "undecodable record batch", `filterd topics
    stuck`) can be skipped. The request is recorded in the store with who asked, when and why;
    the daemon holding the partition moves past the batch within seconds, logs "undecodable
    record batch skipped" and records when. The batch's records are never decided or learned."""
    config = load_config(config_path, **overrides)
    group = _group(config, topic, group)
    with store_errors():
        store = open_store(config.database.url, writes=True)
        found = store.find_undecodable(group, topic, partition, offset)
        if found is not None and found.skip_requested_at is None:
            what = (
                f"skipping {topic}[{partition}] offsets {offset}–{found.next_offset - 1} "
                "passes over "
                f"{found.records} records ({found.problem}) for group {group!r}, for good"
            )
            confirmed(what, yes)
        batch = store.request_skip(
            group, topic, partition, offset, operator or getpass.getuser(), reason
        )
    click.echo(
        f"skip requested: {topic}[{partition}] "
        f"offsets {batch.kafka_offset}–{batch.next_offset - 1} "
        f"({batch.records} records, {batch.problem}), "
        f"reported {when(batch.found_at)} by {batch.found_by}. "
        f"The daemon holding the partition skips it within {CHECK_SECONDS:g} s and logs "
        '"undecodable record batch skipped"; `filterd topics stuck` shows when.'
    )


@topics.command(name="stuck")
@config_option
@db_override
@broker_override
@click.option("--json", "as_json", is_flag=True, help="One JSON object per batch.")
def topics_stuck(config_path: str | None, as_json: bool, **overrides: object) -> None:
    """The record batches daemons could not decode, newest first, and what became of them:
    held (waiting for `filterd topics skip`), read since (the group's committed offset is past
    it: a restart with the codec library installed decoded it), skip requested, or skipped
    (who, when, why)."""
    config = load_config(config_path, **overrides)
    with store_errors():
        batches = open_store(config.database.url).undecodable_batches()
    committed = _committed(config, [b for b in batches if b.skip_requested_at is None])
    for b in batches:
        at = committed.get((b.consumer_group, b.topic, b.kafka_partition))
        if as_json:
            status = {"status": _status(b, at), "committed_offset": at}
            click.echo(json.dumps({**asdict(b), **status}, default=str))
            continue
        click.echo(
            f"{b.consumer_group} {b.topic}[{b.kafka_partition}] "
            f"offsets {b.kafka_offset}–{b.next_offset - 1} "
            f"({b.records} records, codec {b.codec}): {shown(b.problem)}; "
            f"found {when(b.found_at)} by "
            f"{b.found_by}; {_status(b, at)}"
        )
    if not batches and not as_json:
        click.echo("no undecodable record batch was reported")


def _committed(config: Config, batches: list[Undecodable]) -> dict[tuple[str, str, int], int]:
    """Where each batch's group stands in its partition, from Kafka; {} when Kafka does not
    answer (said on stderr: the batches are then shown as the store has them)."""
    out: dict[tuple[str, str, int], int] = {}
    for group in sorted({b.consumer_group for b in batches}):
        partitions = {
            TopicPartition(b.topic, b.kafka_partition) for b in batches if b.consumer_group == group
        }
        try:
            offsets = committed_offsets(config.kafka, group, partitions)
        except KafkaError as error:
            click.echo(
                f"Kafka did not answer ({error}): whether a held batch was read since is not known",
                err=True,
            )
            return {}
        out |= {(group, tp.topic, tp.partition): offset for tp, offset in offsets.items()}
    return out


def _status(b: Undecodable, committed: int | None) -> str:
    if b.skip_requested_at is None:
        if committed is not None and committed >= b.next_offset:
            return (
                f"read since: the group has committed offset {committed}, past the batch "
                "(decoded after a restart, e.g. with the codec library installed)"
            )
        return f"held: {skip_command(b)}"
    asked = (
        f"requested by {shown(b.skip_requested_by)} at {when(b.skip_requested_at)}: "
        f"{shown(b.skip_reason)}"
    )
    if b.skipped_at is None:
        return f"skip {asked}; not skipped yet"
    return f"skipped at {when(b.skipped_at)} ({asked})"
