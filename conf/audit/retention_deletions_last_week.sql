-- What retention deleted in the 7 days before now (wall clock), and by which rule: one row per
-- segment (its `.log` file).
SELECT ts, run_ts, log_dir, topic, partition, files AS segment, bytes_removed, retention_rule, reason
FROM maintenance_log
WHERE job = 'retention' AND action = 'delete_segment' AND files LIKE '%.log' AND NOT dry_run
  AND ts >= CURRENT_TIMESTAMP - INTERVAL '7' DAY
ORDER BY ts, topic, partition, base_offset
