"""The feedback ledger and the holdout: the label each message id was learned with, and its
token counts to unlearn it by (`FeedbackLedger`), or the label it was held out with, kept for
calibration instead (`Holdout`).

`Plan` decides, for each item of a batch against both tables, what it does (`Outcome`): a
message id already learned with the same label changes nothing; with a different label the old
contribution is unlearned and the new one learned, except that an automatic label never
overrides an analyst's; a new id is learned, unless it falls in the holdout fraction
(deterministic by id, `in_holdout`), in which case it is held out. `write_ledger` writes what
the plan decided, in the batch's transaction (`filterd.store.learning`).
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from sqlalchemy import Connection, select, update

from filterd.bayes.features import DocBatch
from filterd.service.records import id_digest
from filterd.store.bulk import insert_rows
from filterd.store.labels import LabelledTokens, Outcome
from filterd.store.schema import FeedbackLedger, Holdout
from filterd.store.sql import among, as_utc, id_chunks

IntArray = npt.NDArray[np.int64]


class Contribution(NamedTuple):
    """What one message adds to the statistics (sign +1, learned) or takes back (−1,
    unlearned): its label, token keys and counts, and for an unlearned one the logistic step
    it took (`filterd.bayes.logistic`; None for one being learned: its step is yet to come)."""

    message_id: str
    label: str
    keys: IntArray
    counts: IntArray
    sign: int
    step: int | None = None


def in_holdout(message_id: str, fraction: float) -> bool:
    """Whether a message id belongs to the holdout share (stable across processes and runs)."""
    return id_digest(message_id) < fraction * 2**64


def pack(keys: IntArray, counts: IntArray) -> bytes:
    """Keys then counts as little-endian int64 (`unpack` reverses it)."""
    # two tobytes() instead of np.stack, which would copy both arrays once more for every message
    return keys.astype("<i8", copy=False).tobytes() + counts.astype("<i8", copy=False).tobytes()


def unpack(data: bytes) -> tuple[IntArray, IntArray]:
    keys, counts = np.frombuffer(data, dtype="<i8").reshape(2, -1)
    return keys.astype(np.int64), counts.astype(np.int64)


class Plan:
    """Per-message decisions of one batch, against the ledger and the holdout table."""

    def __init__(self, conn: Connection, model_id: int, message_ids: list[str]) -> None:
        unique = list(dict.fromkeys(message_ids))
        self.ledger: dict[str, tuple[str, str, bytes, int]] = {}
        self.holdout: dict[str, tuple[str, str]] = {}
        for chunk in id_chunks(conn, unique):
            ledger_rows = conn.execute(
                select(
                    FeedbackLedger.message_id,
                    FeedbackLedger.label,
                    FeedbackLedger.source,
                    FeedbackLedger.tokens,
                    FeedbackLedger.step,
                ).where(
                    FeedbackLedger.model_id == model_id, among(FeedbackLedger.message_id, chunk)
                )
            )
            self.ledger.update(
                {m: (label, source, tokens, step) for m, label, source, tokens, step in ledger_rows}
            )
            holdout_rows = conn.execute(
                select(Holdout.message_id, Holdout.label, Holdout.source).where(
                    Holdout.model_id == model_id, among(Holdout.message_id, chunk)
                )
            )
            self.holdout.update({m: (label, source) for m, label, source in holdout_rows})
        self.existing = set(self.ledger)
        self.existing_holdout = set(self.holdout)
        self.ledger_writes: dict[str, tuple[str, str, bytes, int]] = {}
        self.holdout_writes: dict[str, tuple[str, str, bytes, datetime | None]] = {}
        self.contributions: list[Contribution] = []
        self._learning: set[str] = set()  # ids with a contribution learned in this batch

    def decide(
        self, i: int, item: LabelledTokens, batch: DocBatch, fraction: float
    ) -> tuple[Outcome, str | None]:
        """What item `i` (of `batch`) does, and the label its message had before (None: new)."""
        keys = batch.keys[batch.indptr[i] : batch.indptr[i + 1]]
        counts = batch.counts[batch.indptr[i] : batch.indptr[i + 1]]
        known = self.ledger.get(item.message_id) or self.holdout.get(item.message_id)
        outcome: Outcome = "learned"
        previous = None if known is None else known[0]
        if known is not None:
            label, source = known[0], known[1]
            if label == item.label:
                if (
                    source == "auto" and item.source == "analyst"
                ):  # confirmed: now an analyst's label
                    self._set_source(item.message_id, "analyst")
                return "duplicate", previous
            if source == "analyst" and item.source == "auto":
                return "kept_analyst_label", previous
            outcome = "relabelled"
            if item.message_id in self.holdout:
                self._hold(item, keys, counts)
                return outcome, previous
            if item.message_id in self._learning:
                # learned earlier in this batch: that contribution is dropped rather than taken
                # back, as its logistic step is not known until the batch's steps are taken
                self.contributions = [
                    c
                    for c in self.contributions
                    if not (c.message_id == item.message_id and c.sign > 0)
                ]
            else:
                _, _, old_tokens, old_step = self.ledger[item.message_id]
                old_keys, old_counts = unpack(old_tokens)
                self.contributions.append(
                    Contribution(item.message_id, label, old_keys, old_counts, -1, old_step)
                )
        elif in_holdout(item.message_id, fraction):
            self._hold(item, keys, counts)
            return "held_out", previous
        packed = pack(keys, counts)
        self.contributions.append(Contribution(item.message_id, item.label, keys, counts, +1))
        self._learning.add(item.message_id)
        self.ledger[item.message_id] = (item.label, item.source, packed, 0)
        self.ledger_writes[item.message_id] = (item.label, item.source, packed, 0)
        return outcome, previous

    def record_steps(self, steps: IntArray) -> None:
        """The logistic step of each contribution (in order): each learned one's is recorded
        with its label."""
        for contribution, s in zip(self.contributions, steps.tolist()):
            if contribution.sign > 0:
                m = contribution.message_id
                label, source, packed, _ = self.ledger_writes[m]
                self.ledger[m] = self.ledger_writes[m] = (label, source, packed, s)

    def _hold(self, item: LabelledTokens, keys: IntArray, counts: IntArray) -> None:
        """Keep `item` in the holdout (for calibration) instead of learning it."""
        self.holdout[item.message_id] = (item.label, item.source)
        packed = pack(keys, counts)
        self.holdout_writes[item.message_id] = (item.label, item.source, packed, item.ts)

    def _set_source(self, message_id: str, source: str) -> None:
        if message_id in self.ledger:
            label, _, packed, step = self.ledger[message_id]
            self.ledger[message_id] = self.ledger_writes[message_id] = (label, source, packed, step)
        else:
            label, _ = self.holdout[message_id]
            self.holdout[message_id] = (label, source)
            _, _, packed, ts = self.holdout_writes.get(message_id, (label, source, b"", None))
            self.holdout_writes[message_id] = (label, source, packed, ts)


def write_ledger(conn: Connection, model_id: int, now: datetime, plan: Plan) -> None:
    fresh = [
        {
            "model_id": model_id,
            "message_id": m,
            "label": label,
            "source": source,
            "tokens": tokens,
            "step": step,
            "learned_at": now,
        }
        for m, (label, source, tokens, step) in plan.ledger_writes.items()
        if m not in plan.existing
    ]
    insert_rows(conn, FeedbackLedger.__table__, fresh)
    for m, (label, source, tokens, step) in plan.ledger_writes.items():
        if m in plan.existing:
            conn.execute(
                update(FeedbackLedger)
                .where(FeedbackLedger.model_id == model_id, FeedbackLedger.message_id == m)
                .values(label=label, source=source, tokens=tokens, step=step, learned_at=now)
            )
    new_holdout = [
        {
            "model_id": model_id,
            "message_id": m,
            "label": label,
            "source": source,
            "tokens": tokens,
            "ts": as_utc(ts) or now,
        }
        for m, (label, source, tokens, ts) in plan.holdout_writes.items()
        if m not in plan.existing_holdout
    ]
    insert_rows(conn, Holdout.__table__, new_holdout)
    for m, (label, source, _, _) in plan.holdout_writes.items():
        if m in plan.existing_holdout:
            conn.execute(
                update(Holdout)
                .where(Holdout.model_id == model_id, Holdout.message_id == m)
                .values(label=label, source=source)
            )
