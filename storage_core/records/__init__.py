"""Kafka's record formats: v2 record batches, legacy v0/v1 messages, codecs and file framing."""
