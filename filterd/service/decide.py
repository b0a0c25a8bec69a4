"""Messages → decisions with one model version and one threshold: the scorer's pure core.

The decision score is the binary score of docs/methods.md for the target class t,
s(x) = s_t(x) − max_{c≠t} s_c(x), on the target-vs-rest view of the statistics. A message is
labelled t when s(x) ≥ τ, else the other class (two classes) or "not t" (more). Without a
threshold version τ = 0, the Bayes decision, and t only when s(x) > 0: a message without
evidence (s = 0: empty, or only unseen words) is not flagged. Until every class has `min_docs`
learned documents the model is not ready and decisions say "unknown".

The daemon, `filterd score` and the calibration job all score through `scoring_model` and
`decision_scores`, so a threshold chosen on the holdout applies to the daemon's scores; and
the scorer, `filterd score` and the HTTP API's `POST /v1/check` tokenize and decide through
`decide_messages` (the first two decode their raw records through `decide_payloads`, the API
its body as the same `Message` type), so all three validate, tokenize and decide a message
alike, and refuse one alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from filterd.bayes.features import DocBatch, encode
from filterd.bayes.fusion import DecisionModel, build_model, views_read, with_weights
from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Statistics, not_ready
from filterd.entities.memory import EntityFeatures
from filterd.entities.overrides import Override
from filterd.service.config import DEFAULTS, Config
from filterd.service.records import Content, Decision, Message, RecordError, decode
from filterd.tokenize import Tokenizer, TokenizerConfig, Tokens
from filterd.tokenize.limits import BAD_MESSAGE, INTERNAL_ERROR

UNDECIDED = "unknown"  # the label of decisions taken before the model is ready
DEFAULT_TAU = 0.0
EXPLAIN_TOKENS = 10


class Source(Protocol):
    """Where a message was read: a consumed Kafka record (`filterd.kafka.consumer.ConsumedRecord`),
    a line of stdin (`filterd score`) or a `Position`. Decisions carry it (`Decision.source_topic`,
    `partition`, `offset`)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Position:
    """The source of a message handed over directly rather than read from a topic: no topic
    (""), partition 0, offset = its position among the messages handed over."""

    offset: int
    topic: str = ""
    partition: int = 0


class NotReady(RuntimeError):
    """The statistics cannot support decisions yet; the message says why."""


@dataclass(frozen=True)
class ThresholdSetting:
    """The threshold decisions use, and the version of it they report; a fusion model's
    weights come with the τ chosen for them (None: a single model, or no version yet)."""

    tau: float = DEFAULT_TAU
    version: int | None = None
    target_recall: float = 0.99
    weights: tuple[float, ...] | None = None


def scoring_model(
    stats: Statistics, spec: ModelSpec, target_class: str, min_docs: int = DEFAULTS.model.min_docs
) -> DecisionModel:
    """The target-vs-rest model the daemon decides with, or NotReady."""
    check_ready(stats.labels, stats.D.tolist(), target_class, min_docs)
    return build_model(stats, spec, target=target_class)


def check_ready(
    labels: Sequence[str],
    docs: Sequence[int],
    target_class: str,
    min_docs: int = DEFAULTS.model.min_docs,
) -> None:
    """NotReady unless every class has `min_docs` learned documents and `target_class` is one."""
    reason = not_ready(labels, docs, min_docs)
    if reason is None and target_class not in labels:
        reason = f"no class {target_class!r} learned yet (classes: {', '.join(labels)})"
    if reason is not None:
        raise NotReady(reason)


def decision_scores(model: DecisionModel, batch: DocBatch) -> npt.NDArray[np.float64]:
    """s(x) of every document of `batch` (row 0 of a target-vs-rest model is the target)."""
    return model.score(batch).binary()


