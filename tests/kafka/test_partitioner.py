"""Kafka's default partitioning, vectorized: the same hash and partitions as kafka-python's
own (pure-Python, per record) DefaultPartitioner."""

from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_murmur2

from filterd.kafka.partitioner import murmur2, partitions_of


@given(st.lists(st.binary(max_size=40), max_size=30))
def test_murmur2_equals_kafkas_for_every_key_length(keys: list[bytes]) -> None:
    assert murmur2(keys).tolist() == [kafka_murmur2(k) for k in keys]


def test_known_values_of_the_java_client() -> None:
    # org.apache.kafka.common.utils.UtilsTest.testMurmur2
    java = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"": 275646681,
    }
    assert murmur2(list(java)).tolist() == [v & 0xFFFFFFFF for v in java.values()]


@given(
    st.lists(st.binary(max_size=20), max_size=20),
    st.sets(st.integers(0, 50), min_size=1, max_size=8),
)
def test_partitions_are_the_default_partitioners_among_sorted_partitions(
    keys: list[bytes], partitions: set[int]
) -> None:
    ordered = sorted(partitions)
    expected = [ordered[(kafka_murmur2(k) & 0x7FFFFFFF) % len(ordered)] for k in keys]
    assert partitions_of(keys, partitions) == expected
