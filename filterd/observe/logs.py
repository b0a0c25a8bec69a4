"""Logging: structlog and the stdlib `logging` (kafka-python, SQLAlchemy, Alembic) share one
renderer on `stream` (stderr by default): one JSON object per line (`format="json"`) or human
console lines (`"console"`), each with an ISO 8601 UTC `timestamp`, `level`, `logger` and
`event`. The `kafka` loggers are set to WARNING. The `kafka` and `uvicorn` loggers (whose
records a broker outage or a client's bad requests repeat) are rate-limited: at most one record
per (logger, message template) per 10 s; the next record that passes carries `suppressed`, the
number dropped since the previous one. A few kafka-python messages that say nothing an
operator must act on are logged at a lower level (`KAFKA_DEMOTED`).

Warnings of filterd's own that would come once per record or per retry go through `Repeats`:
the first is logged, the rest counted into one line a minute.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

import structlog

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


KAFKA_LOGGER = "kafka"
ALEMBIC_LOGGER = "alembic"
RATE_LIMITED_LOGGERS = (KAFKA_LOGGER, "uvicorn")


RATE_LIMIT_SECONDS = 10.0


# kafka-python messages (by template) logged at another level. A consumer's LeaveGroup at close
# waits behind its own JoinGroup when a join is pending (at a stop during start-up or a
# rebalance; Tansu holds a join for about session_timeout_ms / 2), so it times out; the broker
# drops the member after session_timeout_ms anyway, and the consumer says so itself. A receive on
# a connection that another thread of the client has just closed (at a stop, or when a client
# drops its bootstrap connection) raises inside kafka-python, which logs it with a traceback at
# ERROR and reconnects if it still needs the connection: a warning, not an error of filterd's.
KAFKA_DEMOTED = {
    "LeaveGroup request failed: %s": logging.INFO,
    "%s: Error receiving network data closing socket": logging.WARNING,
}


def _from(record: logging.LogRecord, *loggers: str) -> bool:
    """Whether `record` comes from one of `loggers` or a child of one."""
    return any(record.name == name or record.name.startswith(name + ".") for name in loggers)


def _from_kafka(record: logging.LogRecord) -> bool:
    return _from(record, KAFKA_LOGGER)


class RateLimit(logging.Filter):
    """Lets through at most one record per (logger, message template) per `window` seconds from
    the RATE_LIMITED_LOGGERS; the next one that passes gets `record.suppressed`, the count
    dropped."""

    # Bounds the memory of templates seen; kafka-python and uvicorn have far fewer than this.
    MAX_KEYS = 1000

    def __init__(
        self, window: float = RATE_LIMIT_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.window = window
        self.clock = clock
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], float] = {}
        self._suppressed: dict[tuple[str, str], int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if not _from(record, *RATE_LIMITED_LOGGERS):
            return True
        key = (record.name, str(record.msg))
        now = self.clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.window:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return False
            self._last[key] = now
            suppressed = self._suppressed.pop(key, 0)
            if len(self._last) > self.MAX_KEYS:
                self._last = {
                    k: t
                    for k, t in self._last.items()
                    if now - t < self.window or k in self._suppressed
                }
        if suppressed:
            record.suppressed = suppressed
        return True


class KafkaDemote(logging.Filter):
    """Gives the kafka-python records of `KAFKA_DEMOTED` their level there, and drops them when
    the `kafka` logger's level is above it."""

    def filter(self, record: logging.LogRecord) -> bool:
        level = KAFKA_DEMOTED.get(str(record.msg))
        if level is None or not _from_kafka(record):
            return True
        record.levelno, record.levelname = level, logging.getLevelName(level)
        return logging.getLogger(KAFKA_LOGGER).isEnabledFor(level)


REPEAT_WINDOW_SECONDS = 60.0


@dataclass
class _Run:
    """The warnings of one (event, key) since the first was logged."""

    log: Any
    started: float
    fields: Mapping[str, Any]
    count: int = 0