def tokenizer_of(
    config: Config,
    options: TokenizerConfig | None = None,
    specs: Sequence[ModelSpec] | None = None,
) -> Tokenizer:
    """The tokenizer of every command that tokenizes (the daemon's scorer and learner, `filterd
    score`, `learn`, `evaluate` and `tune`, the API's checks, the demo): the configured limits
    and [attributes] number bins over `options` (the evaluation commands' token options; none by
    default), with the token views that models of `specs` (default: the configured model's)
    read on their own
    (`filterd.bayes.fusion.views_read`: character 4-grams, word pairs), so that a message gives
    the same tokens whichever reads it."""
    limits = config.limits
    options = options or TokenizerConfig()
    views: set[str] = set()
    for spec in (config.model.spec,) if specs is None else specs:
        views |= views_read(spec)
    return Tokenizer(
        replace(
            options,
            char_ngrams=options.char_ngrams or "chars" in views,
            osb=options.osb or "pairs" in views,
            max_token_length=limits.max_token_length,
            max_tokens=limits.max_tokens,
            max_bytes=limits.max_bytes,
            numbers=config.attributes.numbers,
        )
    )


@dataclass(frozen=True)
class EntityEvidence:
    """What an entity memory says of a message (`filterd.entities`): tokens to decide (and
    learn) it on with its own, their words for the decision, and the numbers they were made of
    (which rules read)."""

    tokens: list[str]
    words: list[str]
    features: tuple[EntityFeatures, ...] = ()


NO_EVIDENCE = EntityEvidence([], [])
EvidenceOf = Callable[[Sequence[Message]], list[EntityEvidence]]
# the list entry or rule that decides each message before the model, if any, given the
# messages and their entity evidence, if any (`filterd.entities.overrides`)
OverridesOf = Callable[[Sequence[Message], Sequence[EntityEvidence] | None], list[Override | None]]


def other_label(target_class: str, labels: Sequence[str]) -> str:
    """The label of a message decided not `target_class`: the one other class, else "not …".

    >>> other_label("spam", ["ham", "spam"]), other_label("fraud", ["fraud", "ok", "review"])
    ('ham', 'not fraud')
    """
    others = [label for label in labels if label != target_class]
    return others[0] if len(others) == 1 else f"not {target_class}"


