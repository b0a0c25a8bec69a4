"""`filterd run`: the scorer and the learner as threads of one process (or either alone).

    daemon = Daemon(config, role="all")
    exit_status = daemon.run()      # blocks; daemon.stop() from a signal handler ends it

Start-up: metrics/health server, then the store (its schema is created on an empty database
and must be current otherwise; the model is created from `[model]` if it does not exist — an
existing model keeps the spec it was created with), then one consumer loop per role. A store
that cannot be reached at start-up is retried until it can, or until stopped.

Exit status: 0 after a stop request (in-flight batches finished and committed), 3 when the
dead-letter guard tripped, 1 when a loop failed otherwise.
"""

from __future__ import annotations

import threading
import time

import structlog
from sqlalchemy import Engine, select
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    IntegrityError,
    NoSuchModuleError,
    OperationalError,
    SQLAlchemyError,
)
from structlog.typing import FilteringBoundLogger

from filterd.daemon.guard import DeadLetterFlood, DeadLetterGuard
from filterd.daemon.learner import Learner
from filterd.daemon.loop import Loop, LoopSettings
from filterd.daemon.model_state import ModelState, tokenizer_of
from filterd.daemon.monitor import Monitor
from filterd.daemon.recent import RecentMessages
from filterd.daemon.scorer import Scorer
from filterd.kafka.publisher import Publisher
from filterd.kafka.settings import size_limits
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.observe.server import ObserveServer
from filterd.service.config import Config, masked_url
from filterd.store import database
from filterd.store.database import error_detail
from filterd.store.learning import create_model
from filterd.store.schema import ModelRow

ROLES = ("all", "scorer", "learner")
EXIT_OK, EXIT_FAILED, EXIT_FLOOD = 0, 1, 3
SCHEMA_WAIT_SECONDS = 15.0


class StartupError(RuntimeError):
    """The daemon cannot start as configured; the message says what to do."""


