"""Entity memory: what the past says about the card, the customer or the terminal of a message,
as tokens the model learns like any other (pure: no I/O).

An entity is the value of a configured key of a message: an attribute (dotted for a nested
one: "customer", "geo.ip") or the field `sender` or `tenant`. For each entity of a message,
from the messages before it only (by the stream's clock: the latest `ts` seen, so that a
message sent out of time order does not turn it back):

    KEY:count_W~2^k         how many messages of the entity within window W, k = ⌊log2 n⌋
                            ("~0" for none): velocity
    KEY:amount_vs_W~2^e     this message's amount over the entity's mean amount within the
                            longest window W, 2 bins per doubling ("=new" without history)
    KEY:PARTY_W~2^k         how many distinct counterparties (another key of the same message,
                            e.g. the terminals a customer paid at) within W
    KEY:TARGET_W~2^k        how many of the entity's messages within the label window were
                            labelled the target class, as far as labels have arrived

(KEY the entity's key, W a window such as 1h or 30d). Counts are binned on a log scale so that
"7 payments in the last hour" and "6" are one piece of evidence, "1" another.
`EntityMemory.features` gives the numbers (`EntityFeatures`), `entity_tokens` their tokens and
`entity_words` what an analyst reads of them. The memory is bounded: an entity counts at most
`max_events` messages, those of the longest window (it holds at most twice as many, the older
forgotten in bulk), and at most `max_entities` entities are kept (the least recently seen
forgotten first).
"""

from __future__ import annotations

import bisect
import functools
import math
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from filterd.tokenize.attributes import log_bin
from filterd.tokenize.limits import BINS_PER_DOUBLING

HOUR, DAY = 3600, 86400
FIELDS = ("sender", "tenant")  # message fields that may name an entity; other keys: attributes
MAX_VALUE_LENGTH = 200  # characters of an entity value kept; a longer one is cut
_TOO_MANY_DIGITS = 10**MAX_VALUE_LENGTH


@dataclass(frozen=True)
class EntitySpec:
    """Which keys name entities, and what is remembered of them."""

    keys: tuple[str, ...] = ()
    windows: tuple[int, ...] = (HOUR, DAY, 7 * DAY, 30 * DAY)  # seconds, shortest first
    amount: str | None = "amount"  # the attribute compared with the entity's mean
    counterparties: tuple[tuple[str, str], ...] = ()  # (entity key, counterparty key)
    label_window: int = 28 * DAY
    target: str = "fraud"  # the class whose labels an entity's count reads
    max_events: int = 10_000  # per entity
    max_entities: int = 1_000_000

    def __post_init__(self) -> None:
        if not self.windows or any(w <= 0 for w in self.windows):
            raise ValueError("entity windows must be positive durations")
        if list(self.windows) != sorted(set(self.windows)):
            raise ValueError("entity windows must be distinct and shortest first")
        if self.label_window <= 0 or self.max_events < 1 or self.max_entities < 1:
            raise ValueError("the label window and the bounds must be positive")
        unknown = {k for k, _ in self.counterparties} - set(self.keys)
        if unknown:
            raise ValueError(f"counterparties of keys that name no entity: {sorted(unknown)}")

    @property
    def enabled(self) -> bool:
        return bool(self.keys)