class Decider:
    """Tokenizes, scores and labels batches of messages; rebuilt model on `update(stats)`."""

    def __init__(
        self,
        spec: ModelSpec,
        target_class: str,
        min_docs: int = DEFAULTS.model.min_docs,
        tokenizer: Tokenizer | None = None,
        explain_tokens: int = EXPLAIN_TOKENS,
        labels: Sequence[str] = (),
    ) -> None:
        self.spec = spec
        self.target_class = target_class
        self.min_docs = min_docs
        self.tokenizer = tokenizer or tokenizer_of(DEFAULTS, specs=[spec])
        self.explain_tokens = explain_tokens
        self.model: DecisionModel | None = None
        self.model_version = 0
        self.distinct_tokens: int | None = None  # of the statistics last given to `update`
        self.not_ready: str | None = "no statistics loaded"
        # the configured classes (`model.labels`): what an allow decides before any is learned
        self.labels = tuple(labels)
        self._other = other_label(target_class, self.labels)

    def update(self, stats: Statistics, version: int) -> None:
        """Build the model of `stats` (the store's change number `version`)."""
        self.distinct_tokens = stats.V
        try:
            self.model = scoring_model(stats, self.spec, self.target_class, self.min_docs)
            self.not_ready = None
        except NotReady as reason:
            self.model, self.not_ready = None, str(reason)
        self._other = other_label(self.target_class, stats.labels or self.labels)
        self.model_version = version

    def tokens(self, messages: Sequence[Content]) -> list[Tokens]:
        return [self.tokenizer(message_fields(m)) for m in messages]

    def decide(
        self,
        messages: Sequence[Message],
        threshold: ThresholdSetting,
        tokens: Sequence[Tokens] | None = None,
        now: datetime | None = None,
        sources: Sequence[Source] | None = None,
        evidence: Sequence[EntityEvidence] | None = None,
        overridden: Sequence[Override | None] | None = None,
    ) -> list[Decision]:
        """One decision per message, in order (`tokens`: the tokenizer's results, if already
        made; `sources`: where each message was read, else its `Position` in `messages`;
        `evidence`: each message's entity tokens, decided on with its own, and their words,
        its decision's `evidence`; `overridden`: the list entry or rule that decides each
        message, if any: block decides the target class and allow the other, whatever the score
        (`decided_by` "list" or "rule"), review marks it for review; the entry or rule is the
        first line of its evidence). A
        message a limit cut short is decided on what was read, and says so (`truncated`)."""
        now = now or datetime.now(UTC)
        tokenized = self.tokens(messages) if tokens is None else tokens
        where = [Position(i) for i in range(len(messages))] if sources is None else sources
        if len(where) != len(messages):
            raise ValueError(f"{len(where)} sources for {len(messages)} messages")
        if evidence is not None and len(evidence) != len(messages):
            raise ValueError(f"{len(evidence)} entity evidences for {len(messages)} messages")
        extra = [NO_EVIDENCE] * len(messages) if evidence is None else evidence
        entries = [None] * len(messages) if overridden is None else overridden
        if len(entries) != len(messages):
            raise ValueError(f"{len(entries)} overrides for {len(messages)} messages")

        def decision(
            i: int, label: str, score: float, explanation: list[tuple[str, float]]
        ) -> Decision:
            source, entry = where[i], entries[i]
            decided_by: Literal["model", "list", "rule"] = "model"
            words = extra[i].words
            if entry is not None:
                words = [entry.describe(), *words]
                if entry.outcome != "review":
                    decided_by = entry.decided_by
                    label = self.target_class if entry.outcome == "block" else self._other
            return Decision(
                message_id=messages[i].id,
                label=label,
                score=score,
                threshold=threshold.tau,
                target_recall=threshold.target_recall,
                model_version=self.model_version,
                threshold_version=threshold.version,
                explanation=explanation,
                truncated=tokenized[i].truncated,
                scored_at=now,
                source_topic=source.topic,
                partition=source.partition,
                offset=source.offset,
                evidence=words,
                decided_by=decided_by,
                review=entry is not None and entry.outcome == "review",
            )

        if self.model is None:
            return [decision(i, UNDECIDED, 0.0, []) for i in range(len(messages))]
        model = with_weights(self.model, threshold.weights)
        decided_on = [
            [*t.tokens, *e.tokens] if e.tokens else t.tokens for t, e in zip(tokenized, extra)
        ]
        scores = model.score(encode(decided_on, model.hasher))
        s = scores.binary()
        # A calibrated τ decides ties as target, as calibration counted them. Without one, the
        # Bayes decision flags only scores above 0: a message without evidence (empty, or only
        # words the model has not seen) scores 0 and is not flagged.
        flagged = s >= threshold.tau if threshold.version is not None else s > threshold.tau
        labels = np.where(flagged, self.target_class, self._other)
        # 4 decimals: enough to read, and decisions stay small (they are most of what is produced)
        explanations = scores.explanations(self.explain_tokens, decimals=4)
        return [
            decision(i, str(labels[i]), float(s[i]), explanations[i]) for i in range(len(messages))
        ]

    def contributions(
        self, tokens: Sequence[str], threshold: ThresholdSetting
    ) -> tuple[float, list[tuple[str, float]]] | None:
        """A message's decision score s(x) from its `tokens` under the current model, and every
        selected token with its signed contribution, strongest first (`Scores.explain`: the
        explanation of `decide` before it is cut to `explain_tokens`). None until a model is
        loaded."""
        if self.model is None:
            return None
        model = with_weights(self.model, threshold.weights)
        scores = model.score(encode([list(tokens)], model.hasher))
        return float(scores.binary()[0]), scores.explain(0)


def message_fields(message: Content) -> dict[str, Any]:
    """The fields of a message or feedback record the tokenizer reads."""
    return {
        "text": message.text,
        "subject": message.subject,
        "sender": message.sender,
        "format": message.format,
        "attributes": message.attributes,
    }


# Tokenizer flags that leave nothing to decide on; a limit that cut the message short is not one
# of them: such a message is decided on what was read, and says so (`Decision.truncated`).
REJECTED_FLAGS = {BAD_MESSAGE: "bad_message", INTERNAL_ERROR: "tokenizer_error"}
# The dead-letter reasons that say the daemon cannot read the stream at all (a producer writing
# another format, a wrong topic): the only ones the dead-letter guard counts. Content that
# senders control, however long, deep or odd, must not be able to stop the filter.
UNDECODABLE = frozenset({"invalid_json", "invalid_utf8", "schema"})


