"""Logging: structlog and the stdlib `logging` (kafka-python, SQLAlchemy, Alembic) share one
renderer on `stream` (stderr by default): one JSON object per line (`format="json"`) or human
console lines (`"console"`), each with an ISO 8601 UTC `timestamp`, `level`, `logger` and
`event`. The `kafka` loggers are set to WARNING and rate-limited: at most one record per
(logger, message template) per 10 s; the next record that passes carries `suppressed`, the
number dropped since the previous one.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
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


KAFKA_WINDOW_SECONDS = 10.0


class KafkaRateLimit(logging.Filter):
    """Lets through at most one record per (logger, message template) per `window` seconds from
    the `kafka` loggers; the next one that passes gets `record.suppressed`, the count dropped."""

    # Bounds the memory of templates seen; kafka-python has far fewer than this.
    MAX_KEYS = 1000

    def __init__(
        self, window: float = KAFKA_WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.window = window
        self.clock = clock
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], float] = {}
        self._suppressed: dict[tuple[str, str], int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name != KAFKA_LOGGER and not record.name.startswith(KAFKA_LOGGER + "."):
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


class _Handler(logging.StreamHandler[TextIO]):
    """The handler configure_logging installs on the root logger (so it can replace its own)."""


def configure_logging(
    format: str = "json",
    level: str = "info",
    stream: TextIO | None = None,
    *,
    kafka_window: float = KAFKA_WINDOW_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Route structlog and stdlib logging to one renderer on `stream` (see the module docstring).

    Calling it again replaces the handler it installed before; other handlers on the root logger
    (a test runner's) are left alone. `kafka_window` and `clock` drive the kafka rate limit.
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
    handler.addFilter(KafkaRateLimit(kafka_window, clock))

    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(LEVELS[level.lower()])
    logging.getLogger(KAFKA_LOGGER).setLevel(max(logging.WARNING, LEVELS[level.lower()]))

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
