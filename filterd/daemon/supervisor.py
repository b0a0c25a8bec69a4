"""`filterd run`: the scorer and the learner as threads of one process (or either alone).

    daemon = Daemon(config, role="all")
    exit_status = daemon.run()      # blocks; daemon.stop() from a signal handler ends it

Start-up: metrics/health server, then the store (its schema must be current; a database
without one is refused unless `create_store`, which creates it; on the first start, when the
store holds no model yet, the model is created from `[model]`; a store that holds others but
not this one is refused, naming them — an existing model keeps the spec it was created with),
then one consumer loop per role. A store that cannot be reached at start-up is retried until it
can, or until stopped. With `[http] enabled`, the HTTP API (`filterd.web`) listens once the
loops are made, checking messages with the scorer's model, and stops with the daemon. Logged:
"starting", "store ready", "loading the model" … "model loaded", "joining group" and "group
joined" per role, then "ready" once every loop has its partitions and the model is loaded.

A stop request ends `run` within `STOP_SECONDS` whatever the broker's state (the loops bound
their waits, docs/operations.md); a loop still busy then (a store that does not answer) is left
behind without committing, so its records are read again at the next start.

Exit status: 0 after a stop request (in-flight batches finished and committed), 3 when the
dead-letter guard tripped, 1 when a loop failed otherwise.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import structlog
from structlog.typing import FilteringBoundLogger

from filterd.daemon.entity_state import EntityState
from filterd.daemon.guard import DeadLetterFlood, DeadLetterGuard
from filterd.daemon.learner import Learner
from filterd.daemon.loop import Loop, LoopSettings
from filterd.daemon.model_state import ModelState
from filterd.daemon.monitor import Monitor
from filterd.daemon.override_state import OverrideState
from filterd.daemon.recent import RecentMessages
from filterd.daemon.resolver import Resolver
from filterd.daemon.scorer import Scorer
from filterd.kafka.fetch import KafkaFetcher
from filterd.kafka.processor import STOP_PUBLISH_SECONDS
from filterd.kafka.publisher import publisher_of
from filterd.kafka.settings import codecs_missing, size_limits
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.observe.server import CannotListen, ObserveServer, start_observe_server
from filterd.service.config import Config, masked_url
from filterd.service.decide import tokenizer_of
from filterd.store import database
from filterd.store.errors import (
    BadDatabaseURL,
    ModelExists,
    StoreError,
    StoreUnavailable,
    UnknownModel,
)
from filterd.store.handle import ModelStore, Store

if TYPE_CHECKING:  # the workbench's routes and pages: imported only with `[http] enabled`
    from filterd.web.serving import Api

ROLES = ("all", "scorer", "learner")
EXIT_OK, EXIT_FAILED, EXIT_FLOOD = 0, 1, 3
SCHEMA_WAIT_SECONDS = 15.0
STOP_SECONDS = 3.5  # from a stop request to `run` returning, at the most (the process exits after)
# bounds each read-back of messages for feedback by id: the learner does not poll meanwhile, and
# a stop waits for it
FETCH_SECONDS = 2.0


class StartupError(RuntimeError):
    """The daemon cannot start as configured; the message says what to do."""


class Daemon:
    def __init__(
        self,
        config: Config,
        role: str = "all",
        metrics: Metrics | None = None,
        health: Health | None = None,
        create_store: bool = False,
    ) -> None:
        """`create_store`: create the schema in a database without one (else a StartupError)."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        self.config, self.role, self.create_store = config, role, create_store
        self.metrics, self.health = metrics or Metrics(), health or Health()
        self.log: FilteringBoundLogger = structlog.get_logger("filterd").bind(
            model=config.model.name
        )
        self._stop = threading.Event()
        self._stop_requested = float("inf")
        self._status = EXIT_OK
        self.server: ObserveServer | None = None
        self.state: ModelState | None = None  # the model both roles share, once the loops are made
        self.api: Api | None = None  # the HTTP API, when [http] enabled
        self.entities: EntityState | None = None  # the scorer's entity memory, when configured
        self.overrides: OverrideState | None = None  # the scorer's lists and rules

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """Finish the in-flight batches, commit them, and return from `run`."""
        if not self._stop.is_set():
            self.log.info("stopping: finishing the in-flight batches")
        self._request_stop()

    def _request_stop(self) -> None:
        self._stop_requested = min(self._stop_requested, time.monotonic())
        self._stop.set()

    def run(self) -> int:
        config = self.config
        started = time.monotonic()
        self.server = self._serve()
        self.log.info(
            "starting",
            role=self.role,
            config=config.public(),
            database=masked_url(database.database_url(config.database.url)),
            metrics_port=self.server.port if self.server else None,
        )
        if missing := codecs_missing():
            self.log.warning(
                "codec libraries missing: a record batch compressed with one of these codecs "
                "stops its partition until it is skipped; install filterd with its dependencies",
                codecs=missing,
            )
        self.metrics.not_ready.set(1)
        self.metrics.target_recall.set(config.decision.target_recall)
        try:
            model = self._store()
            if model is None:
                return EXIT_OK
            loops = self._loops(model)
            self.api = self._api(model)
            # daemon threads: a loop still waiting on the store after STOP_SECONDS is left behind
            threads = [
                threading.Thread(
                    target=self._guarded, args=(loop,), name=f"filterd-{loop.role}", daemon=True
                )
                for loop in loops
            ]
            for thread in threads:
                thread.start()
            self._wait(threads, loops, started)
            model.store.close()
        finally:
            if self.api is not None:
                self.api.stop()  # the requests in flight finish first (filterd.web.server)
            if self.server is not None:
                self.server.stop()
        self.log.info("stopped", exit_status=self._status)
        return self._status

    def _serve(self) -> ObserveServer | None:
        """The /metrics, /healthz and /readyz server, listening (None when the port is 0)."""
        try:
            return start_observe_server(self.config.observe, self.metrics, self.health)
        except CannotListen as error:
            raise StartupError(str(error)) from None

    def _api(self, model: ModelStore) -> Api | None:
        """The HTTP API, listening, when `[http] enabled` (None otherwise): it checks messages
        with the scorer's own model and entity memory, so that a check and the messages topic
        agree."""
        http = self.config.http
        if not http.enabled or self.state is None:
            return None
        from filterd.web.serving import Api

        api = Api(
            self.config,
            model,
            self.state,
            tokenizer_of(self.config),
            self.log,
            self.metrics,
            self.entities.peek if self.entities is not None else None,
            self.overrides.overridden if self.overrides is not None else None,
        )
        try:
            return api.start()
        except OSError as error:
            api.stop()
            raise StartupError(
                f"cannot listen on {http.host}:{http.port} (http.host, http.port): "
                f"{error.strerror or error}"
            ) from None

    def _wait(self, threads: list[threading.Thread], loops: list[Loop], started: float) -> None:
        """Until the loops end (or STOP_SECONDS after a stop request); logs "ready" once they
        have their partitions and the model is loaded. Short waits: signal handlers run in
        this thread."""
        announced = False
        while any(thread.is_alive() for thread in threads):
            state = self.state
            if (
                not announced
                and not self._stop.is_set()
                and all(loop.joined for loop in loops)
                and state is not None
                and state.loaded
            ):
                announced = True
                not_ready = state.decider.not_ready if state.decider is not None else None
                self.log.info(
                    "ready", seconds=round(time.monotonic() - started, 1), model_not_ready=not_ready
                )
            if time.monotonic() - self._stop_requested > STOP_SECONDS:
                busy = [thread.name for thread in threads if thread.is_alive()]
                self.log.warning(
                    "stopping without waiting for the loops: "
                    "what they did not commit is read again at the next start",
                    loops=busy,
                    seconds=STOP_SECONDS,
                )
                return
            for thread in threads:
                thread.join(0.1)

    def _loops(self, model: ModelStore) -> list[Loop]:
        config = self.config
        recent = RecentMessages(
            config.recent.max_messages, config.recent.max_bytes, config.recent.ttl_seconds
        )

        # the consumers' fetch sizes follow limits.max_bytes; [kafka] has the last word
        kafka = {**size_limits(config.limits.max_bytes), **config.kafka}

        def common(topic: str, group: str, max_records: int) -> LoopSettings:
            d = config.dead_letter
            return {
                "kafka": kafka,
                "topic": topic,
                "group": group,
                "max_records": max_records,
                "publisher": publisher_of(
                    config.kafka, stop=self._stop, stop_grace=STOP_PUBLISH_SECONDS
                ),
                "guard": DeadLetterGuard(d.max_ratio, d.window, d.max_consecutive),
                "dead_letter_topic": config.topics.dead_letter,
                "payload_limit": d.payload_bytes,
                "metrics": self.metrics,
                "health": self.health,
                "log": self.log,
                "store": model.store,
            }

        loops: list[Loop] = []
        # one model for both roles
        self.state = state = ModelState(model, config, self.metrics, self.health, self.log)
        entities = config.entities.spec(config.decision.target_class)
        if self.role in ("all", "scorer") and entities.enabled:
            self.entities = EntityState(model, entities, self.log)
        if self.role in ("all", "scorer"):
            self.overrides = OverrideState(model, entities, self.log)
        if self.role in ("all", "scorer"):
            loops.append(
                Scorer(
                    state,
                    recent,
                    config.topics.decisions,
                    config.limits.max_bytes,
                    config.review,
                    self.entities,
                    config.feedback.keep_tokens_bytes,
                    self.overrides,
                    **common(
                        config.topics.messages, config.groups.scorer, config.batches.poll_records
                    ),
                )
            )
        if self.role in ("all", "learner"):
            monitor = Monitor(model, config, state, self.metrics, self.log)
            tokenizer = tokenizer_of(config)
            resolver = Resolver(
                model,
                recent,
                config.topics.messages,
                tokenizer,
                config.limits.max_bytes,
                lambda: KafkaFetcher(kafka, FETCH_SECONDS),
                self.log,
            )
            loops.append(
                Learner(
                    model,
                    tokenizer,
                    resolver,
                    monitor,
                    config.model.labels,
                    config.model.holdout_fraction,
                    config.limits.max_bytes,
                    config.feedback.resolve_within,
                    config.feedback.retry_seconds,
                    entities if entities.enabled else None,
                    **common(
                        config.topics.feedback, config.groups.learner, config.batches.feedback
                    ),
                )
            )
        return loops

    def _guarded(self, loop: Loop) -> None:
        try:
            loop.run(self._stop)
        except DeadLetterFlood as error:
            self.log.error(
                "dead-letter guard tripped: stopping without committing the batch",
                role=loop.role,
                error=str(error),
            )
            self._fail(EXIT_FLOOD)
        except Exception:
            self.log.exception("loop failed", role=loop.role)
            self._fail(EXIT_FAILED)

    def _fail(self, status: int) -> None:
        self._status = max(self._status, status)
        self._request_stop()

    def _store(self) -> ModelStore | None:
        """The model's handle once the store is reachable, migrated and has the model (None if
        stopped).

        An outage (the server down, unreachable, or the file locked) is retried; a store that
        answers but cannot be used (a file that is not a database, a bad URL, no permission)
        is a StartupError at once: waiting would not mend it."""
        delay = 0.5
        while not self._stop.is_set():
            try:
                return prepare_store(self.config, self.log, self.create_store, first_start=True)
            except UnknownModel as error:
                raise StartupError(str(error)) from None
            except BadDatabaseURL as error:
                raise StartupError(f"bad database URL: {error}") from None
            except StoreError as error:
                if not isinstance(error, StoreUnavailable):
                    raise StartupError(f"the store cannot be used: {error}") from None
                detail = str(error)
                self.health.set_ready("model store", False, detail)
                self.log.warning(
                    "store unreachable at start-up, retrying", error=detail, retry_seconds=delay
                )
                self._stop.wait(delay)
                delay = min(2 * delay, 10.0)
        return None


