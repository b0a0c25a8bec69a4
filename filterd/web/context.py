"""What the HTTP API's handlers share: the configuration, the model's handle in the store, the
model they check with, the feedback topic's publisher and the authenticator (`WebContext`).

The model is the scorer's own in `filterd run` (`filterd.daemon.model_state.ModelState`, which
the daemon keeps synced), or one of `filterd serve`'s, synced the same way: the API reads it
through the `Scoring` protocol and never writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from structlog.typing import FilteringBoundLogger

from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.service.decide import Decider, EvidenceOf, OverridesOf, ThresholdSetting
from filterd.store.handle import ModelStore
from filterd.tokenize import Tokenizer
from filterd.web.auth import Authenticator
from filterd.web.labels import LabelSender


class Scoring(Protocol):
    """The model POST /v1/check decides with: `ModelState`'s decider (None until loaded) and
    the threshold version in force."""

    decider: Decider | None
    threshold: ThresholdSetting


@dataclass
class WebContext:
    """Everything a handler needs. `model` is the configured model's handle in the store;
    `tokenizer` is the API's own (configured like the scorer's), so that checks never share a
    tokenizer with the scorer's thread."""

    config: Config
    model: ModelStore
    scoring: Scoring
    tokenizer: Tokenizer
    labels: LabelSender
    auth: Authenticator
    log: FilteringBoundLogger
    metrics: Metrics | None = None  # the daemon's (exported on its /metrics); None: not counted
    # the scorer's entity memory, read by checks without remembering them (`filterd run` with
    # [entities] keys); None: checks are decided without entity evidence
    evidence: EvidenceOf | None = None
    # the scorer's lists and rules (`filterd run`); None: checks are decided without them
    overrides: OverridesOf | None = None
