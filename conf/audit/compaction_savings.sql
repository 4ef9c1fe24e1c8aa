-- Bytes compaction removed per topic.
SELECT topic, COUNT(DISTINCT run_id) AS runs, COUNT(*) AS passes, SUM(bytes_removed) AS bytes_saved
FROM maintenance_log
WHERE job = 'compact' AND action = 'clean_pass' AND NOT dry_run
GROUP BY topic
ORDER BY bytes_saved DESC
