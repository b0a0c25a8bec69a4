"""`filterd run` as a real process against the session's broker and a real database.

daemon = start_daemon(db_url)            # a `filterd run` child process, its own config file
produce(kafka_config, topics["messages"], [message(...) ...])
decisions = read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= n)
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import jsonschema
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from filterd.bayes.model import ModelSpec
from filterd.daemon.loop import Loop
from filterd.demo.broker import free_port
from filterd.evaluation.synth import SynthConfig, generate
from filterd.service.config import Config
from filterd.service.config import load as load_config
from filterd.service.decide import Source
from filterd.service.records import schemas
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens
from filterd.tokenize import Tokenizer

VALIDATORS = {
    name.split(".")[0]: jsonschema.Draft202012Validator(schema)
    for name, schema in schemas().items()
}


class Consumed(Source, Protocol):
    """A record read back from a topic (kafka-python's ConsumerRecord, which is untyped): where
    it was read (`Source`) and what it holds."""

    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes: ...
    @property
    def headers(self) -> list[tuple[str, bytes]]: ...


def valid(kind: str, value: bytes | str) -> dict[str, Any]:
    """The record, after checking it against its JSON Schema in schemas/."""
    record: dict[str, Any] = json.loads(value)
    VALIDATORS[kind].validate(record)
    return record


def message(i: int, text: str = "hello there", prefix: str = "m") -> bytes:
    return json.dumps({"id": f"{prefix}{i}", "text": text}).encode()


def feedback(message_id: str, label: str, text: str | None = None) -> bytes:
    record = {"message_id": message_id, "label": label}
    if text is not None:
        record["text"] = text
    return json.dumps(record).encode()


def produce(
    kafka_config: dict[str, Any],
    topic: str,
    values: Sequence[bytes | None],
    keys: list[str] | None = None,
) -> None:
    producer = KafkaProducer(
        bootstrap_servers=kafka_config["bootstrap_servers"],
        enable_idempotence=False,
        linger_ms=5,
        max_request_size=20_000_000,
    )
    for i, value in enumerate(values):
        producer.send(topic, value=value, key=None if keys is None else keys[i].encode())
    producer.flush()
    producer.close()


def read_all(
    kafka_config: dict[str, Any],
    topic: str,
    until: Callable[[list[Consumed]], bool] = lambda records: False,
    timeout: float = 60.0,
) -> list[Consumed]:
    """Every record of `topic` from the beginning, read until `until(records)` or `timeout` s."""
    consumer = KafkaConsumer(
        bootstrap_servers=kafka_config["bootstrap_servers"], enable_auto_commit=False
    )
    partitions = [
        TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])
    ]
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    records: list[Consumed] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not until(records):
        for batch in consumer.poll(timeout_ms=200).values():
            records.extend(batch)
    consumer.close()
    return records


def ids_of(decisions: list[Consumed]) -> list[str]:
    return [json.loads(r.value)["message_id"] for r in decisions]


class DaemonProcess:
    """`filterd run` in a child process, with a metrics port and its log in a file."""

    def __init__(
        self,
        config_path: Path,
        role: str,
        log_path: Path,
        *options: str,
        env: dict[str, str] | None = None,
    ) -> None:
        self.config_path, self.role, self.log_path = config_path, role, log_path
        self.options = options  # more `filterd run` options
        self.env = env  # the process's environment (default: this one's)
        self.port = int(json.loads(config_path.with_suffix(".json").read_text())["port"])
        self.process: subprocess.Popen[bytes] | None = None
        self.terminated = False  # sent SIGTERM by `terminate`

    def start(self) -> "DaemonProcess":
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "filterd",
                    "run",
                    "--config",
                    str(self.config_path),
                    "--role",
                    self.role,
                    *self.options,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        return self

    def started(self) -> "subprocess.Popen[bytes]":
        """The child process; an error before `start`."""
        assert self.process is not None, "the daemon was not started"
        return self.process

    def signal(self, signum: int) -> None:
        self.started().send_signal(signum)

    def wait(self, timeout: float = 30.0) -> int:
        return self.started().wait(timeout)

    def terminate(self) -> None:
        """SIGTERM, once: a second signal would make it exit at once, not cleanly."""
        if self.process is not None and self.process.poll() is None and not self.terminated:
            self.terminated = True
            self.process.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        self.terminate()
        if self.process is not None:
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.port}{path}", timeout=2
            ) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def metric(self, name: str, **labels: str) -> float:
        """The value of one sample of /metrics (0 when absent)."""
        wanted = name + (
            "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else ""
        )
        _, text = self.get("/metrics")
        for line in text.splitlines():
            if line.startswith(wanted + " "):
                return float(line.split()[-1])
        return 0.0

    def wait_for(
        self, condition: Callable[[], object], timeout: float = 60.0, what: str = "condition"
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except (urllib.error.URLError, ConnectionError):
                pass
            if self.started().poll() is not None:
                raise AssertionError(
                    f"daemon exited ({self.started().returncode}) while waiting for {what}:\n"
                    f"{self.log()}"
                )
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}:\n{self.log()[-3000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def write_config(
    directory: Path,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    db_url: str,
    **sections: dict[str, Any],
) -> Path:
    """A filterd.toml for one daemon (and a side file with its metrics port)."""
    port = free_port()
    values: dict[str, dict[str, Any]] = {
        "kafka": dict(kafka_config.items()),
        "topics": topics,
        "groups": {
            "scorer": f"scorer-{topics['messages']}",
            "learner": f"learner-{topics['messages']}",
        },
        "database": {"url": db_url},
        "model": {"min_docs": 5},
        "intervals": {"sync_seconds": 0.5, "threshold_reload_seconds": 0.5},
        "observe": {"metrics_port": port, "log_format": "json"},
    }
    for section, overrides in sections.items():
        values.setdefault(section, {}).update(overrides)
    lines = []
    for section, items in values.items():
        lines.append(f"[{section}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in items.items()]
    path = directory / f"filterd-{port}.toml"
    path.write_text("\n".join(lines) + "\n")
    path.with_suffix(".json").write_text(json.dumps({"port": port}))
    return path


class StartDaemon(Protocol):
    """`start_daemon(db_url, ...)`: a `filterd run` child process on this test's topics."""

    def __call__(
        self,
        db_url: str,
        role: str = "all",
        config: Path | None = None,
        create_store: bool = True,
        env: dict[str, str] | None = None,
        **sections: dict[str, Any],
    ) -> DaemonProcess: ...


@pytest.fixture
def start_daemon(
    tmp_path: Path, kafka_config: dict[str, Any], topics: dict[str, str]
) -> Iterator[StartDaemon]:
    """Starts `filterd run` processes on this test's topics (creating the store unless told not
    to); stops them at the end."""
    started: list[DaemonProcess] = []

    def start(
        db_url: str,
        role: str = "all",
        config: Path | None = None,
        create_store: bool = True,
        env: dict[str, str] | None = None,
        **sections: dict[str, Any],
    ) -> DaemonProcess:
        path = config or write_config(tmp_path, kafka_config, topics, db_url, **sections)
        options = ["--create-store"] if create_store else []
        daemon = DaemonProcess(
            path, role, tmp_path / f"daemon-{len(started)}.log", *options, env=env
        ).start()
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:  # all at once: each takes a while to finish its batches
        daemon.terminate()
    for daemon in started:
        daemon.stop()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'filterd.db'}"


