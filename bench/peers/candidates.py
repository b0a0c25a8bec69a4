"""filterd's candidates for the peers' tables: a configuration through the code path of
`filterd evaluate`, on the same records the peers get (`adapters.all_peers` lists them with the
peers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from filterd.bayes.model import ModelSpec
    from filterd.evaluation.corpus import Record
    from filterd.evaluation.protocols import Corpus
    from filterd.tokenize import Tokenizer


class Filterd:
    """A filterd configuration through the code path of `filterd evaluate`
    (filterd.evaluation.protocols): tokenization of every message included in the time, the
    split protocol learning the training part as one batch and scoring the test part as one
    batch, the online protocol through filterd.bayes.replay (one vectorized replay where the
    estimator allows, else a model per message). Scores: s_spam − s_ham (log-odds; S − H for
    Robinson–Fisher)."""

    family = "filterd"
    protocols = ("split", "online")
    tau = 0.0
    memory_kind = "rss"

    def __init__(
        self,
        label: str,
        variant: str,
        params: dict[str, str] | None = None,
        select: str = "none",
        bigrams: bool = False,
    ) -> None:
        self.label, self.variant, self.raw_params, self.select, self.bigrams = (
            label,
            variant,
            params or {},
            select,
            bigrams,
        )
        self.name = f"filterd {label}"

    def warm(self) -> None:
        from filterd.evaluation.corpus import Record

        records = [
            Record(str(i), (label,), text, "text", i, None)
            for i, (label, text) in enumerate(
                [
                    ("spam", "win cash now"),
                    ("ham", "lunch at noon"),
                    ("spam", "cash prize"),
                    ("ham", "noon is fine"),
                ]
            )
        ]
        self.online_records(records)
        self.split_records(records)

    def spec(self) -> ModelSpec:
        from filterd.bayes.model import ModelSpec

        return ModelSpec.parse(self.variant, self.raw_params, self.select)

    def tokenizer(self) -> Tokenizer:
        """The tokenizer the product gives this spec (the fusion's adds its views)."""
        from filterd.service.config import DEFAULTS
        from filterd.service.decide import tokenizer_of
        from filterd.tokenize.limits import TokenizerConfig

        return tokenizer_of(DEFAULTS, TokenizerConfig(bigrams=self.bigrams), [self.spec()])

    def corpus(self, records: Sequence[Record]) -> Corpus:
        from filterd.evaluation.protocols import Corpus

        return Corpus.tokenize(records, self.tokenizer())

    def split_records(self, records: Sequence[Record], corpus: Corpus | None = None) -> np.ndarray:
        from filterd.evaluation.protocols import split_scores

        return split_scores(corpus or self.corpus(records), self.spec(), "spam")

    def online_records(self, records: Sequence[Record], corpus: Corpus | None = None) -> np.ndarray:
        from filterd.evaluation.protocols import online_replay

        corpus = corpus or self.corpus(records)
        scores, _ = online_replay(corpus, self.spec(), "spam")
        return scores

    def check(self, records: Sequence[Record], protocol: str, scores: np.ndarray) -> str | None:
        """None if `filterd.evaluation.protocols.evaluate` gives the same AUC and spec@R=1 as
        `scores`."""
        from filterd.evaluation import ranking
        from filterd.evaluation.protocols import evaluate

        truth = np.array([r.label == "spam" for r in records])
        if protocol == "split":
            from filterd.evaluation.corpus import train_test_split

            truth = np.array([r.label == "spam" for r in train_test_split(records)[1]])
        result = evaluate(self.corpus(records), self.spec(), protocol)
        mine = ranking.binary_summary(scores, truth, tau=0.0)
        if (
            result.auc is None
            or result.spec_at_full_recall is None
            or abs(mine["auc"] - result.auc) > 1e-12
            or abs(mine["spec_at_full_recall"] - result.spec_at_full_recall) > 1e-12
        ):
            return f"differs from filterd evaluate: AUC {mine['auc']} vs {result.auc}"
        return None


FILTERD_CANDIDATES = [
    Filterd("default: fusion", "fusion"),  # filterd.bayes.model.DEFAULT_SPEC
    Filterd(
        "robinson_fisher(s=0.025,x=0.52) + local:1000000:alo:0.18",
        "robinson_fisher",
        {"s": "0.025", "x": "0.52"},
        "local:1000000:alo:0.18",
    ),  # filterd.bayes.model.ROBINSON_FISHER_SPEC, the default before the fusion
    Filterd("mnb", "mnb"),
    Filterd("twcnb + local:6:alo", "twcnb", select="local:6:alo"),
    Filterd("pnbc + local:6:alo", "pnbc", select="local:6:alo"),
]


def candidate(text: str) -> Filterd:
    """A filterd configuration from "VARIANT[,KEY=VALUE...][+SELECT][+bigrams]",
    e.g. "robinson_fisher,s=0.0178,x=0.52+local:1000000:alo:0.2+bigrams"."""
    head, *rest = text.split("+")
    variant, *pairs = head.split(",")
    params = dict(pair.split("=", 1) for pair in pairs)
    bigrams = "bigrams" in rest
    selections = [r for r in rest if r != "bigrams"]
    return Filterd(text, variant, params, selections[0] if selections else "none", bigrams)