@functools.cache  # a spec has a few windows, and every entity's tokens and words name them
def window_name(seconds: int) -> str:
    """A window as its largest whole unit.

    >>> [window_name(s) for s in (3600, 86400, 604800, 90, 5400)]
    ['1h', '1d', '7d', '90s', '90m']
    """
    for unit, size in (("d", DAY), ("h", HOUR), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def count_bin(n: int) -> str:
    """A count on a log scale: "0", else "2^k" with 2^k ≤ n < 2^(k+1).

    >>> [count_bin(n) for n in (0, 1, 3, 4, 7, 100)]
    ['0', '2^0', '2^1', '2^2', '2^2', '2^6']
    """
    return "0" if n <= 0 else f"2^{n.bit_length() - 1}"


# log2 units a ratio may fall short of a bin's edge and still count in that bin: the running
# sums a mean comes from drift by a few units in the last place, and a ratio of exactly 1 (the
# usual amount) must not flip to the bin below
EDGE_SLACK = 1e-9


def ratio_bin(ratio: float) -> str:
    """A positive ratio in bins of √2 (`log_bin`, as a numeric attribute's by default).

    >>> [ratio_bin(r) for r in (1.0, 1.5, 5.1, 0.2, 1.0 - 1e-15)]
    ['2^0', '2^0.5', '2^2', '2^-2.5', '2^0']
    """
    return log_bin(ratio, BINS_PER_DOUBLING, EDGE_SLACK)


def entity_values(message: Mapping[str, Any], spec: EntitySpec) -> list[tuple[str, str]]:
    """(key, value) of each configured key the message has, a scalar (str, int or float); an
    integer of more than `MAX_VALUE_LENGTH` digits names no entity (its text would cost time
    quadratic in its digits, and could not be kept whole).

    >>> entity_values({"attributes": {"customer": "c5", "geo": {"ip": "1.2.3.4"}}},
    ...               EntitySpec(keys=("customer", "geo.ip", "terminal")))
    [('customer', 'c5'), ('geo.ip', '1.2.3.4')]
    """
    out = []
    for key in spec.keys:
        value = entity_value(message, key)
        if value is not None:
            out.append((key, value))
    return out


def entity_value(message: Mapping[str, Any], key: str) -> str | None:
    """The entity the message's `key` names, as text (None: none; see `entity_values`)."""
    value = field_value(message, key)
    if isinstance(value, bool) or value == "":
        return None
    if isinstance(value, int) and abs(value) >= _TOO_MANY_DIGITS:
        return None
    if isinstance(value, (str, int, float)):
        return str(value)[:MAX_VALUE_LENGTH]
    return None


def field_value(message: Mapping[str, Any], key: str) -> Any:
    """The value of the field `sender` or `tenant`, else of the attribute `key` (dotted if
    nested), as the message has it (None: it has none).

    >>> field_value({"attributes": {"geo": {"country": "NG"}}}, "geo.country")
    'NG'
    """
    if key in FIELDS:
        return message.get(key)
    node: Any = message.get("attributes")
    for part in key.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


# An amount is a number within these bounds: an entity's running sum of at most `max_events`
# of them stays finite, and so does a ratio of two of them (1e-12 after 1e15, say, or the
# reverse), whose log-scale bin an infinity or a zero would have no value for.
MIN_AMOUNT, MAX_AMOUNT = 1e-12, 1e15


def amount_of(message: Mapping[str, Any], spec: EntitySpec) -> float | None:
    """The message's amount (a number within MIN_AMOUNT and MAX_AMOUNT), else None.

    >>> spec = EntitySpec(keys=("customer",))
    >>> [amount_of({"attributes": {"amount": a}}, spec) for a in (57.16, 0, 5e-324, 1e308)]
    [57.16, None, None, None]
    """
    if spec.amount is None:
        return None
    value = field_value(message, spec.amount)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and abs(value) >= _TOO_MANY_DIGITS:
        return None
    amount = float(value)
    return amount if MIN_AMOUNT <= amount <= MAX_AMOUNT else None


@dataclass(frozen=True)
class EntityFeatures:
    """What the memory knew of one entity of a message when the message came, the evidence its
    tokens (`entity_tokens`) and its words (`entity_words`) are made of."""

    key: str
    value: str
    counts: tuple[int, ...]  # its messages within each window of the spec
    # this message's amount over the entity's mean amount within the longest window; 0: the
    # entity has no amount there yet; None: the message has no amount
    amount_vs: float | None
    parties: tuple[int, ...]  # distinct counterparties within each window (if configured)
    labelled: int  # its messages within the label window labelled the target, as arrived


def entity_tokens(features: EntityFeatures, spec: EntitySpec) -> list[str]:
    """The tokens of an entity's features.

    >>> spec = EntitySpec(keys=("customer",), windows=(3600, 86400))
    >>> entity_tokens(EntityFeatures("customer", "c5", (7, 20), 5.1, (), 0), spec)
    ['customer:count_1h~2^2', 'customer:count_1d~2^4', 'customer:amount_vs_1d~2^2', \
'customer:fraud_28d~0']
    """
    names = token_names(spec, features.key)
    # a count n's token is its name's n.bit_length()-th (`binned`): counts are never negative
    out = [tokens[n.bit_length()] for tokens, n in zip(names.binned_counts, features.counts)]
    if features.amount_vs is not None:
        ratio = features.amount_vs
        out.append(names.amount_vs + (f"~{ratio_bin(ratio)}" if ratio else "=new"))
    out += [tokens[n.bit_length()] for tokens, n in zip(names.binned_parties, features.parties)]
    out.append(names.binned_labelled[features.labelled.bit_length()])
    return out


def binned(name: str) -> tuple[str, ...]:
    """The count tokens of `name`, the one of a count n ≥ 0 at n.bit_length() (`count_bin`):

    >>> tokens = binned("customer:count_1h")
    >>> [tokens[n.bit_length()] for n in (0, 1, 7)]
    ['customer:count_1h~0', 'customer:count_1h~2^0', 'customer:count_1h~2^2']
    """
    return tuple(f"{name}~{count_bin(n)}" for n in (0, *(1 << k for k in range(64))))


@dataclass(frozen=True)
class TokenNames:
    """The names of an entity key's tokens under a spec, without their bins (the names a rule
    reads them by: `filterd.entities.rules`)."""

    counts: tuple[str, ...]
    amount_vs: str
    parties: tuple[str, ...]
    labelled: str
    # and what `entity_words` says: each window's name, the counterparties' key, the label window
    windows: tuple[str, ...]
    party: str | None
    label_window: str
    binned_counts: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)
    binned_parties: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)
    binned_labelled: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # each name's tokens, made once (`binned`): every message's counts read them
        object.__setattr__(self, "binned_counts", tuple(binned(n) for n in self.counts))
        object.__setattr__(self, "binned_parties", tuple(binned(n) for n in self.parties))
        object.__setattr__(self, "binned_labelled", binned(self.labelled))