os.environ.setdefault("PYTHONUNBUFFERED", "1")


def run_until(loop: Loop, done: Callable[[], object], timeout: float = 30.0) -> None:
    """Run `loop` in a thread until `done()` holds (or fail), then stop it as SIGTERM does."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def target() -> None:
        try:
            loop.run(stop)
        except BaseException as error:  # noqa: BLE001 - handed to the test thread
            errors.append(error)

    thread = threading.Thread(target=target)
    thread.start()
    waited = threading.Event()
    for _ in range(int(timeout / 0.02)):
        if done() or errors:
            break
        waited.wait(0.02)
    stop.set()
    thread.join(timeout)
    assert not thread.is_alive(), "the loop did not stop"
    if errors:
        raise errors[0]
    assert done(), "the loop did not finish its work in time"


@pytest.fixture
def config(tmp_path: Path) -> Config:
    """A SQLite store with model "default" (MNB) learned from 200 synthetic messages, and the
    configuration that names it: for the loops run in process (test_loop.py, test_parking.py)."""
    url = f"sqlite:///{tmp_path / 'filterd.db'}"
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"))
    tokenize = Tokenizer()
    train = generate(SynthConfig(n_messages=200, seed=1))
    model.learn(
        [LabelledTokens(r["id"], r["label"], tokenize(r).tokens) for r in train],
        holdout_fraction=0,
    )
    store.close()
    overrides = {"database.url": url, "model.variant": "mnb", "model.min_docs": 5}
    return load_config(None, environ={}, overrides=overrides)
