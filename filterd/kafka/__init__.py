"""Kafka through kafka-python: client settings, batched consuming, publishing, topic creation."""
