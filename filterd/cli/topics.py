"""`filterd topics create`: the Kafka topics filterd reads and writes."""

from __future__ import annotations

import click
from kafka.errors import KafkaError

from filterd.cli.common import broker_override, config_option, load_config
from filterd.kafka.admin import create_topics
from filterd.kafka.settings import topic_configs


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