@functools.cache  # a spec has a few keys, and every message of each asks for their names
def token_names(spec: EntitySpec, key: str) -> TokenNames:
    """The names of the tokens of `key`'s entities under `spec`.

    >>> token_names(EntitySpec(keys=("customer",), windows=(3600,)), "customer").counts
    ('customer:count_1h',)
    """
    names = tuple(window_name(w) for w in spec.windows)
    party = dict(spec.counterparties).get(key)
    label_window = window_name(spec.label_window)
    return TokenNames(
        tuple(f"{key}:count_{name}" for name in names),
        f"{key}:amount_vs_{names[-1]}",
        tuple(f"{key}:{party}s_{name}" for name in names) if party else (),
        f"{key}:{spec.target}_{label_window}",
        names,
        party,
        label_window,
    )


def entity_words(features: EntityFeatures, spec: EntitySpec) -> list[str]:
    """An entity's features as an analyst reads them: what stands out (a count within a window
    when it grew from the window before, an amount other than the usual, labels), not every
    number.

    >>> spec = EntitySpec(keys=("customer",), windows=(3600, 86400))
    >>> entity_words(EntityFeatures("customer", "c5", (7, 7), 5.1, (), 1), spec)
    ['7 messages of customer c5 in the last 1h', 'amount 5.1× the mean of customer c5 over 1d', \
'1 message of customer c5 labelled fraud within 28d']
    >>> entity_words(EntityFeatures("customer", "c5", (0, 0), 0.0, (), 0), spec)
    ['customer c5: first seen within 1d']
    """
    said = token_names(spec, features.key)
    who, names = f"{features.key} {features.value}", said.windows
    out, before = [], 0
    for name, n in zip(names, features.counts):
        if n > before:
            out.append(f"{_many(n, 'message')} of {who} in the last {name}")
        before = n
    if not any(features.counts):
        out.append(f"{who}: first seen within {names[-1]}")
    ratio = features.amount_vs
    if ratio and not 0.8 <= ratio <= 1.25:
        out.append(f"amount {ratio:.2g}× the mean of {who} over {names[-1]}")
    before = 0
    for name, n in zip(names, features.parties):
        if n > max(before, 1):
            out.append(f"{n} distinct {said.party}s of {who} in the last {name}")
        before = n
    if features.labelled:
        out.append(
            f"{_many(features.labelled, 'message')} of {who} labelled {spec.target} "
            f"within {said.label_window}"
        )
    return out


