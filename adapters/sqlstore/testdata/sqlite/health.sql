WITH a AS MATERIALIZED (SELECT DISTINCT z.task_session_id FROM (
	SELECT x.task_session_id FROM "task_session_messages" x
		WHERE x.created_at >= '2026-08-12 09' AND CASE WHEN x.created_at < ? AND substr(x.created_at, -6) = '+00:00' THEN 0 ELSE subagentctx_instant(CAST(x.created_at AS TEXT)) >= ? END
	UNION ALL
	SELECT y.task_session_id FROM task_session_subagents y WHERE y.observed_at >= '2026-08-12 09' AND CASE WHEN substr(y.observed_at, 11, 1) = ' ' AND substr(y.observed_at, -6) = '+00:00' THEN y.observed_at >= ? ELSE (unixepoch(substr(y.observed_at, 1, 19) || CASE WHEN substr(y.observed_at, 20, 1) = '.' THEN ltrim(substr(y.observed_at, 21), '0123456789') ELSE substr(y.observed_at, 20) END) * 1000000 + CASE WHEN substr(y.observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(y.observed_at, 21), 1, length(substr(y.observed_at, 21)) - length(ltrim(substr(y.observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) >= ? END) z),
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
		FROM (SELECT CAST(v.id AS TEXT) AS message_id,
		CAST(v.task_session_id AS TEXT) AS task_session_id,
		CAST(v.task_id AS TEXT) AS task_id,
		json_extract(v.x, '$.tool_call_id') AS tool_call_id,
		json_extract(v.x, '$.recoverable') AS recoverable,
		json_extract(v.x, '$.created') AS created
	FROM (SELECT m.id, m.task_session_id, m.task_id,
			subagentctx_message_key(CAST(m.id AS BLOB), CAST(m.task_session_id AS BLOB), CAST(m.task_id AS BLOB),
				CAST(m.turn_id AS BLOB), CAST(m.metadata AS BLOB), CAST(m.created_at AS BLOB), CAST(m.updated_at AS BLOB)) AS x
		FROM "task_session_messages" m
		WHERE (instr(m.metadata, 'subagent_task') > 0 OR instr(m.metadata, '\u') > 0) AND (m.task_session_id IN (SELECT a.task_session_id FROM a))
		LIMIT -1 OFFSET 0) v
	WHERE v.x IS NOT NULL) v
		UNION ALL
		SELECT t.task_session_id, t.tool_call_id, 0, 0, 1,
			CASE WHEN t.agent_execution_id <> 'unknown' THEN t.agent_execution_id END,
			CAST(NULL AS BIGINT), (unixepoch(substr(t.observed_at, 1, 19) || CASE WHEN substr(t.observed_at, 20, 1) = '.' THEN ltrim(substr(t.observed_at, 21), '0123456789') ELSE substr(t.observed_at, 20) END) * 1000000 + CASE WHEN substr(t.observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(t.observed_at, 21), 1, length(substr(t.observed_at, 21)) - length(ltrim(substr(t.observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END), (unixepoch(substr(t.updated_at, 1, 19) || CASE WHEN substr(t.updated_at, 20, 1) = '.' THEN ltrim(substr(t.updated_at, 21), '0123456789') ELSE substr(t.updated_at, 20) END) * 1000000 + CASE WHEN substr(t.updated_at, 20, 1) = '.' THEN CAST(substr(substr(substr(t.updated_at, 21), 1, length(substr(t.updated_at, 21)) - length(ltrim(substr(t.updated_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END),
			CASE WHEN t.agent_execution_id = 'unknown' AND t.source = 'backfill' THEN 1 ELSE 0 END
		FROM task_session_subagents t WHERE t.task_session_id IN (SELECT a.task_session_id FROM a)) u
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
	ORDER BY p.due_first, p.task_session_id, p.tool_call_id
	LIMIT 20) missing
UNION ALL
SELECT * FROM (SELECT 2 AS part, 0 AS shortfall, 0 AS excess, 0 AS collisions, 0 AS doubled,
		CAST(NULL AS BIGINT) AS last_observed_us, CAST(NULL AS BIGINT) AS last_write_us,
		p.task_session_id, p.tool_call_id, CASE WHEN 1 = 0 THEN p.due_first END AS due_first, p.recent_first AS recent_first FROM p p
	WHERE p.recent = 1 AND p.messaged = 0
	ORDER BY p.recent_first, p.task_session_id, p.tool_call_id
	LIMIT 20) excess
UNION ALL
SELECT * FROM (SELECT 3 AS part, 0 AS shortfall, 0 AS excess, 0 AS collisions, 0 AS doubled,
		CAST(NULL AS BIGINT) AS last_observed_us, CAST(NULL AS BIGINT) AS last_write_us,
		p.task_session_id, p.tool_call_id, CASE WHEN 1 = 0 THEN p.due_first END AS due_first, p.stored_first AS recent_first FROM p p
	WHERE p.history = 1 AND p.keyed = 1
	ORDER BY p.stored_first, p.task_session_id, p.tool_call_id
	LIMIT 20) doubled
ORDER BY 1;
-- arguments: 2026-08-12 23:10 2026-08-12T23:10:00.500001001Z 2026-08-12 23:10:00.500002+00:00 1786576200500002 1786576200500002 1786576200500002 1786576200500002 1786576200500002 1786576200500002 2026-08-12T23:10:00.500001001Z 2026-08-12T23:10:00.500001001Z
