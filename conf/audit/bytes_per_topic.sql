-- Bytes on disk per topic over time: one point per stats run (its logical now, run_ts).
SELECT run_ts, topic, COUNT(DISTINCT partition) AS partitions, COUNT(*) AS segments,
       CAST(SUM(log_bytes) AS BIGINT) AS log_bytes,
       CAST(SUM(index_bytes + timeindex_bytes + txnindex_bytes) AS BIGINT) AS index_bytes,
       CAST(SUM(record_count) AS BIGINT) AS records
FROM segment_stats
GROUP BY run_ts, topic
ORDER BY run_ts, topic
