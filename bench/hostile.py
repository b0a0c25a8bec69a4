"""What does hostile input cost the scorer, and does every family stay within its bounds?

The hostile-input harness, timed part: every family of `filterd.evaluation.hostile` at full
size through the scorer's path (decode, tokenize, the entity memory of customer, terminal and
sender, the rules of `filterd.evaluation.hostile.RULES`, decide, and the review item of every
decision, as if each were queued), with the figures the harness holds each to: decided or
dead-lettered with a reason, at most 50 ms of CPU per 100 KB of input, at most 50 MB of extra
memory, and the normal message after it decided.

    python bench/hostile.py                  # every family at 900 KB (just under limits.max_bytes)
    python bench/hostile.py --size 300000 --only boundary_semicolons

Prints one row a family (outcome, bytes, CPU ms, ms per 100 KB, peak extra MB) and the worst
ratio; exits 1 when a family breaks a bound.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc

import structlog

from filterd.bayes.features import encode
from filterd.bayes.model import ROBINSON_FISHER_SPEC
from filterd.bayes.statistics import Statistics
from filterd.daemon.entity_state import EntityState
from filterd.daemon.override_state import OverrideState
from filterd.daemon.scorer import queue_for_review
from filterd.evaluation.hostile import ENTITY_SPEC, FAMILIES, record, rule_set
from filterd.evaluation.synth import SynthConfig, generate
from filterd.service.config import Review
from filterd.service.decide import Decided, Decider, ThresholdSetting, decide_payloads
from filterd.store.handle import Store
from filterd.tokenize import Tokenizer

MS_PER_100_KB = 50.0
EXTRA_MB = 50.0
NORMAL = json.dumps({"id": "next", "text": "win cash now"}).encode()
QUEUE_ALL = Review(random_share=1.0)  # every decision becomes a review item


# a scorer's entity memory of the keys the families write (`attributes_entities`), and its
# lists and rules (`filterd.evaluation.hostile.RULES`)
Kept = tuple[EntityState, OverrideState]


def scorer_path(decider: Decider, payloads: list[bytes], entities: Kept) -> Decided:
    memory, overrides = entities
    result = decide_payloads(
        decider,
        ThresholdSetting(),
        payloads,
        1_000_000,
        evidence=memory.evidence,
        overrides=overrides.overridden,
    )
    memory.take()  # what the recorder would write
    queue_for_review(result, QUEUE_ALL)
    return result


def entity_memory(folder: str) -> Kept:
    store = Store.open(f"sqlite:///{folder}/filterd.db")
    store.upgrade()
    model = store.create_model("default", ROBINSON_FISHER_SPEC)
    spec = ENTITY_SPEC
    for rule in rule_set():
        model.put_rule(rule)
    overrides = OverrideState(model, spec, structlog.get_logger())
    overrides.refresh(force=True)
    return EntityState(model, spec, structlog.get_logger()), overrides


def trained_decider() -> Decider:
    """Robinson–Fisher alone (the fusion's first component) on 2,000 synthetic messages."""
    tokenize = Tokenizer()
    stats = Statistics()
    corpus = generate(SynthConfig(n_messages=2000, seed=0))
    stats.update(
        encode([tokenize(r).tokens for r in corpus], stats.hasher), [r["label"] for r in corpus], +1
    )
    decider = Decider(ROBINSON_FISHER_SPEC, "spam", min_docs=5)
    decider.update(stats, version=1)
    return decider


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=900_000, help="bytes of each record")
    parser.add_argument("--only", action="append", choices=sorted(FAMILIES), help="one family")
    args = parser.parse_args()
    decider = trained_decider()
    with tempfile.TemporaryDirectory() as folder:
        return measure(decider, entity_memory(folder), args.only or sorted(FAMILIES), args.size)


def measure(decider: Decider, entities: Kept, families: list[str], size: int) -> int:
    """Print each family's row and the worst; 1 when a family breaks a bound."""
    # what a first record pays once (imports, caches): not its own
    scorer_path(decider, [NORMAL], entities)
    worst, failed = 0.0, []
    print(f"{'family':<24} {'outcome':<22} {'bytes':>10} {'CPU ms':>8} {'ms/100KB':>9} {'MB':>6}")
    for family in families:
        payload = record(family, size)
        started = time.process_time()
        result = scorer_path(decider, [payload, NORMAL], entities)
        ms = (time.process_time() - started) * 1000
        tracemalloc.start()  # a second pass for memory: tracing slows the first one down
        scorer_path(decider, [payload, NORMAL], entities)
        extra_mb = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        if result.failures:
            outcome = "dead-letter " + result.failures[0][1]
        else:
            outcome = "decided" + (" (truncated)" if result.decisions[0].truncated else "")
        ratio = ms / max(len(payload), 100_000) * 100_000
        worst = max(worst, ratio)
        ok = (
            ratio <= MS_PER_100_KB
            and extra_mb <= EXTRA_MB
            and result.decisions[-1].message_id == "next"
        )
        if not ok:
            failed.append(family)
        print(
            f"{family:<24} {outcome:<22} {len(payload):>10,} {ms:>8.1f} {ratio:>9.1f} "
            f"{extra_mb:>6.1f}{'' if ok else '  <- over a bound'}"
        )
    print(
        f"worst: {worst:.1f} ms per 100 KB (bound {MS_PER_100_KB:g}); over a bound: "
        f"{', '.join(failed) or 'none'}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