def _many(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(frozen=True)
class EntityEvent:
    """A message of an entity, as the memory records it: at the stream's time, with the
    message's amount and counterparty (of the counterparty key configured for `key`)."""

    key: str
    value: str
    at: float
    amount: float | None
    party: str | None


class _Entity:
    """The events of one entity, oldest first, from the oldest of the longest window on (and
    some older ones, dropped in bulk); per window, the sequence number of its first event.

    A window's count and amounts are differences of running sums at its two ends, and its
    distinct counterparties a count kept as they enter and leave (a counterparty leaves a
    window with its last event there): moving a window's start is a bisection, with no work per
    event but for the counterparties of those that leave.
    """

    __slots__ = (
        "amounts",
        "base",
        "counted",
        "distinct",
        "last",
        "parties",
        "slid",
        "start",
        "summed",
        "times",
    )

    def __init__(self, windows: int) -> None:
        # Numbers in arrays, not lists: 8 bytes an event each instead of a pointer and a float
        # object, and no container for the garbage collector to walk (a scorer remembers a
        # million entities).
        self.base = 0  # the sequence number of times[0]
        self.times = array("d")
        self.amounts = array("d")  # NaN: the event had no amount
        self.parties: list[str | None] = []
        # summed[j], counted[j]: the amounts of the events before times[j] (and how many
        # events had one) since the last rebase
        self.summed = array("d", (0.0,))
        self.counted = array("q", (0,))
        self.last: dict[str, int] = {}  # each counterparty's last event (sequence number)
        self.start = array("q", bytes(8 * windows))
        self.distinct = array("q", bytes(8 * windows))
        self.slid = -math.inf  # the time of the last slide

    @property
    def end(self) -> int:
        return self.base + len(self.times)

    def slide(self, now: float, windows: Sequence[int]) -> None:
        """Move each window's start past the events older than now − window (nothing moves
        for a time not after the last slide's: the memory's clock never turns back, and events
        added since are at that time or later, so the times are in order)."""
        if now <= self.slid:
            return
        self.slid = now
        for i, width in enumerate(windows):
            start = self.start[i]
            moved = self.base + bisect.bisect_left(self.times, now - width, start - self.base)
            if moved > start:
                self._leave(i, start, moved)
        self._drop()

    def _leave(self, i: int, start: int, moved: int) -> None:
        """Window i's events from `start` to `moved` (excluded) leave it."""
        if self.last:
            parties, base, last = self.parties, self.base, self.last
            for j in range(start, moved):
                party = parties[j - base]
                if party is not None and last[party] == j:
                    self.distinct[i] -= 1
        self.start[i] = moved

    def _drop(self) -> None:
        """Forget the events before the longest window's start, once they are as many as the
        events kept after them (amortized: each event is copied a bounded number of times)."""
        gone = self.start[-1] - self.base  # the longest window's start is the least
        if gone < 32 or gone < len(self.times) - gone:
            return
        for j, party in enumerate(self.parties[:gone], self.base):
            if party is not None and self.last.get(party) == j:
                del self.last[party]
        del self.times[:gone], self.amounts[:gone], self.parties[:gone]
        # rebased on the first event kept: a large amount gone leaves no rounding behind
        zero, none = self.summed[gone], self.counted[gone]
        self.summed = array("d", [s - zero for s in self.summed[gone:]])
        self.counted = array("q", [n - none for n in self.counted[gone:]])
        self.base += gone

    def add(self, now: float, amount: float | None, party: str | None, max_events: int) -> None:
        if self.in_window(len(self.start) - 1) >= max_events:  # a hot entity keeps its newest
            oldest = self.start[-1]
            for i in range(len(self.start)):
                if self.start[i] == oldest:
                    self._leave(i, oldest, oldest + 1)
            self._drop()
        seq = self.end
        self.times.append(now)
        self.parties.append(party)
        if amount is None:
            self.amounts.append(math.nan)
            self.summed.append(self.summed[-1])
            self.counted.append(self.counted[-1])
        else:
            self.amounts.append(amount)
            self.summed.append(self.summed[-1] + amount)
            self.counted.append(self.counted[-1] + 1)
        if party is not None:
            before = self.last.get(party)
            for i, start in enumerate(self.start):
                if before is None or before < start:
                    self.distinct[i] += 1
            self.last[party] = seq

    def in_window(self, i: int) -> int:
        return self.end - self.start[i]

    def counts(self) -> tuple[int, ...]:
        """The events within each window."""
        end = self.end
        return tuple([end - start for start in self.start])

    def mean_amount(self, i: int) -> float:
        """The mean amount of window i's events that have one (0.0: none has)."""
        at = self.start[i] - self.base
        n = self.counted[-1] - self.counted[at]
        if not n:
            return 0.0
        total = self.summed[-1] - self.summed[at]
        if total < n * MIN_AMOUNT:  # cancelled: amounts of very different sizes came and went
            total = math.fsum(a for a in self.amounts[at:] if a == a)  # NaN: none
        return total / n


class EntityMemory:
    """The entities of a stream and what has been seen of them: `tokens` for a message before
    it is learned, then `observe` it; `label` a message when its label arrives."""

    def __init__(self, spec: EntitySpec) -> None:
        self.spec = spec
        self.clock = -math.inf
        self._entities: OrderedDict[tuple[str, str], _Entity] = OrderedDict()
        self._labelled: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
        self._none = (0,) * len(spec.windows)  # the counts of an entity not seen yet
        self._parties = dict(spec.counterparties)

    def now(self, ts: float | None) -> float:
        """The stream's clock after a message sent at `ts` (seconds; None: not dated)."""
        if ts is not None and ts > self.clock:
            self.clock = ts
        return self.clock if self.clock > -math.inf else 0.0

    def features(self, message: Mapping[str, Any], ts: float | None) -> list[EntityFeatures]:
        """What is known of each of the message's entities, from the messages observed before
        it."""
        now = self.now(ts)
        return self._features(*self._read(message), now)

    def peek(self, message: Mapping[str, Any]) -> list[EntityFeatures]:
        """`features` as of the stream's time now, the clock left where it is: what a message
        would be told without being part of the stream (a check that is not recorded)."""
        now = self.clock if self.clock > -math.inf else 0.0
        return self._features(*self._read(message), now)

    def remember(
        self, message: Mapping[str, Any], ts: float | None
    ) -> tuple[list[EntityFeatures], list[EntityEvent]]:
        """`features`, then `observe`, reading the message once: its features from the messages
        before it, and the events remembered of it (a scorer's, for the store)."""
        now = self.now(ts)
        values, amount = self._read(message)
        features = self._features(values, amount, now)
        events = self._events(values, amount, now)
        self.apply(events)
        return features, events

    def _read(self, message: Mapping[str, Any]) -> tuple[list[tuple[str, str]], float | None]:
        """The message's entities and amount."""
        return entity_values(message, self.spec), amount_of(message, self.spec)

    def _features(
        self, values: list[tuple[str, str]], amount: float | None, now: float
    ) -> list[EntityFeatures]:
        spec, out = self.spec, []
        last = len(spec.windows) - 1
        for key, value in values:
            entity = self._entities.get((key, value))
            if entity is not None:
                entity.slide(now, spec.windows)
            counts = self._none if entity is None else entity.counts()
            amount_vs = None
            if amount is not None:
                mean = 0.0 if entity is None else entity.mean_amount(last)
                amount_vs = amount / mean if mean else 0.0
            parties: tuple[int, ...] = ()
            if key in self._parties:
                parties = self._none if entity is None else tuple(entity.distinct)
            labelled = self._labelled_count(key, value, now)
            out.append(EntityFeatures(key, value, counts, amount_vs, parties, labelled))
        return out

    def tokens(self, message: Mapping[str, Any], ts: float | None) -> list[str]:
        """The tokens of the message's entities, from the messages observed before it."""
        return [t for f in self.features(message, ts) for t in entity_tokens(f, self.spec)]

    def events(self, message: Mapping[str, Any], ts: float | None) -> list[EntityEvent]:
        """What observing the message records, one event per entity, at the stream's time after
        it (the clock moves; nothing else changes until `apply`)."""
        now = self.now(ts)
        return self._events(*self._read(message), now)

    def _events(
        self, values: list[tuple[str, str]], amount: float | None, now: float
    ) -> list[EntityEvent]:
        by_key = dict(values)
        events = []
        for key, value in by_key.items():
            party_key = self._parties.get(key)
            party = by_key.get(party_key) if party_key else None
            events.append(EntityEvent(key, value, now, amount, party))
        return events

    def apply(self, events: Iterable[EntityEvent]) -> None:
        """Remember events (this memory's own, or another's: a scorer's read from the store)."""
        spec = self.spec
        for e in events:
            now = self.now(e.at)
            entity = self._touch(
                self._entities, (e.key, e.value), lambda: _Entity(len(spec.windows))
            )
            entity.slide(now, spec.windows)
            entity.add(now, e.amount, e.party, spec.max_events)

    def observe(self, message: Mapping[str, Any], ts: float | None) -> None:
        """Remember the message as an event of each of its entities."""
        self.apply(self.events(message, ts))

    def label(self, message: Mapping[str, Any], ts: float | None, is_target: bool) -> None:
        """A label has arrived for a message sent at `ts`: a target counts for its entities
        within the label window (by the message's time, however late the label)."""
        if is_target:
            when = self.clock if ts is None else ts
            self.label_entities(
                [(key, value, when) for key, value in entity_values(message, self.spec)]
            )

    def label_entities(self, labelled: Iterable[tuple[str, str, float]]) -> None:
        """Count target labels of messages of entities (key, value) sent at a time each."""
        for key, value, when in labelled:
            times = self._touch(self._labelled, (key, value), list)
            bisect.insort(times, when)
            if len(times) > self.spec.max_events:
                del times[0]

    def _labelled_count(self, key: str, value: str, now: float) -> int:
        times = self._labelled.get((key, value))
        if not times:
            return 0
        del times[: bisect.bisect_left(times, now - self.spec.label_window)]
        return bisect.bisect_left(times, now)  # labels of messages sent later do not count yet

    def _touch(
        self, table: OrderedDict[tuple[str, str], Any], key: tuple[str, str], make: Any
    ) -> Any:
        item = table.get(key)
        if item is None:
            item = table[key] = make()
            if len(table) > self.spec.max_entities:
                table.popitem(last=False)
        else:
            table.move_to_end(key)
        return item

    def __len__(self) -> int:
        """The entities remembered."""
        return len(self._entities)