class Repeats:
    """Logs a warning that repeats once per record or per retry at most once per `window`
    seconds for each event and key (a dead-letter reason, a store step): the first as given;
    those that follow within the window are counted, and `flush()` after the window logs one
    line with the same event and key, the fields of the last one, `repeated` (the count) and
    `window_seconds`. Call `flush()` now and then (the loops do, between polls) and at the end.
    Thread-safe."""

    def __init__(
        self, window: float = REPEAT_WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window, self.clock = window, clock
        self._lock = threading.Lock()
        self._runs: dict[tuple[str, tuple[tuple[str, Any], ...]], _Run] = {}

    def warning(
        self, log: Any, event: str, key: Mapping[str, Any] | None = None, **fields: Any
    ) -> None:
        """`log.warning(event, **key, **fields)` unless one with this event and key was logged
        less than `window` seconds ago."""
        self.flush()
        key = dict(key or {})
        run_key = (event, tuple(sorted(key.items())))
        with self._lock:
            run = self._runs.get(run_key)
            if run is not None:
                run.count += 1
                run.fields = {**key, **fields}
                return
            self._runs[run_key] = _Run(log, self.clock(), {**key, **fields})
        log.warning(event, **key, **fields)

    def flush(self, everything: bool = False) -> None:
        """Log the count of each run whose window is over (of every run, with `everything`)."""
        now = self.clock()
        with self._lock:
            over = {
                k: run
                for k, run in self._runs.items()
                if everything or now - run.started >= self.window
            }
            for k in over:
                del self._runs[k]
        for (event, _), run in over.items():
            if run.count:
                run.log.warning(
                    event,
                    **run.fields,
                    repeated=run.count,
                    window_seconds=round(now - run.started, 1),
                )


@contextlib.contextmanager
def progress(log: Any, event: str, every: float, **fields: Any) -> Iterator[dict[str, Any]]:
    """Logs `event` (with `fields`) on entry, then again with the seconds elapsed every `every`
    seconds until the block ends: a long step (loading a large model) does not leave the log
    silent. The block may put how far it got in the dict it is given; each line carries it."""
    log.info(event, **fields)
    started = time.monotonic()
    done = threading.Event()
    so_far: dict[str, Any] = {}

    def tick() -> None:
        while not done.wait(every):
            log.info(event, **fields, **so_far, seconds=round(time.monotonic() - started))

    ticker = threading.Thread(target=tick, name="filterd-progress", daemon=True)
    ticker.start()
    try:
        yield so_far
    finally:
        done.set()
        ticker.join()


class _Handler(logging.StreamHandler[TextIO]):
    """The handler configure_logging installs on the root logger (so it can replace its own)."""


def configure_logging(
    format: str = "json",
    level: str = "info",
    stream: TextIO | None = None,
    *,
    window: float = RATE_LIMIT_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Route structlog and stdlib logging to one renderer on `stream` (see the module docstring).

    Calling it again replaces the handler it installed before; other handlers on the root logger
    (a test runner's) are left alone. `window` and `clock` drive the rate limit.
    """
    if format not in ("json", "console"):
        raise ValueError(f"log format must be json or console, not {format!r}")
    if level.lower() not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
    stream = sys.stderr if stream is None else stream
    timestamper = structlog.processors.TimeStamper(fmt="iso", utc=True)
    shared: list[Any] = [
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        timestamper,
    ]
    if format == "json":
        renderer: list[Any] = [
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ]
    else:
        renderer = [structlog.dev.ConsoleRenderer(colors=_isatty(stream))]
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder(allow=["suppressed"])],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderer],
    )
    handler = _Handler(stream)
    handler.setFormatter(formatter)
    # On the handler, not the kafka logger: a logger's filters miss its children's records.
    handler.addFilter(KafkaDemote())
    handler.addFilter(RateLimit(window, clock))

    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(LEVELS[level.lower()])
    logging.getLogger(KAFKA_LOGGER).setLevel(max(logging.WARNING, LEVELS[level.lower()]))
    # Alembic narrates each migration step at INFO; filterd logs the outcome itself
    # ("database schema created", "store ready" with the revision).
    logging.getLogger(ALEMBIC_LOGGER).setLevel(max(logging.WARNING, LEVELS[level.lower()]))

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Loggers bound at import time, before this call, must still follow the configuration.
        cache_logger_on_first_use=False,
    )


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
