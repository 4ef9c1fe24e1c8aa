-- Partitions due for compaction: each partition's newest cleaner plan, where it was due (dirty ratio
-- above min.cleanable.dirty.ratio, or max.compaction.lag.ms passed) and no real run cleaned it then.
WITH plans AS (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY log_dir, topic, partition ORDER BY run_ts DESC, ts DESC) AS newest
  FROM maintenance_log
  WHERE job = 'compact' AND action = 'clean_plan'
),
cleaned AS (
  SELECT DISTINCT run_id, log_dir, dir_name
  FROM maintenance_log
  WHERE job = 'compact' AND action = 'clean_pass' AND NOT dry_run
)
SELECT p.log_dir, p.topic, p.partition, p.run_ts, p.reason_code, p.dirty_ratio, p.min_cleanable_ratio,
       p.cleanable_bytes, p.first_uncleanable_offset
FROM plans p
LEFT JOIN cleaned c ON c.run_id = p.run_id AND c.log_dir = p.log_dir AND c.dir_name = p.dir_name
WHERE p.newest = 1 AND p.reason_code IN ('dirty_ratio', 'max_compaction_lag') AND c.run_id IS NULL
ORDER BY p.dirty_ratio DESC, p.log_dir, p.topic, p.partition
