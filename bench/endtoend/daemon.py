"""The daemon under measure: `python -m filterd run` as a child process, with its own
configuration file, topics and log, and its metrics read over HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from endtoend.metrics import METRICS_EVERY, Samples, parse_samples
from endtoend.options import KafkaSettings
from filterd.bayes.model import ModelSpec
from filterd.demo.broker import die_with_parent, free_port

# Shorter group timeouts than the defaults, so that a group forms in seconds: Tansu makes a join
# wait about session_timeout_ms / 2.
GROUP_CONFIG: KafkaSettings = {
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 1000,
    "max_poll_interval_ms": 10000,
}
MB = 1024 * 1024

# what a configuration value can be (a TOML value)
TomlValue = bool | int | float | str | Sequence["TomlValue"] | Mapping[str, "TomlValue"]


def toml(value: TomlValue) -> str:
    """`value` as TOML (an inline table for a mapping).

    >>> toml({"enabled": True, "port": 8080, "users": {"analyst": "x"}, "labels": ["ham"]})
    '{"enabled" = true, "port" = 8080, "users" = {"analyst" = "x"}, "labels" = ["ham"]}'
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(toml(v) for v in value) + "]"


@dataclass
class Topics:
    """The four topics of one daemon (or of a scorer and a learner that share them)."""

    messages: str
    decisions: str
    feedback: str
    dead_letter: str

    @classmethod
    def fresh(cls, tag: str) -> Topics:
        """New names, unique to this run."""
        run = uuid.uuid4().hex[:6]
        messages, decisions, feedback, dead_letter = (
            f"e2e-{tag}-{kind}-{run}"
            for kind in ("messages", "decisions", "feedback", "dead-letter")
        )
        return cls(messages, decisions, feedback, dead_letter)

    def names(self) -> list[str]:
        return [self.messages, self.decisions, self.feedback, self.dead_letter]


@dataclass
class Daemon:
    """`python -m filterd run --config FILE --role ROLE`, its log in a file, its metrics by HTTP."""

    directory: Path
    name: str
    role: str
    bootstrap: str
    topics: Topics
    db_url: str
    model: str
    spec: ModelSpec  # the store's model's, so that the daemon tokenizes for what it scores
    poll_records: int = 500
    kafka: KafkaSettings = field(default_factory=dict)  # more [kafka] client settings
    # the workbench's users ([http] enabled on `http_port`, --workbench); None: no [http]
    http_users: Mapping[str, str] | None = None
    labels: Sequence[str] = ("ham", "spam")  # the model's
    # more configuration, by section, under what the run sets itself
    settings: Mapping[str, Mapping[str, TomlValue]] = field(default_factory=dict)
    http_port: int = field(default_factory=free_port)
    port: int = field(default_factory=free_port)  # of /metrics
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    # (time.time(), metrics) of every scrape of wait()
    scrapes: list[tuple[float, Samples]] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.name}.log"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError(f"daemon {self.name} was not started")
        return self.process.pid

    def config(self) -> str:
        """The daemon's configuration file: defaults but for what this run sets."""
        sections: dict[str, Mapping[str, TomlValue]] = {
            "kafka": {"bootstrap_servers": self.bootstrap, **GROUP_CONFIG, **self.kafka},
            "topics": {
                "messages": self.topics.messages,
                "decisions": self.topics.decisions,
                "feedback": self.topics.feedback,
                "dead_letter": self.topics.dead_letter,
            },
            "groups": {"scorer": f"e2e-scorer-{self.name}", "learner": f"e2e-learner-{self.name}"},
            "database": {"url": self.db_url},
            "model": {
                "name": self.model,
                "variant": self.spec.variant,
                "select": str(self.spec.selection),
                "labels": list(self.labels),
            },
            "batches": {"poll_records": self.poll_records},
            "observe": {"metrics_port": self.port, "log_format": "json"},
        }
        if self.http_users is not None:
            sections["http"] = {"enabled": True, "port": self.http_port, "users": self.http_users}
        for section, values in self.settings.items():
            sections[section] = {**values, **sections.get(section, {})}
        lines = []
        for section, values in sections.items():
            lines.append(f"[{section}]")
            lines += [f"{key} = {toml(value)}" for key, value in values.items()]
        if self.spec.params:
            lines.append("[model.params]")
            lines += [f"{key} = {toml(value)}" for key, value in self.spec.params.items()]
        return "\n".join(lines) + "\n"

    def start(self) -> Daemon:
        config = self.directory / f"{self.name}.toml"
        config.write_text(self.config())
        env = {k: v for k, v in os.environ.items() if not k.startswith("FILTERD_")}
        command = [
            sys.executable,
            "-m",
            "filterd",
            "run",
            "--config",
            str(config),
            "--role",
            self.role,
            "--create-store",  # each run starts on a new database
        ]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=die_with_parent(),  # noqa: PLW1509 (only prctl, in the child)
            )
        self.started_at = time.time()
        return self

    def check_alive(self) -> None:
        if self.process is None or self.process.poll() is not None:
            tail = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-15:])
            raise RuntimeError(
                f"daemon {self.name} exited ({self.process and self.process.returncode}):\n{tail}"
            )

    def metrics(self) -> Samples:
        """Every sample of /metrics; {} while the server is not up."""
        url = f"http://127.0.0.1:{self.port}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                body: bytes = response.read()
        except OSError:
            return {}
        return parse_samples(body.decode())

    def wait(
        self, predicate: Callable[[Samples], bool], timeout: float, what: str
    ) -> tuple[float, Samples]:
        """Poll the metrics every METRICS_EVERY s until `predicate(metrics)`; returns (time.time(),
        metrics). Every scrape is kept in `scrapes`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            m = self.metrics()
            if m:
                self.scrapes.append((time.time(), m))
                if predicate(m):
                    return self.scrapes[-1]
            time.sleep(METRICS_EVERY)
        raise TimeoutError(
            f"daemon {self.name}: {what} not reached within {timeout:.0f} s (log: {self.log_path})"
        )

    def memory(self) -> dict[str, float]:
        """VmRSS and VmHWM of the process, in MB."""
        out = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024 / MB
        return out

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 30 s; the exit status (None: never started)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode
