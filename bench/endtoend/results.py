"""What each phase of `bench/e2e.py` measured, and the report they make up."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from endtoend.analysts import WorkbenchSummary
from endtoend.cpu import CpuUse
from endtoend.decisions import Quantiles
from endtoend.metrics import Batches
from endtoend.options import KafkaSettings
from kafka_ceiling import Ceiling, ClientCeiling


@dataclass
class Throughput:
    """One scorer run of section 2: messages produced beforehand, then decided."""

    message_bytes: float  # mean size of a message record
    preproduce_rate: float  # msg/s of producing them beforehand
    startup_s: float  # process spawn → first decision
    rate: float  # msg/s, first decision's scored_at → last decision's send
    rate_metrics: float  # msg/s in the CPU-measured window (between scrapes)
    window_s: float
    missing: int  # ids without a decision read back
    duplicates: int
    hist: Batches
    dead_lettered: float
    cpu: CpuUse
    decision_bytes: float  # mean size of a decision record
    workbench: WorkbenchSummary | None = None
    exit: int | None = None  # the scorer's exit status, once stopped


@dataclass
class Latency:
    """One latency run of section 3: messages at a steady rate into a warm scorer."""

    sent: int
    rate: float  # msg/s sent
    missing: int  # paced messages without a decision read back
    window: tuple[float, float]  # epoch seconds of the paced sending
    timestamp_type: int | None  # of the decision records (0 CreateTime, 1 LogAppendTime)
    record: Quantiles  # decision record timestamp − message record timestamp
    scored: Quantiles  # decision scored_at − message send
    visible: Quantiles | None  # decision received here − message send (None: no observer)
    hist: Batches
    kafka: KafkaSettings  # the scorer's more [kafka] settings
    cpu: CpuUse
    daemon: dict[str, float]  # the daemon's decision latency (`metrics.decision_latency`)
    workbench: WorkbenchSummary | None = None
    exit: int | None = None  # the scorer's exit status, when it was stopped after the run


@dataclass
class Learning:
    """One learner run of section 4 (feedback with text) or 4b (by id)."""

    rate: float  # records/s, first batch applied → last scrape before the final one
    window_rate: float  # records/s in the CPU-measured window
    first_batch: float  # records of the first batch
    startup_s: float
    outcomes: dict[str, float]  # feedback records by outcome
    hist: Batches
    cpu: CpuUse
    exit: int | None


@dataclass
class Memory:
    """Section 5: a scorer with a big model."""

    build_s: float  # building the model
    load_s: float  # process spawn → model loaded
    loaded: dict[str, float]  # VmRSS and VmHWM in MB, loaded and idle
    after: dict[str, float]  # the same after scoring
    rate: float  # msg/s between scrapes
    window_rate: float  # msg/s in the CPU-measured window
    cpu: CpuUse
    exit: int | None


@dataclass
class ClientRuns:
    """--clients: one client's ceilings and scorer runs, and the latency in its last scorer."""

    ceilings: list[ClientCeiling] = field(default_factory=list)
    runs: list[Throughput] = field(default_factory=list)
    latency: Latency | None = None


@dataclass
class Report:
    """Everything one invocation measured; the phases that did not run are left empty."""

    spec: str
    source: str  # of the messages
    load_start: str
    load_end: str = ""
    tansu: str = ""  # the broker's version line
    message_bytes: float = 0.0
    ceiling: Ceiling | None = None  # section 1
    ceiling_cpu: CpuUse | None = None
    throughput: Throughput | None = None  # section 2, the median run
    rates: list[tuple[float, float]] = field(default_factory=list)  # msg/s, per CPU-s, each run
    latency: list[Latency] = field(default_factory=list)  # section 3
    scorer_memory: dict[str, float] | None = None  # the last throughput scorer's, after section 3
    model_tokens: int = 0  # distinct tokens of the scorers' model
    scorer_exit: int | None = None
    feedback_bytes: float = 0.0
    learn: Learning | None = None  # section 4
    by_id: Learning | None = None  # section 4b
    memory: Memory | None = None  # section 5
    clients: dict[str, ClientRuns] | None = None  # --clients instead of sections 1 to 5


T = TypeVar("T")


def median_by(items: list[T], key: Callable[[T], float]) -> T:
    """The item at the median of `key` (the upper one of an even number)."""
    return sorted(items, key=key)[len(items) // 2]
