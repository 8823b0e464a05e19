WITH p AS MATERIALIZED (SELECT u.task_session_id, u.tool_call_id, MAX(u.due) AS due, MAX(u.messaged) AS messaged,
		MAX(CASE WHEN u.observed_us >= ? THEN 1 ELSE 0 END) AS recent, MAX(u.stored) AS stored,
		count(DISTINCT CASE WHEN u.observed_us >= ? THEN u.execution END) AS executions,
		MIN(u.due_at) AS due_first, MIN(CASE WHEN u.observed_us >= ? THEN u.observed_us END) AS recent_first,
		MAX(CASE WHEN u.observed_us >= ? THEN u.observed_us END) AS last_observed_us,
		MAX(CASE WHEN u.write_us >= ? THEN u.write_us END) AS last_write_us
	FROM (SELECT v.task_session_id, v.tool_call_id,
			CASE WHEN v.recoverable = 1 AND v.created >= ? THEN 1 ELSE 0 END AS due, 1 AS messaged,
			0 AS stored, CAST(NULL AS TEXT) AS execution,
			CASE WHEN v.recoverable = 1 AND v.created >= ? THEN v.created END AS due_at,
			CAST(NULL AS BIGINT) AS observed_us, CAST(NULL AS BIGINT) AS write_us
		FROM (SELECT e.message_id, e.task_session_id, e.task_id, e.tool_call_id, e.recoverable, e.created,
		e.turn_id,
		e.parent_tool_call_id,
		e.subagent_type,
		e.description,
		e.agent_id,
		e.child_session_id,
		e.model,
		e.agent_status,
		e.tool_status,
		e.is_async,
		e.total_tokens,
		e.tool_use_count,
		e.duration_ms,
		(TIMESTAMP 'epoch' + (e.created / 1000000) * INTERVAL '1 second' + (e.created % 1000000) * INTERVAL '1 microsecond') AT TIME ZONE 'UTC' AS observed_at,
		CASE WHEN e.tool_status IN ('complete', 'completed', 'success', 'error', 'failed', 'cancelled') THEN (TIMESTAMP 'epoch' + (e.updated / 1000000) * INTERVAL '1 second' + (e.updated % 1000000) * INTERVAL '1 microsecond') AT TIME ZONE 'UTC' END AS settled_at
	FROM (SELECT k.*, CASE WHEN jsonb_typeof(doc #> '{normalized,subagent_task,subagent_type}') = 'string' THEN NULLIF((doc #>> '{normalized,subagent_task,subagent_type}'), '') END AS subagent_type,
		CASE WHEN jsonb_typeof(doc #> '{normalized,subagent_task,description}') = 'string' THEN NULLIF((doc #>> '{normalized,subagent_task,description}'), '') END AS description,
		CASE WHEN jsonb_typeof(doc #> '{normalized,subagent_task,agent_id}') = 'string' THEN NULLIF((doc #>> '{normalized,subagent_task,agent_id}'), '') END AS agent_id,
		CASE WHEN jsonb_typeof(doc #> '{normalized,subagent_task,child_session_id}') = 'string' THEN NULLIF((doc #>> '{normalized,subagent_task,child_session_id}'), '') END AS child_session_id,
		CASE WHEN jsonb_typeof(doc #> '{normalized,subagent_task,model}') = 'string' THEN NULLIF((doc #>> '{normalized,subagent_task,model}'), '') END AS model,
		CASE WHEN jsonb_typeof(doc #> '{normalized,subagent_task,status}') = 'string' THEN NULLIF((doc #>> '{normalized,subagent_task,status}'), '') END AS agent_status,
		CASE WHEN jsonb_typeof(doc #> '{status}') = 'string' THEN NULLIF((doc #>> '{status}'), '') END AS tool_status,
		CASE WHEN jsonb_typeof(doc #> '{normalized,subagent_task,is_async}') = 'boolean' THEN CASE WHEN (doc #>> '{normalized,subagent_task,is_async}') = 'true' THEN 1 ELSE 0 END WHEN jsonb_typeof(doc #> '{normalized,subagent_task,is_async}') = 'number' THEN CASE WHEN (doc #>> '{normalized,subagent_task,is_async}')::numeric = 1 THEN 1 ELSE 0 END ELSE 0 END AS is_async,
		CASE WHEN jsonb_typeof(doc #> '{normalized,subagent_task,total_tokens}') = 'number' THEN CASE WHEN (doc #>> '{normalized,subagent_task,total_tokens}')::numeric = trunc((doc #>> '{normalized,subagent_task,total_tokens}')::numeric) AND (doc #>> '{normalized,subagent_task,total_tokens}')::numeric BETWEEN 1 AND 9223372036854775807 THEN (doc #>> '{normalized,subagent_task,total_tokens}')::numeric::bigint END END AS total_tokens,
		CASE WHEN jsonb_typeof(doc #> '{normalized,subagent_task,tool_use_count}') = 'number' THEN CASE WHEN (doc #>> '{normalized,subagent_task,tool_use_count}')::numeric = trunc((doc #>> '{normalized,subagent_task,tool_use_count}')::numeric) AND (doc #>> '{normalized,subagent_task,tool_use_count}')::numeric BETWEEN 0 AND 9223372036854775807 THEN (doc #>> '{normalized,subagent_task,tool_use_count}')::numeric::bigint END END AS tool_use_count,
		CASE WHEN jsonb_typeof(doc #> '{normalized,subagent_task,duration_ms}') = 'number' THEN CASE WHEN (doc #>> '{normalized,subagent_task,duration_ms}')::numeric = trunc((doc #>> '{normalized,subagent_task,duration_ms}')::numeric) AND (doc #>> '{normalized,subagent_task,duration_ms}')::numeric BETWEEN 1 AND 9223372036854775807 THEN (doc #>> '{normalized,subagent_task,duration_ms}')::numeric::bigint END END AS duration_ms
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
				WHERE (strpos(m.metadata::text, 'subagent_task') > 0 OR strpos(m.metadata::text, E'\\u') > 0) AND (1 = 1)) d
			WHERE d.doc #>> '{normalized,kind}' = 'subagent_task') k) k) e) v
		UNION ALL
		SELECT t.task_session_id, t.tool_call_id, 0, 0, 1,
			CASE WHEN t.agent_execution_id <> 'unknown' THEN t.agent_execution_id END,
			CAST(NULL AS BIGINT), (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint, (EXTRACT(EPOCH FROM t.updated_at) * 1000000)::bigint
		FROM task_session_subagents t WHERE 1 = 1) u
	GROUP BY u.task_session_id, u.tool_call_id)
SELECT 0 AS part,
	COALESCE(SUM(CASE WHEN p.due = 1 AND p.stored = 0 THEN 1 ELSE 0 END), 0) AS shortfall,
	COALESCE(SUM(CASE WHEN p.recent = 1 AND p.messaged = 0 THEN 1 ELSE 0 END), 0) AS excess,
	COALESCE(SUM(CASE WHEN p.executions > 1 THEN 1 ELSE 0 END), 0) AS collisions,
	MAX(p.last_observed_us) AS last_observed_us, MAX(p.last_write_us) AS last_write_us,
	CAST(NULL AS TEXT) AS task_session_id, CAST(NULL AS TEXT) AS tool_call_id,
	MIN(CASE WHEN 1 = 0 THEN p.due_first END) AS due_first, CAST(NULL AS BIGINT) AS recent_first
FROM p
UNION ALL
SELECT * FROM (SELECT 1 AS part, 0 AS shortfall, 0 AS excess, 0 AS collisions,
		CAST(NULL AS BIGINT) AS last_observed_us, CAST(NULL AS BIGINT) AS last_write_us,
		p.task_session_id, p.tool_call_id, p.due_first AS due_first, CAST(NULL AS BIGINT) AS recent_first FROM p p
	WHERE p.due = 1 AND p.stored = 0
	ORDER BY p.due_first, p.task_session_id COLLATE "C", p.tool_call_id COLLATE "C"
	LIMIT 20) missing
UNION ALL
SELECT * FROM (SELECT 2 AS part, 0 AS shortfall, 0 AS excess, 0 AS collisions,
		CAST(NULL AS BIGINT) AS last_observed_us, CAST(NULL AS BIGINT) AS last_write_us,
		p.task_session_id, p.tool_call_id, CASE WHEN 1 = 0 THEN p.due_first END AS due_first, p.recent_first AS recent_first FROM p p
	WHERE p.recent = 1 AND p.messaged = 0
	ORDER BY p.recent_first, p.task_session_id COLLATE "C", p.tool_call_id COLLATE "C"
	LIMIT 20) excess
ORDER BY 1;
-- arguments: 1786576200500002 1786576200500002 1786576200500002 1786576200500002 1786576200500002 1786576200500002 1786576200500002
