"""The store's centre: what code outside `filterd.store` calls, and all it calls.

`Store` is one database, opened from its URL (`Store.open`): it hands out a handle per model
(`model`, `create_model`) and does what concerns the whole store: its schema (`revision`,
`upgrade`, `downgrade`), the models' names and summaries, imports, and the record batches
consumer groups could not decode. `ModelStore` is one model, found once by name: every operation
on the model goes through it, by the id found then (a model deleted meanwhile is an
UnknownModel where the model's row is read or locked). `ModelTransaction` is several writes to
one model in one transaction (`ModelStore.transaction`): a learner's batch, a scorer's record
of its decisions.

Plain methods calling the concept modules (models, learning, ledger, audit, parking, review,
decided, entities, lists, thresholds, drift, sync, expiry, report, backup, undecodable,
database), each in `translated()`: they raise the store's errors (`filterd.store.errors`), never
SQLAlchemy's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import IO, TYPE_CHECKING, Unpack

from sqlalchemy import Connection, Engine

from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Statistics
from filterd.entities.lists import ListEntry
from filterd.entities.memory import EntityEvent
from filterd.entities.rules import Rule
from filterd.service.review import ReviewItem
from filterd.store import (
    audit,
    backup,
    database,
    decided,
    downgrades,
    drift,
    entities,
    expiry,
    forgetting,
    learning,
    lists,
    models,
    parking,
    report,
    review,
    sync,
    thresholds,
    undecodable,
)
from filterd.store import rules as stored_rules  # beside ModelStore.rules
from filterd.store.errors import UnknownModel, translated
from filterd.store.forgetting import Forgotten, Selector
from filterd.store.labels import Event, LabelledTokens
from filterd.store.learning import Applied
from filterd.store.models import ModelRef, ModelRows
from filterd.store.parking import Parked
from filterd.store.report import ModelReport, ModelSummary
from filterd.store.rules import RuleChange
from filterd.store.undecodable import Undecodable
from filterd.tokenize.limits import TokenizerConfig

if TYPE_CHECKING:  # scipy's statistics: not imported for a type
    from filterd.evaluation.calibration import Threshold


class Store:
    """One database of models (`open`); `close` when done. `engine` is for the store's own
    modules, and for tests that look at the tables."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str | None = None) -> Store:
        """The store at `url` (else $FILTERD_DATABASE_URL, else the default SQLite file).
        Connects at first use: opening touches nothing; BadDatabaseURL for a URL that cannot
        be used."""
        with translated():
            return cls(database.connect(url))

    @property
    def url(self) -> str:
        """The database's URL, in full (`filterd.service.config.masked_url` hides a password)."""
        return self.engine.url.render_as_string(hide_password=False)

    def close(self) -> None:
        """Close the connections held in the pool."""
        self.engine.dispose()

    # --- models -----------------------------------------------------------------------------

    def model(self, name: str) -> ModelStore:
        """The handle of model `name`; UnknownModel, naming the models held, if there is none."""
        with translated(), self.engine.connect() as conn:
            found = models.find_model(conn, name)
            if found is None:
                raise UnknownModel.among(name, models.model_names(conn))
        return ModelStore(self, found)

    def create_model(self, name: str, spec: ModelSpec, seed: int | None = None) -> ModelStore:
        """Add model `name` (its token-key seed random unless given) and return its handle;
        ModelExists if there is one of that name."""
        with translated():
            models.create_model(self.engine, name, spec, seed)
        return self.model(name)

    def model_names(self) -> list[str]:
        """The names of the models, in alphabetical order."""
        with translated(), self.engine.connect() as conn:
            return models.model_names(conn)

    def model_summaries(self, min_docs: int) -> list[ModelSummary]:
        """Every model in a few figures (`filterd model list`)."""
        with translated():
            return report.model_summaries(self.engine, min_docs)

    def import_model(self, lines: IO[str], name: str | None = None) -> str:
        """Recreate an exported model (`ModelStore.export`), as `name` if given; returns its
        name. ModelExists if the name is taken, ValueError for lines that are no export."""
        with translated():
            return backup.import_model(self.engine, lines, name)

    # --- the schema -------------------------------------------------------------------------

    def revision(self) -> str | None:
        """The schema revision of the database (None: never migrated, or no SQLite file yet;
        asking creates none)."""
        with translated():
            return database.current(self.engine)

    def upgrade(self, revision: str = "head") -> None:
        """Migrate the schema up to `revision` (a SQLite file is created if there is none)."""
        with translated():
            database.upgrade(self.url, revision)

    def downgrade(self, revision: str) -> None:
        """Migrate the schema down to `revision` ("base": no filterd tables)."""
        with translated():
            database.downgrade(self.url, revision)

    def downgrade_drops(self, revision: str) -> downgrades.Drops:
        """The tables and columns a downgrade to `revision` drops; UnknownRevision for one it
        cannot go to."""
        with translated():
            return downgrades.downgrade_drops(self.engine, revision)

    def row_counts(self, tables: list[str]) -> dict[str, int]:
        """The rows of each of `tables` the database has (those it lacks are left out)."""
        with translated():
            return downgrades.row_counts(self.engine, tables)

    @staticmethod
    def revisions() -> list[str]:
        """The schema revisions this version of filterd knows, oldest first."""
        with translated():
            return database.revisions()

    @staticmethod
    def head() -> str | None:
        """The newest schema revision this version of filterd knows."""
        with translated():
            return database.head()

    # --- record batches no consumer could decode (per consumer group, not per model) ---------

    def find_undecodable(
        self, group: str, topic: str, partition: int, offset: int
    ) -> Undecodable | None:
        """The batch reported where `group` stands at `offset` of `topic`[`partition`], if any."""
        with translated():
            return undecodable.find(self.engine, group, topic, partition, offset)

    def report_undecodable(self, batch: Undecodable) -> Undecodable:
        """Record `batch` unless recorded already; returns it as stored."""
        with translated():
            return undecodable.report(self.engine, batch)

    def request_skip(
        self, group: str, topic: str, partition: int, offset: int, by: str, reason: str
    ) -> Undecodable:
        """Record an operator's request to skip the batch reported at `offset`
        (`filterd.store.undecodable.request_skip`)."""
        with translated():
            return undecodable.request_skip(
                self.engine, group, topic, partition, offset, by, reason
            )

    def mark_skipped(self, batch: Undecodable) -> None:
        """Record that a daemon moved its group past `batch`."""
        with translated():
            undecodable.mark_skipped(self.engine, batch)

    def undecodable_batches(self, group: str | None = None) -> list[Undecodable]:
        """The batches reported (of `group`, if given), newest first."""
        with translated():
            return undecodable.list_batches(self.engine, group)


