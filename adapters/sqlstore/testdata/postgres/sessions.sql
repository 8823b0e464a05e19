SELECT p.task_session_id, MIN(p.task_id) AS task_id, SUM(p.n) AS subagents, count(p.turn_id) AS turns,
	MAX(CASE WHEN p.turn_id IS NOT NULL THEN p.n END) AS max_fan_out, SUM(p.open) AS open,
	MIN(p.first_us) AS first_us, MAX(p.last_us) AS last_us
FROM (SELECT task_session_id, turn_id, MIN(task_id) AS task_id, count(*) AS n,
		SUM(CASE WHEN settled_at IS NULL THEN 1 ELSE 0 END) AS open,
		(EXTRACT(EPOCH FROM MIN(observed_at)) * 1000000)::bigint AS first_us, (EXTRACT(EPOCH FROM MAX(observed_at)) * 1000000)::bigint AS last_us
	FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND substr(task_session_id, 1, length(CAST(? AS TEXT))) = CAST(? AS TEXT) GROUP BY task_session_id, turn_id) p
GROUP BY p.task_session_id
HAVING MAX(p.last_us) < ? OR (MAX(p.last_us) = ? AND p.task_session_id COLLATE "C" > CAST(? AS TEXT) COLLATE "C")
ORDER BY last_us DESC, p.task_session_id COLLATE "C" LIMIT 50;
-- arguments: 2026-08-12 23:10:00.500002 +0000 UTC 2026-08-13 00:10:00.500002 +0000 UTC sess- sess- 1786576200500001 1786576200500001 sess-9
