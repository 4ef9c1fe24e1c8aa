-- Partitions where maintenance found corruption: truncated tails, records moved to the quarantine
-- (with the piece's path, offsets and sha256), bad batches kept below the recovery point, invalid
-- indexes, failures.
SELECT ts, job, log_dir, topic, partition, status, action, files, bytes_removed, target AS quarantined_to,
       first_offset, last_offset, sha256, reason
FROM maintenance_log
WHERE action IN ('truncate_segment', 'quarantine', 'corruption_detected', 'index_mismatch', 'rebuild_index')
   OR status IN ('failed', 'corrupt', 'truncated')
ORDER BY ts, log_dir, topic, partition, action, files, base_offset
