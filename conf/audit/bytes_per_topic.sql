-- Bytes on disk per topic over time (one point per stats run).
SELECT run_ts, topic, COUNT(DISTINCT partition) AS partitions, COUNT(*) AS segments,
       SUM(log_bytes) AS log_bytes, SUM(index_bytes + timeindex_bytes + txnindex_bytes) AS index_bytes,
       SUM(record_count) AS records
FROM segment_stats
GROUP BY run_ts, topic
ORDER BY run_ts, topic
