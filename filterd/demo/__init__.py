"""`filterd demo`: a local Kafka-protocol broker, the store and the daemon in one process, fed a
labelled stream."""
