"""Kafka's log cleaner (compaction): offset map, choosing logs, cleaning passes and the swap protocol."""
