"""Finding the message that feedback names by id only, wherever it was decided.

Tried in this order, cheapest first, each for the ids the one before did not find:
1. the messages this process scored recently (`RecentMessages`): no I/O;
2. the review queue, which keeps the tokens of the messages it holds (`filterd.store.review`);
3. the tokens kept with a decided message that was small (`filterd.store.decided`,
   `feedback.keep_tokens_bytes`), for as long as its row is kept (`feedback.resolve_ttl`);
4. the decided messages' coordinates (`filterd.store.decided`), by which the message is read
   back from the messages topic while Kafka retains it; the record read must carry the id.
What none of them finds is parked by the learner and tried again later. A broker that cannot be
reached makes step 4 find nothing this time, never fails the batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kafka.errors import KafkaError
from structlog.typing import FilteringBoundLogger

from filterd.daemon.recent import RecentMessages
from filterd.kafka.fetch import RecordFetcher
from filterd.observe.logs import Repeats
from filterd.service.decide import accepted_tokens
from filterd.service.records import Message, RecordError, decode
from filterd.store.handle import ModelStore
from filterd.tokenize import Tokenizer


class Resolver:
    """id → tokens of the messages it can find (`resolve`); `connect_fetcher` makes the reader
    of the messages topic on first need (a broker down at start-up is retried then)."""

    def __init__(
        self,
        model: ModelStore,
        recent: RecentMessages,
        messages_topic: str,
        tokenizer: Tokenizer,
        max_bytes: int,
        connect_fetcher: Callable[[], RecordFetcher],
        log: FilteringBoundLogger,
    ) -> None:
        self.model, self.recent = model, recent
        self.messages_topic, self.tokenizer, self.max_bytes = messages_topic, tokenizer, max_bytes
        self.connect_fetcher = connect_fetcher
        self.log = log
        self.repeats = Repeats()
        self._fetcher: RecordFetcher | None = None

    def resolve(self, message_ids: Sequence[str]) -> dict[str, list[str]]:
        """The tokens of each message of `message_ids` found (StoreError if the store fails)."""
        found: dict[str, list[str]] = {}
        missing = []
        for message_id in dict.fromkeys(message_ids):
            tokens = self.recent.get(message_id)
            if tokens is None:
                missing.append(message_id)
            else:
                found[message_id] = tokens
        if not missing:
            return found
        found |= self.model.review_tokens(missing)
        missing = [m for m in missing if m not in found]
        found |= self.model.decided_tokens(missing) if missing else {}
        missing = [m for m in missing if m not in found]
        coordinates = self.model.where_decided(missing) if missing else {}
        if coordinates:
            found |= self._read_back(coordinates)
        return found

    def _read_back(self, coordinates: Mapping[str, tuple[int, int]]) -> dict[str, list[str]]:
        """The tokens of the messages read back at their coordinates in the messages topic."""
        try:
            if self._fetcher is None:
                self._fetcher = self.connect_fetcher()
            values = self._fetcher.fetch(self.messages_topic, set(coordinates.values()))
        except KafkaError as error:
            self.repeats.warning(
                self.log,
                "messages topic unreadable: feedback by id waits",
                topic=self.messages_topic,
                error=str(error),
            )
            return {}
        found: dict[str, list[str]] = {}
        for message_id, where in coordinates.items():
            value = values.get(where)
            if value is None:  # no longer retained, or not read within the fetch's time
                continue
            try:
                message = decode(value, Message, self.max_bytes)
                if message.id == message_id:  # else another message's id shares the hash
                    found[message_id] = list(
                        accepted_tokens(self.tokenizer, message.id, message).tokens
                    )
            except RecordError:  # limits lowered since it was decided
                continue
        return found

    def close(self) -> None:
        if self._fetcher is not None:
            self._fetcher.close()
            self._fetcher = None