class ModelStore:
    """One model of a store (`Store.model`): its id, name, spec and token-key seed found once;
    every operation on the model, by that id."""

    def __init__(self, store: Store, ref: ModelRef) -> None:
        self.store, self.ref = store, ref
        self._engine = store.engine

    @property
    def id(self) -> int:
        return self.ref.id

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def spec(self) -> ModelSpec:
        return self.ref.spec

    # --- learning ---------------------------------------------------------------------------

    def learn(
        self,
        items: Sequence[LabelledTokens],
        holdout_fraction: float = 0.1,
        now: datetime | None = None,
        target: str | None = None,
    ) -> Applied:
        """Apply a batch of feedback in one transaction (`filterd.store.learning`); `target`:
        a fusion model's decision target, the class its logistic steps are about."""
        with self.transaction() as writing:
            return writing.learn(items, holdout_fraction, now or datetime.now(UTC), target)

    def forget(
        self,
        selector: Selector,
        target: str | None = None,
        operator: str | None = None,
        dry_run: bool = False,
        now: datetime | None = None,
        max_token_length: int = TokenizerConfig.max_token_length,
    ) -> Forgotten:
        """Unlearn the labels `selector` selects, in one transaction
        (`filterd.store.forgetting`); `target` as for `learn`; `dry_run`: only what would be
        forgotten; `max_token_length`: the tokenizer's, for a sender's tokens."""
        with translated(), self._engine.begin() as conn:
            return forgetting.forget(
                conn,
                self.ref,
                selector,
                now or datetime.now(UTC),
                target,
                operator,
                dry_run,
                max_token_length,
            )

    @contextmanager
    def transaction(self) -> Iterator[ModelTransaction]:
        """Writes to the model in one transaction, committed when the block ends (rolled back
        if it raises)."""
        with translated(), self._engine.begin() as conn:
            yield ModelTransaction(conn, self.ref)

    def events(
        self,
        *,
        message_id: str | None = None,
        analyst: str | None = None,
        since: datetime | None = None,
        limit: int | None = 100,
    ) -> Iterator[Event]:
        """The audit trail's events, newest first, read as they are iterated
        (`filterd.store.audit.read_events`)."""
        with translated():
            yield from audit.read_events(
                self._engine,
                self.id,
                message_id=message_id,
                analyst=analyst,
                since=since,
                limit=limit,
            )

    def prune_events(
        self, days: int, now: datetime | None = None, pause: float = 0.0, dry_run: bool = False
    ) -> int:
        """Delete the label events applied more than `days` days ago (0: none)."""
        with translated():
            return expiry.prune_events(self._engine, self.id, days, now, pause, dry_run)

    # --- parked feedback --------------------------------------------------------------------

    def claim_parked(self, now: datetime, next_try_at: datetime, limit: int) -> list[Parked]:
        """Up to `limit` parked records due by `now`, rescheduled to `next_try_at`
        (`filterd.store.parking.claim_due`)."""
        with translated():
            return parking.claim_due(self._engine, self.ref, now, next_try_at, limit)

    def count_parked(self) -> int:
        """How many feedback records are parked."""
        with translated():
            return parking.count_parked(self._engine, self.id)

    # --- the review queue -------------------------------------------------------------------

    def review_items(self, **filters: Unpack[review.Filters]) -> list[ReviewItem]:
        """The queued items `filters` select, in their order (`filterd.store.review.Filters`)."""
        with translated():
            return review.list_items(self._engine, self.id, **filters)

    def review_item(self, item_id: int) -> ReviewItem | None:
        """Queued item `item_id` with its tokens; None if there is no such item."""
        with translated():
            return review.get_item(self._engine, self.id, item_id)

    def review_tokens(self, message_ids: Sequence[str]) -> dict[str, list[str]]:
        """The tokens the queue keeps of `message_ids`, by message id (those queued)."""
        with translated(), self._engine.connect() as conn:
            return review.tokens_of(conn, self.id, message_ids)

    def trim_review(self, max_items: int) -> int:
        """Keep at most `max_items` queued items: labelled ones leave first, then the oldest."""
        with translated():
            return review.trim(self._engine, self.id, max_items)

    def prune_review(
        self, days: int, now: datetime | None = None, *, pause: float = 0.0, dry_run: bool = False
    ) -> int:
        """Delete the items queued more than `days` days ago (0: none)."""
        with translated():
            return review.prune_items(
                self._engine, self.id, days, now, pause=pause, dry_run=dry_run
            )

    # --- the entity memory ------------------------------------------------------------------

    def entity_events_written_since(
        self, since: datetime, marks: entities.ReadMarks | None = None
    ) -> list[tuple[int, EntityEvent]]:
        """The entity events written since `since` (less `entities.SYNC_OVERLAP`), in time
        order; with `marks`, only the other writers' rows not read yet
        (`entities.events_written_since`)."""
        with translated(), self._engine.connect() as conn:
            return entities.events_written_since(conn, self.id, since, marks)

    def entity_events_since(self, at: float) -> list[tuple[int, EntityEvent]]:
        """The entity events from the stream's time `at` on, in time order."""
        with translated(), self._engine.connect() as conn:
            return entities.events_since(conn, self.id, at)

    def latest_entity_event(self) -> float | None:
        """The stream's time of the newest entity event (None: none)."""
        with translated(), self._engine.connect() as conn:
            return entities.latest_at(conn, self.id)

    def entity_labels_written_since(self, since: datetime) -> list[entities.EntityLabelled]:
        with translated(), self._engine.connect() as conn:
            return entities.labels_written_since(conn, self.id, since)

    def entity_labels_since(self, at: float) -> list[entities.EntityLabelled]:
        with translated(), self._engine.connect() as conn:
            return entities.labels_since(conn, self.id, at)

    def decided_entities(self, message_ids: Sequence[str]) -> dict[str, str]:
        """The entity record of each message of `message_ids` decided with one (its text)."""
        with translated(), self._engine.connect() as conn:
            return decided.decided_entities(conn, self.id, message_ids)

    def prune_entities(
        self, events_window: float, labels_window: float, pause: float = 0.0, dry_run: bool = False
    ) -> tuple[int, int]:
        """Delete entity events and labels past their windows (`filterd.store.entities.prune`)."""
        with translated():
            return entities.prune(
                self._engine, self.id, events_window, labels_window, pause, dry_run
            )

    def entity_messages(
        self, key: str, value: str, limit: int = 200
    ) -> list[entities.EntityMessage]:
        """The entity's newest messages, with their ids (`filterd.store.entities`)."""
        with translated(), self._engine.connect() as conn:
            return entities.entity_messages(conn, self.id, key, value, limit)

    def latest_labels(self, message_ids: Sequence[str]) -> dict[str, str]:
        """The label last received for each of `message_ids` that has one."""
        with translated(), self._engine.connect() as conn:
            return audit.latest_labels(conn, self.id, message_ids)

    def entity_counts(self, key: str, value: str, now: float, windows: Sequence[int]) -> list[int]:
        """The entity's messages within each of `windows` (seconds) back from `now`."""
        with translated(), self._engine.connect() as conn:
            return entities.entity_counts(conn, self.id, key, value, now, windows)

    def entity_labelled(self, key: str, value: str) -> int:
        """The entity's messages labelled the target class, within the label window."""
        with translated(), self._engine.connect() as conn:
            return entities.labelled_count(conn, self.id, key, value)

    # --- allow, block and review lists ------------------------------------------------------

    def list_entries(self, key: str | None = None, value: str | None = None) -> list[ListEntry]:
        """The entities on the lists (of `key`, and `value`, if given), expired ones included."""
        with translated(), self._engine.connect() as conn:
            return lists.entries(conn, self.id, key, value)

    def put_on_list(self, entry: ListEntry, now: datetime | None = None) -> None:
        """Put `entry` on its list, replacing the entity's entry; the change is recorded."""
        with translated(), self._engine.begin() as conn:
            lists.put(conn, self.id, entry, now or datetime.now(UTC))

    def remove_from_list(
        self, key: str, value: str, analyst: str | None, now: datetime | None = None
    ) -> ListEntry | None:
        """Take the entity off its list (the change recorded); the entry removed, or None."""
        with translated(), self._engine.begin() as conn:
            return lists.remove(conn, self.id, key, value, analyst, now or datetime.now(UTC))

    def list_changes(self, limit: int | None = 100) -> list[lists.ListChange]:
        """The changes to the lists, newest first."""
        with translated():
            return lists.changes(self._engine, self.id, limit)

    # --- rules ------------------------------------------------------------------------------

    def rules(self, on_error: Callable[[str, str], None] | None = None) -> list[Rule]:
        """The rules, by name (`filterd.store.rules.rules`: one that no longer parses raises,
        or is told to `on_error` and left out)."""
        with translated(), self._engine.connect() as conn:
            return stored_rules.rules(conn, self.id, on_error)

    def put_rule(self, rule: Rule, now: datetime | None = None) -> None:
        """Add `rule`, replacing the rule of its name; the change is recorded."""
        with translated(), self._engine.begin() as conn:
            stored_rules.put(conn, self.id, rule, now or datetime.now(UTC))

    def remove_rule(
        self, name: str, analyst: str | None, now: datetime | None = None
    ) -> RuleChange | None:
        """Remove the rule `name` (the change recorded, and returned), or None if none."""
        with translated(), self._engine.begin() as conn:
            return stored_rules.remove(conn, self.id, name, analyst, now or datetime.now(UTC))

    def rule_changes(self, limit: int | None = 100) -> list[RuleChange]:
        """The changes to the rules, newest first."""
        with translated():
            return stored_rules.changes(self._engine, self.id, limit)

    # --- where decided messages are ---------------------------------------------------------

    def where_decided(self, message_ids: Sequence[str]) -> dict[str, decided.Coordinates]:
        """The (partition, offset) of each message of `message_ids` decided (and not pruned)."""
        with translated(), self._engine.connect() as conn:
            return decided.where_decided(conn, self.id, message_ids)

    def decided_tokens(self, message_ids: Sequence[str]) -> dict[str, list[str]]:
        """The tokens kept with the decided messages of `message_ids` that have them."""
        with translated(), self._engine.connect() as conn:
            return decided.decided_tokens(conn, self.id, message_ids)

    def prune_decided(self, before: datetime, pause: float = 0.0, dry_run: bool = False) -> int:
        """Delete the coordinates of the messages decided before `before`."""
        with translated():
            return decided.prune_decided(self._engine, self.id, before, pause, dry_run)

    # --- thresholds and their windows -------------------------------------------------------

    def latest_threshold(self, target_class: str) -> thresholds.ThresholdVersion | None:
        """The threshold in force for `target_class`, None if there is none yet."""
        with translated():
            return thresholds.latest_threshold(self._engine, self.id, target_class)

    def threshold_history(self, limit: int = 20) -> list[thresholds.ThresholdVersion]:
        """The latest `limit` threshold versions, newest first, all target classes."""
        with translated():
            return thresholds.threshold_history(self._engine, self.id, limit)

    def write_threshold(
        self,
        target_class: str,
        threshold: Threshold,
        auc: float | None,
        window_start: datetime | None,
        window_end: datetime | None,
        created_by: str,
        **written: Unpack[thresholds.Written],
    ) -> thresholds.ThresholdVersion:
        """Write the next threshold version for `target_class` (`filterd.store.thresholds`)."""
        with translated():
            return thresholds.write_threshold(
                self._engine,
                self.ref,
                target_class,
                threshold,
                auc,
                window_start,
                window_end,
                created_by,
                **written,
            )

    def holdout_window(
        self,
        window: timedelta | None = None,
        last: int | None = None,
        now: datetime | None = None,
    ) -> thresholds.HoldoutWindow:
        """The holdout items of a time window, or the last `last`, or all."""
        with translated():
            return thresholds.holdout_window(self._engine, self.id, window, last, now)

    def prequential_window(
        self,
        target_class: str,
        window: timedelta | None = None,
        last: int | None = None,
        now: datetime | None = None,
    ) -> thresholds.PrequentialWindow:
        """The scores feedback got on arrival, of a time window, or the last `last`, or all."""
        with translated():
            return thresholds.prequential_window(
                self._engine, self.id, target_class, window, last, now
            )

    # --- drift ------------------------------------------------------------------------------

    def record_scores(
        self,
        target_class: str,
        scored: Sequence[drift.Scored],
        keep: int,
        now: datetime | None = None,
        trim: bool = True,
    ) -> None:
        """Store the scores feedback got before it was learned (`filterd.store.drift`)."""
        with translated():
            drift.record_scores(self._engine, self.id, target_class, scored, keep, now, trim)

    def delivered_since(self, target_class: str, since: datetime, tau: float) -> drift.Delivered:
        """What τ delivered on the feedback scored after `since`."""
        with translated():
            return drift.delivered_since(self._engine, self.id, target_class, since, tau)

    def drift_report(self, target_class: str, window: int = 5000) -> drift.DriftReport:
        """The rolling figures over the newest `window` scored feedback records."""
        with translated():
            return drift.drift_report(self._engine, self.id, target_class, window)

    def drift_series(
        self, target_class: str, window: int = 5000, buckets: int = 20
    ) -> list[drift.DriftPoint]:
        """The same records in `buckets` consecutive groups, oldest first."""
        with translated():
            return drift.drift_series(self._engine, self.id, target_class, window, buckets)

    # --- statistics -------------------------------------------------------------------------

    def load(
        self, sparse: bool = False, on_rows: Callable[[int], None] | None = None
    ) -> tuple[Statistics, int]:
        """The statistics and the change number they reflect (`filterd.store.sync.load`)."""
        with translated():
            return sync.load(self._engine, self.ref, sparse, on_rows)

    def sync(
        self, stats: Statistics, since: int | None, on_rows: Callable[[int], None] | None = None
    ) -> int:
        """Bring `stats` up to date from change `since`; returns the change to pass next."""
        with translated():
            return sync.sync(self._engine, self.ref, stats, since, on_rows)

    def prune_tokens(
        self,
        unseen_days: int,
        max_count: int,
        now: datetime | None = None,
        pause: float = 0.0,
        dry_run: bool = False,
    ) -> expiry.Pruned:
        """Expire the rare tokens unseen for a while (`filterd.store.expiry.prune`)."""
        with translated():
            return expiry.prune(self._engine, self.ref, unseen_days, max_count, now, pause, dry_run)

    # --- the model as a whole ---------------------------------------------------------------

    def report(self, min_docs: int, distinct_tokens: int | None = None) -> ModelReport:
        """What `filterd model stats` shows of the model, drift aside."""
        with translated():
            return report.model_report(self._engine, self.ref, min_docs, distinct_tokens)

    def class_documents(self) -> list[tuple[str, int]]:
        """The classes with their learned documents, in class order."""
        with translated():
            return report.class_documents(self._engine, self.id)

    def rows(self) -> ModelRows:
        """The model's change number and its rows per table."""
        with translated(), self._engine.connect() as conn:
            return models.model_rows(conn, self.ref)

    def delete(self, seq: int) -> dict[str, int]:
        """Delete the model with all its rows if still at change `seq` (`rows`), else
        ModelChanged; returns the rows deleted per table."""
        with translated(), self._engine.begin() as conn:
            return models.delete_model(conn, self.ref, seq)

    def export(self, out: IO[str]) -> int:
        """Write the model to `out` as JSON lines (`filterd.store.backup`); returns the rows."""
        with translated():
            return backup.export_model(self._engine, self.ref, out)


