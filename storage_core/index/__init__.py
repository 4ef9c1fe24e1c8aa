"""Kafka's per-segment indexes: offset (`.index`), time (`.timeindex`) and aborted-transaction (`.txnindex`)."""
