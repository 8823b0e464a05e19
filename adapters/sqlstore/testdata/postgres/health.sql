WITH a AS MATERIALIZED (SELECT DISTINCT z.task_session_id FROM (
	SELECT x.task_session_id FROM "task_session_messages" x
		WHERE x.created_at >= ? AND CASE WHEN isfinite(x.created_at) THEN CASE WHEN (EXTRACT(EPOCH FROM x.created_at) * 1000000) BETWEEN -62135596799999999 AND 253402300799999999 THEN (EXTRACT(EPOCH FROM x.created_at) * 1000000)::bigint END END >= ?
	UNION ALL
	SELECT y.task_session_id FROM task_session_subagents y WHERE y.observed_at >= ?) z),
p AS MATERIALIZED (SELECT u.task_session_id, u.tool_call_id, MAX(u.due) AS due, MAX(u.messaged) AS messaged,
		MAX(CASE WHEN u.observed_us >= ? THEN 1 ELSE 0 END) AS recent, MAX(u.stored) AS stored,
		count(DISTINCT CASE WHEN u.observed_us >= ? THEN u.execution END) AS executions,
		MIN(u.due_at) AS due_first, MIN(CASE WHEN u.observed_us >= ? THEN u.observed_us END) AS recent_first,
		MAX(CASE WHEN u.observed_us >= ? THEN u.observed_us END) AS last_observed_us,
		MAX(CASE WHEN u.write_us >= ? THEN u.write_us END) AS last_write_us,
		MAX(u.history) AS history, MAX(CASE WHEN u.execution IS NULL THEN 0 ELSE 1 END) AS keyed,
		MIN(u.observed_us) AS stored_first
	FROM (SELECT v.task_session_id, v.tool_call_id,
			CASE WHEN v.recoverable = 1 AND v.created >= ? THEN 1 ELSE 0 END AS due, 1 AS messaged,
			0 AS stored, CAST(NULL AS TEXT) AS execution,
			CASE WHEN v.recoverable = 1 AND v.created >= ? THEN v.created END AS due_at,
			CAST(NULL AS BIGINT) AS observed_us, CAST(NULL AS BIGINT) AS write_us, 0 AS history
		FROM (SELECT k.message_id, k.task_session_id, k.task_id, k.tool_call_id, k.recoverable, k.created
	FROM (SELECT k.*, CASE WHEN k.task_session_id <> '' AND k.task_id <> '' AND k.message_id <> ''
			AND k.tool_call_id IS NOT NULL AND k.created IS NOT NULL
			AND COALESCE(octet_length(k.message_id), 0) <= 512
			AND COALESCE(octet_length(k.task_session_id), 0) <= 512
			AND COALESCE(octet_length(k.task_id), 0) <= 512
			AND COALESCE(octet_length(k.turn_id), 0) <= 512
			AND COALESCE(octet_length(k.tool_call_id), 0) <= 512
			AND COALESCE(octet_length(k.parent_tool_call_id), 0) <= 512 THEN 1 ELSE 0 END AS recoverable
		FROM (SELECT d.*, CASE WHEN jsonb_typeof(doc #> '{tool_call_id}') = 'string' THEN NULLIF((doc #>> '{tool_call_id}'), '') END AS tool_call_id,
			CASE WHEN jsonb_typeof(doc #> '{parent_tool_call_id}') = 'string' THEN NULLIF((doc #>> '{parent_tool_call_id}'), '') END AS parent_tool_call_id
			FROM (SELECT m.id::text AS message_id, m.task_session_id::text AS task_session_id,
					m.task_id::text AS task_id, NULLIF(m.turn_id::text, '') AS turn_id,
					CASE WHEN isfinite(m.created_at) THEN CASE WHEN (EXTRACT(EPOCH FROM m.created_at) * 1000000) BETWEEN -62135596799999999 AND 253402300799999999 THEN (EXTRACT(EPOCH FROM m.created_at) * 1000000)::bigint END END AS created,
					CASE WHEN isfinite(m.updated_at) THEN CASE WHEN (EXTRACT(EPOCH FROM m.updated_at) * 1000000) BETWEEN -62135596799999999 AND 253402300799999999 THEN (EXTRACT(EPOCH FROM m.updated_at) * 1000000)::bigint END END AS updated,
					f.doc
				FROM "task_session_messages" m CROSS JOIN LATERAL subagentctx_metadata_v1(m.metadata::text) AS f(doc)
				WHERE (strpos(m.metadata::text, 'subagent_task') > 0 OR strpos(m.metadata::text, E'\\u') > 0) AND (m.task_session_id = ANY(ARRAY(SELECT a.task_session_id FROM a)))) d
			WHERE d.doc #>> '{normalized,kind}' = 'subagent_task') k) k) v
		UNION ALL
		SELECT t.task_session_id, t.tool_call_id, 0, 0, 1,
			CASE WHEN t.agent_execution_id <> 'unknown' THEN t.agent_execution_id END,
			CAST(NULL AS BIGINT), (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint, (EXTRACT(EPOCH FROM t.updated_at) * 1000000)::bigint,
			CASE WHEN t.agent_execution_id = 'unknown' AND t.source = 'backfill' THEN 1 ELSE 0 END
		FROM task_session_subagents t WHERE t.task_session_id = ANY(ARRAY(SELECT a.task_session_id FROM a))) u
	GROUP BY u.task_session_id, u.tool_call_id)
SELECT 0 AS part,
	COALESCE(SUM(CASE WHEN p.due = 1 AND p.stored = 0 THEN 1 ELSE 0 END), 0) AS shortfall,
	COALESCE(SUM(CASE WHEN p.recent = 1 AND p.messaged = 0 THEN 1 ELSE 0 END), 0) AS excess,
	COALESCE(SUM(CASE WHEN p.executions > 1 THEN 1 ELSE 0 END), 0) AS collisions,
	COALESCE(SUM(CASE WHEN p.history = 1 AND p.keyed = 1 THEN 1 ELSE 0 END), 0) AS doubled,
	MAX(p.last_observed_us) AS last_observed_us, MAX(p.last_write_us) AS last_write_us,
	CAST(NULL AS TEXT) AS task_session_id, CAST(NULL AS TEXT) AS tool_call_id,
	MIN(CASE WHEN 1 = 0 THEN p.due_first END) AS due_first, CAST(NULL AS BIGINT) AS recent_first
FROM p
UNION ALL
SELECT * FROM (SELECT 1 AS part, 0 AS shortfall, 0 AS excess, 0 AS collisions, 0 AS doubled,
		CAST(NULL AS BIGINT) AS last_observed_us, CAST(NULL AS BIGINT) AS last_write_us,
		p.task_session_id, p.tool_call_id, p.due_first AS due_first, CAST(NULL AS BIGINT) AS recent_first FROM p p
	WHERE p.due = 1 AND p.stored = 0
	ORDER BY p.due_first, p.task_session_id COLLATE "C", p.tool_call_id COLLATE "C"
	LIMIT 20) missing
UNION ALL
SELECT * FROM (SELECT 2 AS part, 0 AS shortfall, 0 AS excess, 0 AS collisions, 0 AS doubled,
		CAST(NULL AS BIGINT) AS last_observed_us, CAST(NULL AS BIGINT) AS last_write_us,
		p.task_session_id, p.tool_call_id, CASE WHEN 1 = 0 THEN p.due_first END AS due_first, p.recent_first AS recent_first FROM p p
	WHERE p.recent = 1 AND p.messaged = 0
	ORDER BY p.recent_first, p.task_session_id COLLATE "C", p.tool_call_id COLLATE "C"
	LIMIT 20) excess
UNION ALL
SELECT * FROM (SELECT 3 AS part, 0 AS shortfall, 0 AS excess, 0 AS collisions, 0 AS doubled,
		CAST(NULL AS BIGINT) AS last_observed_us, CAST(NULL AS BIGINT) AS last_write_us,
		p.task_session_id, p.tool_call_id, CASE WHEN 1 = 0 THEN p.due_first END AS due_first, p.stored_first AS recent_first FROM p p
	WHERE p.history = 1 AND p.keyed = 1
	ORDER BY p.stored_first, p.task_session_id COLLATE "C", p.tool_call_id COLLATE "C"
	LIMIT 20) doubled
ORDER BY 1;
-- arguments: 2026-08-12 23:10:00.500001001 +0000 UTC 1786576200500002 2026-08-12 23:10:00.500002 +0000 UTC 1786576200500002 1786576200500002 1786576200500002 1786576200500002 1786576200500002 1786576200500002 1786576200500002
