-- Partitions where maintenance found corruption: truncated tails, bad batches kept below the
-- recovery point, invalid indexes, failures.
SELECT ts, job, log_dir, topic, partition, action, files, bytes_removed, reason
FROM maintenance_log
WHERE action IN ('truncate_segment', 'corruption_detected', 'index_mismatch', 'rebuild_index')
   OR status IN ('failed', 'corrupt')
ORDER BY ts, log_dir, topic, partition
