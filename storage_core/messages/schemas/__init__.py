"""Our declarations of Kafka's versioned messages, one module per family of records."""