def accepted_tokens(tokenizer: Tokenizer, message_id: str, content: Content) -> Tokens:
    """The tokenizer's result for a message, or RecordError when it hit a flag in REJECTED_FLAGS."""
    result = tokenizer(message_fields(content))
    for flag, reason in REJECTED_FLAGS.items():
        if flag in result.flags:
            raise RecordError(
                reason, f"message {message_id!r}: tokenizer flags {sorted(result.flags)}"
            )
    return result


@dataclass
class Decided:
    """What a batch of raw records came to: decisions (with the tokens they rest on) and
    failures."""

    decisions: list[Decision]
    messages: list[Message]  # the message of each decision
    # the tokenizer's result for each: the tokens decided on and, of raw mail, what a person
    # reads of it (`Tokens.mail`, for the review queue)
    tokens: list[Tokens]
    failures: list[tuple[int, str, str]]  # (position in the batch, dead-letter reason, error)
    undecodable: list[bool]  # per record, in order: dead-lettered for a reason in UNDECODABLE
    # the list entry or rule that decided, or queued, each decision's message (None: none)
    overridden: list[Override | None]


def decide_payloads(
    decider: Decider,
    threshold: ThresholdSetting,
    payloads: Sequence[bytes | None],
    max_bytes: int,
    sources: Sequence[Source] | None = None,
    evidence: EvidenceOf | None = None,
    overrides: OverridesOf | None = None,
) -> Decided:
    """Decode, validate, tokenize and decide raw message records (the scorer and `filterd
    score`): `decide_messages` of the records decoded. Each decision carries where its payload
    was read: `sources[i]` for `payloads[i]` (the consumed records themselves), else the
    payload's `Position` in `payloads`."""
    records = [_decoded(p, max_bytes) for p in payloads]
    return decide_messages(
        decider, threshold, records, sources, evidence=evidence, overrides=overrides
    )


def decide_messages(
    decider: Decider,
    threshold: ThresholdSetting,
    records: Sequence[Message | RecordError],
    sources: Sequence[Source] | None = None,
    tokenizer: Tokenizer | None = None,
    evidence: EvidenceOf | None = None,
    overrides: OverridesOf | None = None,
) -> Decided:
    """Tokenize and decide messages already decoded: the one path of the scorer, `filterd score`
    (through `decide_payloads`) and POST /v1/check. Each of `records` is a message, or the
    RecordError its record's decoding raised; that, and a message the tokenizer refuses
    (`REJECTED_FLAGS`), is a failure at its position. Each decision carries `sources[i]` for
    `records[i]`, else its `Position` in `records`. `tokenizer`: one configured as the
    decider's, for a caller that keeps its own (the HTTP API's threads), else the decider's.
    `evidence`: the entity memory of the caller that keeps one (the scorer's), asked for the
    messages that are decided, in order; `overrides`: likewise, the lists and rules in force,
    given the messages and their evidence."""
    if sources is not None and len(sources) != len(records):
        raise ValueError(f"{len(sources)} sources for {len(records)} payloads")
    messages: list[Message] = []
    decided: list[int] = []  # the position of each message in `records`
    tokenized: list[Tokens] = []
    failures: list[tuple[int, str, str]] = []
    undecodable: list[bool] = []
    for i, message in enumerate(records):
        try:
            if isinstance(message, RecordError):
                raise message
            message_tokens = accepted_tokens(tokenizer or decider.tokenizer, message.id, message)
        except RecordError as error:
            failures.append((i, error.reason, str(error)))
            undecodable.append(error.reason in UNDECODABLE)
            continue
        messages.append(message)
        tokenized.append(message_tokens)
        undecodable.append(False)
        decided.append(i)
    where = [Position(i) for i in decided] if sources is None else [sources[i] for i in decided]
    entities = evidence(messages) if evidence is not None else None
    entries = overrides(messages, entities) if overrides is not None else None
    decisions = decider.decide(
        messages, threshold, tokenized, sources=where, evidence=entities, overridden=entries
    )
    return Decided(
        decisions,
        messages,
        tokenized,
        failures,
        undecodable,
        list(entries or [None] * len(messages)),
    )


def _decoded(payload: bytes | None, max_bytes: int) -> Message | RecordError:
    """The message of a raw record, or the RecordError that says why it is none."""
    try:
        return decode(payload or b"", Message, max_bytes)
    except RecordError as error:
        return error
