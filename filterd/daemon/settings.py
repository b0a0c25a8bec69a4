"""The configuration every command runs with: `load_settings`, the one loader of the CLI, the
daemon and the demo.

`filterd.service.config.load` reads and checks every declared key; the `[kafka]` section is
free text for the Kafka client, which the service layer does not know (it imports no Kafka), so
its checks (`filterd.kafka.settings.check`) run here, after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from filterd.kafka import settings as kafka_settings
from filterd.service.config import Config, load


def load_settings(
    path: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    kafka: Mapping[str, Any] | None = None,
) -> Config:
    """`filterd.service.config.load` (the file at `path` ← the environment ← `overrides`), with
    the `[kafka]` settings checked against this installation's clients; ConfigError names the
    key. `kafka`: the `[kafka]` section to run with instead of the file's and the environment's
    (the demo's own broker)."""
    config = load(path, environ, overrides)
    if kafka is not None:
        config = msgspec.structs.replace(config, kafka=dict(kafka))
    kafka_settings.check(config)
    return config