def prepare_store(
    config: Config, log: FilteringBoundLogger, create: bool = False, first_start: bool = False
) -> ModelStore:
    """The handle of model `model.name`, once the store's schema is checked current and the
    store holds the model (else an UnknownModel naming those it holds); with `first_start`
    (`filterd run`), that model created from `[model]` when the store holds none yet. With
    `create`, migrate a database that has no filterd schema yet (else refuse it: a mistyped URL
    must not start an empty store). The store is closed again if this fails."""
    store = Store.open(config.database.url)
    try:
        return _prepared(store, config, log, create, first_start)
    except BaseException:
        store.close()
        raise


def _prepared(
    store: Store, config: Config, log: FilteringBoundLogger, create: bool, first_start: bool
) -> ModelStore:
    shown_url = masked_url(store.url)
    revision = store.revision()
    if revision is None and not create:
        raise StartupError(
            f"{shown_url}: no filterd store here: run "
            "`filterd db upgrade --db URL` first, or start with --create-store"
        )
    if revision is None:
        try:
            store.upgrade()
            log.info("database schema created", revision=store.head())
        except StoreError:
            if store.revision() is None:  # not a daemon starting beside us: a real failure
                raise
        revision = store.revision()
    # With `create`, a daemon starting beside us may be migrating the empty database right now;
    # without it, an older schema is one nobody is upgrading: said at once.
    deadline = time.monotonic() + (SCHEMA_WAIT_SECONDS if create else 0.0)
    while revision != store.head() and time.monotonic() < deadline:
        time.sleep(0.5)
        revision = store.revision()
    if revision != store.head():
        if revision not in store.revisions():
            raise StartupError(
                f"the database schema is at revision {revision}, which this filterd "
                f"does not know (its newest: {store.head()}): upgrade filterd"
            )
        raise StartupError(
            f"the database schema is at revision {revision}, this filterd needs "
            f"{store.head()}: run `filterd db upgrade`"
        )
    m = config.model
    names = store.model_names()
    if m.name not in names:
        if names or not first_start:  # a mistyped name must not start an empty model
            raise UnknownModel.among(m.name, names)
        spec = m.spec
        try:
            store.create_model(m.name, spec)
            log.info("model created", spec=str(spec))
        except ModelExists:
            pass  # another daemon created it a moment ago
    log.info("store ready", database=shown_url, revision=revision)
    return store.model(m.name)
