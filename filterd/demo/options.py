"""What the demo is asked to do (`DemoOptions`), where it works, and the configuration its
daemon runs with."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filterd.daemon.settings import load_settings
from filterd.service.config import DEFAULTS, Config
from filterd.service.passwords import hash_secret

DB_FILE, DAEMON_LOG, BROKER_LOG = "filterd.db", "daemon.log", "broker.log"
DEMO_ANALYST = "demo"  # the workbench's analyst in `filterd demo --workbench-port`


# Tansu makes a consumer-group join wait about session_timeout_ms / 2 (filterd.demo.broker): a
# short session timeout keeps the daemon's joins short, where kafka-python's defaults would not.
FAST_GROUPS = {
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 1000,
    "max_poll_interval_ms": 10000,
}


class DemoError(RuntimeError):
    """The demo cannot run as asked (bad corpus, unknown target class, used work dir...)."""


@dataclass(frozen=True)
class DemoOptions:
    """What to replay and how; the defaults make a short run."""

    messages: int | None = None  # synthetic: 20,000; corpus: all of it (else its first N)
    spam_share: float = 0.15
    seed: int = 0
    corpus: Path | None = None
    rate: float = 400.0  # messages per second; 0: as fast as possible
    feedback_delay: int = 300  # message i's label is sent after message i + delay
    target: str = DEFAULTS.decision.target_class
    target_recall: float = DEFAULTS.decision.target_recall
    recalibrate_every: int = 1000  # feedback records applied by the learner
    timeout: float = 60.0  # after the replay: give up once the daemon made no progress this long
    variant: str | None = None  # model.variant (None: the configuration's)
    select: str | None = None  # model.select
    config_path: Path | None = None  # a filterd.toml for everything else
    # the scorer's /metrics, /healthz, /readyz; the learner's on the next port (0: off)
    metrics_port: int = 0
    # the workbench and the HTTP API on this port, kept up after the replay until Ctrl-C
    # (None: off); its one analyst, "demo", logs in with `workbench_password`
    workbench_port: int | None = None
    workbench_password: str = ""

    def __post_init__(self) -> None:
        if self.messages is not None and self.messages < 1:
            raise DemoError("--messages must be at least 1")
        if not 0.0 < self.spam_share < 1.0:
            raise DemoError("--spam-share must be between 0 and 1")
        if self.rate < 0 or self.feedback_delay < 0 or self.timeout <= 0:
            raise DemoError("--rate and --feedback-delay must not be negative, --timeout positive")
        if self.recalibrate_every < 1:
            raise DemoError("--recalibrate-every must be at least 1")
        if self.workbench_port is not None and not 0 < self.workbench_port <= 65535:
            raise DemoError("--workbench-port must be a port number")
        if self.metrics_port == 65535:  # the learner serves on the next port
            raise DemoError("--metrics-port must leave the next port for the learner: 1 to 65534")


def check_workdir(workdir: Path) -> None:
    """Creates `workdir` if needed; DemoError if it cannot be written to, or holds a store
    already: the demo starts from an empty model, and a store of an earlier run would turn its
    labels into duplicates."""
    try:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=workdir):
            pass
    except OSError as error:
        raise DemoError(f"--workdir {workdir}: cannot write there ({error.strerror})") from None
    if (Path(workdir) / DB_FILE).exists():
        raise DemoError(
            f"{Path(workdir) / DB_FILE} exists: the demo needs a fresh store "
            "(remove it, or give another --workdir)"
        )


def demo_config(
    options: DemoOptions, workdir: Path, bootstrap_servers: str, labels: Sequence[str]
) -> Config:
    """The daemon's configuration: the file's (if any, environment ignored) under the demo's own
    broker, store, target, the stream's `labels` and quick intervals. ConfigError names a bad
    key."""
    overrides: dict[str, Any] = {
        "database.url": f"sqlite:///{workdir / DB_FILE}",
        "observe.metrics_port": options.metrics_port,
        "observe.log_format": "json",
        # A demo is short: the scorer should see what the learner learned within a second.
        "intervals.sync_seconds": 1.0,
        "intervals.threshold_reload_seconds": 0.5,
        # The demo's Calibrator recalibrates every so many labels, a pace a short stream needs.
        "intervals.calibrate_seconds": 0.0,
        "decision.target_class": options.target,
        "decision.target_recall": options.target_recall,
        "model.variant": options.variant,
        "model.select": options.select,
        "model.labels": sorted(set(labels)),
    }
    if options.workbench_port is not None:
        # a demo's throwaway password: a cheap hash is enough, and start-up stays quick
        hashed = hash_secret(options.workbench_password, "pbkdf2_sha256", rounds=10_000)
        overrides |= {
            "http.enabled": True,
            "http.host": "127.0.0.1",
            "http.port": options.workbench_port,
            "http.users": {DEMO_ANALYST: hashed},
            "http.tokens": {},
        }
    kafka = {
        "bootstrap_servers": bootstrap_servers,
        **FAST_GROUPS,
        "auto_offset_reset": "earliest",
        "enable_idempotence": False,
    }
    # The environment is ignored so that a FILTERD_DATABASE_URL meant for production is never
    # touched by a demo; a --config file is an explicit choice (but for its [kafka]: the demo
    # runs its own broker).
    return load_settings(options.config_path, environ={}, overrides=overrides, kafka=kafka)
