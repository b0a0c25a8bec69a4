"""Kafka, through kafka-python (or librdkafka with `[kafka] client = "confluent"`): client
settings (`settings`), batched consuming (`consumer`), publishing (`publisher`, `producer`),
reading records back by their coordinates (`fetch`), the record batches a consumer cannot
decode (`batches`) and topic creation (`admin`); `memory` is an in-memory broker for tests of
loop logic. `__all__` names the modules other packages use rather than re-exporting their
names: most load kafka-python and the configuration, which `partitioner` and `memory` do not
need."""

__all__ = ["admin", "batches", "consumer", "fetch", "producer", "publisher", "settings"]