class ModelTransaction:
    """Writes to one model in one transaction (`ModelStore.transaction`). The model's row lock,
    which learning takes first, is taken before the first write that needs it, once."""

    def __init__(self, conn: Connection, ref: ModelRef) -> None:
        self._conn, self.ref = conn, ref
        self._locked = False

    def lock(self) -> None:
        """Take the model's row lock, if not taken yet (writers of the model queue for it)."""
        if not self._locked:
            models.lock_model(self._conn, self.ref)
            self._locked = True

    def learn(
        self,
        items: Sequence[LabelledTokens],
        holdout_fraction: float,
        now: datetime,
        target: str | None = None,
    ) -> Applied:
        """Apply a batch of feedback received at `now` (`filterd.store.learning.apply`), the lock
        taken first; `target` as for `ModelStore.learn`."""
        applied = learning.apply(self._conn, self.ref, items, holdout_fraction, now, target)
        self._locked = True
        return applied

    def record_events(self, events: Sequence[Event], now: datetime | None = None) -> None:
        """Append events of labels that learned nothing (parked, expired) to the audit trail."""
        audit.record_events(self._conn, self.ref.id, events, now)

    def park(self, parked: Sequence[Parked], now: datetime, next_try_at: datetime) -> None:
        """Park feedback until its message is known (`filterd.store.parking.park`)."""
        self.lock()
        parking.park(self._conn, self.ref.id, parked, now, next_try_at)

    def unpark(self, message_ids: Sequence[str]) -> int:
        """Delete what is parked for `message_ids`, whose newer feedback was applied."""
        self.lock()
        return parking.unpark(self._conn, self.ref.id, message_ids)

    def release(self, claimed: Sequence[Parked]) -> list[str]:
        """Delete claimed records (`filterd.store.parking.release`); returns the message ids of
        those deleted, which the caller may act on."""
        self.lock()
        return parking.release(self._conn, self.ref.id, claimed)

    def record_decided(
        self,
        decided_messages: Sequence[tuple[str, int, int]],
        now: datetime,
        entity_records: Mapping[str, str] | None = None,
        tokens: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Upsert the (message id, partition, offset) of decided messages, with the entity
        record of those in `entity_records` and the tokens of those in `tokens` (by id)."""
        decided.record_decided(
            self._conn, self.ref.id, decided_messages, now, entity_records, tokens
        )

    def record_entity_events(
        self, events: Sequence[entities.DecidedEvent], now: datetime, writer: int | None = None
    ) -> None:
        """Upsert entity events, each with its message's id and decision if told
        (`filterd.store.entities.DecidedEvent`), as written by `writer`
        (`filterd.store.entities.ReadMarks`)."""
        entities.record_events(self._conn, self.ref.id, events, now, writer)

    def record_entity_labels(
        self, labelled: Sequence[entities.EntityLabelled], unlabelled: Sequence[int], now: datetime
    ) -> None:
        """Upsert target labels of entities' messages; delete those of the messages (id hashes)
        `unlabelled`, relabelled out of the target class."""
        entities.unlabel(self._conn, self.ref.id, unlabelled)
        entities.record_labels(self._conn, self.ref.id, labelled, now)

    def queue_review(self, items: Sequence[ReviewItem], now: datetime) -> None:
        """Queue decisions for an analyst's label."""
        review.queue_items(self._conn, self.ref.id, items, now)
