-- Partitions due for compaction: the latest cleaner plan of each partition, by dirty ratio.
SELECT log_dir, topic, partition, ts,
       CAST(regexp_extract(reason, 'dirty ratio ([0-9.]+)', 1) AS DOUBLE) AS dirty_ratio,
       CAST(regexp_extract(reason, 'min.cleanable.dirty.ratio ([0-9.]+)', 1) AS DOUBLE) AS min_cleanable_ratio
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY log_dir, topic, partition ORDER BY ts DESC) AS newest
  FROM maintenance_log
  WHERE job = 'compact' AND action = 'clean_plan'
)
WHERE newest = 1
ORDER BY dirty_ratio DESC
