-- Compacted partitions whose cleaning is stuck or behind: each partition's newest explanation
-- (logkeeper compact --explain) where max.compaction.lag.ms is overdue, the dedupe buffer cannot hold
-- the dirty keys, an open transaction holds the cleanable section back, or the cleaner would clean
-- it now and nothing has; the largest estimated savings first.
WITH newest AS (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY log_dir, topic, partition ORDER BY run_ts DESC, ts DESC) AS n
  FROM compaction_explain
)
SELECT log_dir, topic, partition, run_ts,
       CASE WHEN overdue_ms IS NOT NULL THEN 'max_compaction_lag_overdue'
            WHEN uncleanable_reason = 'open_transaction' THEN 'open_transaction'
            WHEN NOT buffer_fits THEN 'dedupe_buffer_too_small'
            ELSE 'due_not_cleaned' END AS stuck_reason,
       reason_code, uncleanable_reason, dirty_ratio, min_cleanable_ratio, overdue_ms, dirty_keys,
       dedupe_buffer_keys, reclaimable_bytes, first_dirty_offset, first_uncleanable_offset
FROM newest
WHERE n = 1
  AND (overdue_ms IS NOT NULL OR NOT buffer_fits OR uncleanable_reason = 'open_transaction' OR is_candidate)
ORDER BY reclaimable_bytes DESC, log_dir, topic, partition