class Daemon:
    def __init__(self, config: Config, role: str = "all", metrics: Metrics | None = None,
                 health: Health | None = None) -> None:  # fmt: skip
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        self.config, self.role = config, role
        self.metrics, self.health = metrics or Metrics(), health or Health()
        self.log: FilteringBoundLogger = structlog.get_logger("filterd").bind(
            model=config.model.name
        )
        self._stop = threading.Event()
        self._status = EXIT_OK
        self.server: ObserveServer | None = None

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """Finish the in-flight batches, commit them, and return from `run`."""
        if not self._stop.is_set():
            self.log.info("stopping: finishing the in-flight batches")
        self._stop.set()

    def run(self) -> int:
        config = self.config
        if config.observe.metrics_port:
            self.server = ObserveServer(
                self.metrics, self.health, config.observe.metrics_port, config.observe.metrics_host
            ).start()
        self.log.info("starting", role=self.role, config=config.public(),
                      database=masked_url(database.database_url(config.database.url)),
                      metrics_port=self.server.port if self.server else None)  # fmt: skip
        self.metrics.not_ready.set(1)
        try:
            engine = self._store()
            if engine is None:
                return EXIT_OK
            threads = [threading.Thread(target=self._guarded, args=(loop,), name=f"filterd-{loop.role}")
                       for loop in self._loops(engine)]  # fmt: skip
            for thread in threads:
                thread.start()
            for thread in threads:
                while thread.is_alive():  # short joins: signal handlers run in this thread
                    thread.join(0.5)
            engine.dispose()
        finally:
            if self.server is not None:
                self.server.stop()
        self.log.info("stopped", exit_status=self._status)
        return self._status

    def _loops(self, engine: Engine) -> list[Loop]:
        config = self.config
        recent = RecentMessages(
            config.recent.max_messages, config.recent.max_bytes, config.recent.ttl_seconds
        )

        # the consumers' fetch sizes follow limits.max_bytes; [kafka] has the last word
        kafka = {**size_limits(config.limits.max_bytes), **config.kafka}

        def common(topic: str, group: str, max_records: int) -> LoopSettings:
            d = config.dead_letter
            return {"kafka": kafka, "topic": topic, "group": group, "max_records": max_records,
                        "publisher": Publisher(config.kafka), "guard": DeadLetterGuard(d.max_ratio, d.window, d.max_consecutive),
                        "dead_letter_topic": config.topics.dead_letter, "payload_limit": d.payload_bytes,
                        "metrics": self.metrics, "health": self.health, "log": self.log}  # fmt: skip

        loops: list[Loop] = []
        state = ModelState(
            engine, config, self.metrics, self.health, self.log
        )  # one model for both roles
        if self.role in ("all", "scorer"):
            loops.append(Scorer(state, recent, config.topics.decisions, config.limits.max_bytes,
                                **common(config.topics.messages, config.groups.scorer, config.batches.poll_records)))  # fmt: skip
        if self.role in ("all", "learner"):
            monitor = Monitor(engine, config, state, self.metrics, self.log)
            loops.append(Learner(engine, config.model.name, tokenizer_of(config), recent, monitor, config.model.labels,
                                 config.model.holdout_fraction, config.limits.max_bytes,
                                 **common(config.topics.feedback, config.groups.learner, config.batches.feedback)))  # fmt: skip
        return loops

    def _guarded(self, loop: Loop) -> None:
        try:
            loop.run(self._stop)
        except DeadLetterFlood as error:
            self.log.error("dead-letter guard tripped: stopping without committing the batch", role=loop.role,
                           error=str(error))  # fmt: skip
            self._fail(EXIT_FLOOD)
        except Exception:
            self.log.exception("loop failed", role=loop.role)
            self._fail(EXIT_FAILED)

    def _fail(self, status: int) -> None:
        self._status = max(self._status, status)
        self._stop.set()

    def _store(self) -> Engine | None:
        """The store's engine once it is reachable, migrated and has the model (None if stopped).

        An outage (the server down, unreachable, or the file locked) is retried; a store that
        answers but cannot be used (a file that is not a database, a bad URL, no permission)
        is a StartupError at once: waiting would not mend it."""
        delay = 0.5
        while not self._stop.is_set():
            try:
                return prepare_store(self.config, self.log)
            except (ArgumentError, NoSuchModuleError) as error:
                raise StartupError(f"bad database URL: {error}") from None
            except SQLAlchemyError as error:
                if isinstance(error, DatabaseError) and not isinstance(error, OperationalError):
                    raise StartupError(f"the store cannot be used: {error_detail(error)}") from None
                detail = error_detail(error)
                self.health.set_ready("model store", False, detail)
                self.log.warning(
                    "store unreachable at start-up, retrying", error=detail, retry_seconds=delay
                )
                self._stop.wait(delay)
                delay = min(2 * delay, 10.0)
        return None


def prepare_store(config: Config, log: FilteringBoundLogger) -> Engine:
    """Migrate an empty database, check a used one is current, create the model if missing."""
    url = config.database.url
    revision = database.current(url)
    if revision is None:
        try:
            database.upgrade(url)
            log.info("database schema created", revision=database.head())
        except SQLAlchemyError:
            if database.current(url) is None:  # not a daemon starting beside us: a real failure
                raise
        revision = database.current(url)
    deadline = time.monotonic() + SCHEMA_WAIT_SECONDS
    while revision != database.head() and time.monotonic() < deadline:
        time.sleep(0.5)  # a daemon starting beside us may be migrating an empty database right now
        revision = database.current(url)
    if revision != database.head():
        raise StartupError(f"the database schema is at revision {revision}, this filterd needs "
                           f"{database.head()}: run `filterd db upgrade`")  # fmt: skip
    engine = database.connect(url)
    m = config.model
    with engine.connect() as conn:
        exists = (
            conn.execute(select(ModelRow.id).where(ModelRow.name == m.name)).first() is not None
        )
    if not exists:
        spec = m.spec
        try:
            create_model(engine, m.name, spec)
            log.info("model created", spec=str(spec))
        except IntegrityError:
            pass  # another daemon created it a moment ago
    return engine
