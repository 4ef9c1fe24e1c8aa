-- What retention deleted in the last 7 days, and why (one row per segment: its `.log` file).
SELECT ts, log_dir, topic, partition, files AS segment, bytes_removed, reason
FROM maintenance_log
WHERE job = 'retention' AND action = 'delete_segment' AND files LIKE '%.log' AND NOT dry_run
  AND ts >= current_timestamp() - INTERVAL 7 DAYS
ORDER BY ts, topic, partition, base_offset
