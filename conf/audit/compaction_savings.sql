-- Bytes compaction removed per topic (real runs only, not dry-run plans).
SELECT topic, COUNT(DISTINCT run_id) AS runs, COUNT(*) AS passes, CAST(SUM(bytes_removed) AS BIGINT) AS bytes_saved
FROM maintenance_log
WHERE job = 'compact' AND action = 'clean_pass' AND NOT dry_run
GROUP BY topic
ORDER BY bytes_saved DESC, topic
