"""The demo's daemon in processes of its own: a scorer and a learner (`Daemons`).

In the demo's process the daemon's scorer, learner and Kafka clients would share one GIL with
the demo's producer, decision reader and calibrator; on a busy machine the learner then fell
behind the stream and the first threshold came late. The demo runs the daemon as the systemd
units do (`filterd@scorer`, `filterd@learner`), so that what it shows is what a deployment
does, each role with a GIL of its own: each role is a child
process, `python -m filterd.demo.daemon_process LOG_PATH REPORT_FD ROLE` (`DaemonProcess`),
on one store; the scorer sees what the learner learned at its next sync
(`intervals.sync_seconds`).

- its configuration comes pickled on its stdin, which then stays open: at EOF (`stop()`, or
  the demo gone) the daemon stops, and the process exits with the daemon's status;
- every `REPORT_SECONDS`, and once more at the end, it writes what the demo shows as one JSON
  line to the pipe REPORT_FD (`DaemonReport`: the learner's feedback outcomes, readiness, the
  scorer's statistics version, the error the daemon stopped with);
- its logs go to LOG_PATH; it runs in a session of its own (a Ctrl-C in the terminal reaches
  the demo, which stops it in order) and dies with the demo (Linux).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

import msgspec
import structlog

from filterd.daemon.supervisor import Daemon, StartupError, prepare_store
from filterd.demo.broker import die_with_parent
from filterd.observe.health import StatusBody
from filterd.observe.logs import configure_logging
from filterd.service.config import Config
from filterd.store.errors import StoreError

REPORT_SECONDS = 0.2
STOP_SECONDS = 30.0  # then SIGKILL


@dataclass(frozen=True)
class DaemonReport:
    """What the demo reads of its daemon."""

    feedback: dict[str, int] = field(default_factory=dict)  # outcome → records
    ready: bool = False
    readiness: StatusBody = field(
        default_factory=lambda: StatusBody(status="not ready", detail="starting")
    )
    model_version: float | None = None
    error: str = ""


class DaemonProcess:
    """Runs `Daemon(config, role, create_store=True)` in a child process."""

    def __init__(self, config: Config, log_path: Path, role: str = "all") -> None:
        self.config, self.log_path, self.role = config, log_path, role
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._last = DaemonReport()
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        read_end, write_end = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(self.log_path), str(write_end), self.role],
                stdin=subprocess.PIPE,
                pass_fds=(write_end,),
                start_new_session=True,
                # Safe with threads here: it only calls one pre-resolved C function.
                preexec_fn=die_with_parent(),  # noqa: PLW1509
            )
        finally:
            os.close(write_end)  # the child's now: EOF here once the child is gone
        reports = os.fdopen(read_end, "rb")
        self._reader = threading.Thread(
            target=self._read, args=(reports,), name="filterd-demo-daemon-reports", daemon=True
        )
        self._reader.start()
        assert self._process.stdin is not None
        self._process.stdin.write(pickle.dumps(self.config))
        self._process.stdin.flush()

    def _read(self, reports: IO[bytes]) -> None:
        with reports:
            for line in reports:
                report = DaemonReport(**json.loads(line))
                with self._lock:
                    self._last = report

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def exitcode(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def report(self) -> DaemonReport:
        """The newest report (the initial one until the first arrives). Thread-safe."""
        with self._lock:
            return self._last

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        """Ask the daemon to stop (EOF on its stdin) and wait for it; kill it after `timeout`
        seconds."""
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):  # the child is gone already
                process.stdin.close()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if self._reader is not None:
            self._reader.join(5.0)  # the last report, with the error the daemon stopped with


class Daemons:
    """The demo's daemon: a scorer and a learner, each a `DaemonProcess`, on one store (created
    here first, so that neither races the other to create it). The scorer serves the HTTP API
    and the metrics on `observe.metrics_port`, the learner its metrics on the next port (as
    config/systemd/learner.env sets it). One report stands for both (`report`)."""

    def __init__(self, config: Config, log_path: Path) -> None:
        observe = config.observe
        port = observe.metrics_port + 1 if observe.metrics_port else 0
        learner_config = msgspec.structs.replace(
            config,
            http=msgspec.structs.replace(config.http, enabled=False),
            observe=msgspec.structs.replace(observe, metrics_port=port),
        )
        self.config = config
        self.scorer = DaemonProcess(config, log_path, "scorer")
        self.learner = DaemonProcess(learner_config, log_path, "learner")
        self._error = ""  # why the store could not be made ready: nothing was started

    def start(self) -> None:
        """Create the store and its model if missing, then start both processes; a store that
        cannot be made ready starts neither, and `report` says why."""
        log = structlog.get_logger("filterd.demo")
        try:
            prepare_store(self.config, log, create=True, first_start=True).store.close()
        except (StartupError, StoreError) as error:
            self._error = f"the store: {error}"
            return
        self.learner.start()
        self.scorer.start()

    @property
    def alive(self) -> bool:
        return self.scorer.alive and self.learner.alive

    @property
    def exitcode(self) -> int | None:
        """The status of the first process found stopped (None while both run; 1 when the
        store could not be made ready)."""
        if self._error:
            return 1
        for process in (self.scorer, self.learner):
            if process.exitcode is not None:
                return process.exitcode
        return None

    def report(self) -> DaemonReport:
        """The learner's feedback outcomes, the scorer's statistics version, ready once both
        are (else the readiness of one that is not), each error named by its role."""
        scorer, learner = self.scorer.report(), self.learner.report()
        waiting = scorer if not scorer.ready else learner
        roles = (("scorer", scorer), ("learner", learner))
        errors = [self._error] if self._error else [f"{n}: {r.error}" for n, r in roles if r.error]
        return DaemonReport(
            feedback=learner.feedback,
            ready=scorer.ready and learner.ready,
            readiness=waiting.readiness,
            model_version=scorer.model_version,
            error="; ".join(errors),
        )

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        """Stop the scorer, then the learner (each as `DaemonProcess.stop`)."""
        self.scorer.stop(timeout)
        self.learner.stop(timeout)


def main(log_path: str, report_fd: int, role: str) -> int:
    """The child: run the daemon's `role` on the configuration read from stdin until stdin
    closes."""

    config = pickle.load(sys.stdin.buffer)
    with open(log_path, "a", encoding="utf-8") as log, os.fdopen(report_fd, "w") as reports:
        configure_logging("json", stream=log)
        try:
            daemon = Daemon(config, role=role, create_store=True)
        except Exception as exc:  # noqa: BLE001 - reported to the demo, which shows it
            _send(reports, DaemonReport(error=repr(exc)))
            return 1
        stopped = threading.Event()

        def stop_at_eof() -> None:
            # the raw descriptor: a thread blocked in a buffered read would abort the
            # interpreter's exit (it holds the buffer's lock)
            while os.read(sys.stdin.fileno(), 1 << 16):
                pass
            stopped.set()
            daemon.stop()

        def report_until_stopped() -> None:
            while not stopped.wait(REPORT_SECONDS):
                _send(reports, _report(daemon, ""))

        for target in (stop_at_eof, report_until_stopped):
            threading.Thread(target=target, daemon=True).start()
        error, status = "", 1
        try:
            status = daemon.run()
        except Exception as exc:  # noqa: BLE001 - reported to the demo, which shows it
            error = repr(exc)
        stopped.set()
        _send(reports, _report(daemon, error))
        return status


def _report(daemon: Daemon, error: str) -> DaemonReport:
    feedback: dict[str, int] = {}
    version: float | None = None
    for metric in daemon.metrics.registry.collect():
        for sample in metric.samples:
            if sample.name == "filterd_feedback_total" and sample.value:
                feedback[sample.labels["outcome"]] = int(sample.value)
            elif sample.name == "filterd_model_version":
                version = sample.value
    ready, readiness = daemon.health.ready()
    return DaemonReport(feedback, ready, readiness, version, error)


_send_lock = threading.Lock()


def _send(reports: IO[str], report: DaemonReport) -> None:
    with _send_lock, contextlib.suppress(OSError):  # the demo is gone
        reports.write(json.dumps(asdict(report)) + "\n")
        reports.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
