"""The demo's labelled stream: a synthetic one, or a corpus replayed in its order, as message
records."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from filterd.demo.options import DemoError, DemoOptions
from filterd.evaluation.corpus import Record
from filterd.evaluation.synth import SynthConfig, generate


@dataclass(frozen=True)
class Item:
    """One message of the replay: its id, its true label and the message record to send."""

    id: str
    label: str
    payload: bytes


def labelled_stream(
    options: DemoOptions, records: Sequence[Record] | None = None
) -> tuple[list[Item], str]:
    """The items to replay, in stream order, and a one-line description of where they come from.

    Synthetic (`filterd.evaluation.synth`, ham and spam) unless `options.corpus`, whose records
    (in their `order`) the caller read and passes as `records`. DemoError for an empty or
    multi-label corpus, or a target class absent from the stream.
    """
    if options.corpus is None:
        n = options.messages or 20_000
        priors = {"ham": 1.0 - options.spam_share, "spam": options.spam_share}
        generated = generate(SynthConfig(n_messages=n, class_priors=priors, seed=options.seed))
        items = [
            Item(
                r["id"], r["label"], _payload({"id": r["id"], "text": r["text"], "format": "text"})
            )
            for r in generated
        ]
        source = (
            f"synthetic stream: {n:,} messages, {options.spam_share:.0%} spam, seed {options.seed}"
        )
    else:
        if records is None:
            raise ValueError("labelled_stream: options.corpus is set but its records are not given")
        if not records:
            raise DemoError(f"{options.corpus}: the corpus is empty")
        multi = next((r for r in records if len(r.labels) != 1), None)
        if multi is not None:
            raise DemoError(
                f"{options.corpus}: record {multi.id!r} has {len(multi.labels)} labels;"
                " the demo replays single-label corpora"
            )
        records = records[: options.messages] if options.messages else records
        # the whole message of each line: its attributes, sender, subject, tenant and ts too
        items = [Item(r.id, r.label, _payload(r.message())) for r in records]
        source = (
            f"corpus {options.corpus.parent.name}/{options.corpus.name}: {len(items):,} "
            "messages in corpus order"
        )
    labels = Counter(item.label for item in items)
    if options.target not in labels:
        raise DemoError(
            f"target class {options.target!r} does not occur in the stream "
            f"(labels: {', '.join(sorted(labels))})"
        )
    if len(labels) < 2:
        raise DemoError(
            f"the stream holds only {options.target!r} messages; it needs another class"
        )
    return items, source


def _payload(message: dict[str, Any]) -> bytes:
    # "id" first (`Record.message` puts it there): a dead letter's payload is cut at a size
    # limit, and the id must survive it.
    return json.dumps(message).encode()


_LEADING_ID = re.compile(r'\A\s*\{\s*"id"\s*:\s*("(?:[^"\\]|\\.)*")')


def payload_id(payload: object) -> str | None:
    """The message id at the start of a dead letter's payload (possibly cut short), or None."""
    if not isinstance(payload, str):
        return None
    match = _LEADING_ID.match(payload)
    try:
        message_id = json.loads(match.group(1)) if match else None
    except ValueError:
        return None
    return message_id if isinstance(message_id, str) else None
