SELECT p.task_session_id, MIN(p.task_id) AS task_id, SUM(p.n) AS subagents, count(p.turn_id) AS turns,
	MAX(CASE WHEN p.turn_id IS NOT NULL THEN p.n END) AS max_fan_out, SUM(p.open) AS open,
	MIN(p.first_us) AS first_us, MAX(p.last_us) AS last_us
FROM (SELECT task_session_id, turn_id, MIN(task_id) AS task_id, count(*) AS n,
		SUM(CASE WHEN settled_at IS NULL THEN 1 ELSE 0 END) AS open,
		MIN((EXTRACT(EPOCH FROM observed_at) * 1000000)::bigint) AS first_us, MAX((EXTRACT(EPOCH FROM observed_at) * 1000000)::bigint) AS last_us
	FROM task_session_subagents GROUP BY task_session_id, turn_id) p
GROUP BY p.task_session_id
ORDER BY last_us DESC, p.task_session_id COLLATE "C" LIMIT 200;
