WITH m AS MATERIALIZED (SELECT v.task_session_id, v.tool_call_id, v.recoverable, v.created FROM (SELECT CAST(v.id AS TEXT) AS message_id, CAST(v.task_session_id AS TEXT) AS task_session_id,
		CAST(v.task_id AS TEXT) AS task_id, json_extract(v.x, '$.tool_call_id') AS tool_call_id,
		json_extract(v.x, '$.recoverable') AS recoverable, json_extract(v.x, '$.created') AS created,
		NULLIF(CAST(v.turn_id AS TEXT), '') AS turn_id, json_extract(v.x, '$.parent_tool_call_id') AS parent_tool_call_id,
		json_extract(v.x, '$.subagent_type') AS subagent_type, json_extract(v.x, '$.description') AS description,
		json_extract(v.x, '$.agent_id') AS agent_id, json_extract(v.x, '$.child_session_id') AS child_session_id,
		json_extract(v.x, '$.model') AS model, json_extract(v.x, '$.agent_status') AS agent_status,
		json_extract(v.x, '$.tool_status') AS tool_status, json_extract(v.x, '$.is_async') AS is_async,
		json_extract(v.x, '$.total_tokens') AS total_tokens, json_extract(v.x, '$.tool_use_count') AS tool_use_count,
		json_extract(v.x, '$.duration_ms') AS duration_ms, json_extract(v.x, '$.observed_at') AS observed_at,
		json_extract(v.x, '$.settled_at') AS settled_at
	FROM (SELECT m.id, m.task_session_id, m.task_id, m.turn_id,
			subagentctx_message(CAST(m.id AS TEXT), CAST(m.task_session_id AS TEXT), CAST(m.task_id AS TEXT), CAST(m.turn_id AS TEXT),
				CAST(m.metadata AS TEXT), CAST(m.created_at AS TEXT), CAST(m.updated_at AS TEXT)) AS x
		FROM "task_session_messages" m
		WHERE instr(m.metadata, 'subagent_task') > 0 OR instr(m.metadata, '\u') > 0
		LIMIT -1 OFFSET 0) v
	WHERE v.x IS NOT NULL) v),
	r AS MATERIALIZED (SELECT task_session_id, agent_execution_id, tool_call_id, observed_at FROM task_session_subagents
		WHERE (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) >= ?)
SELECT
	(SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM m WHERE recoverable = 1 AND created >= ?
		EXCEPT SELECT task_session_id, tool_call_id FROM task_session_subagents) i) AS shortfall,
	(SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM r
		EXCEPT SELECT task_session_id, tool_call_id FROM m) x) AS excess,
	(SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM r WHERE agent_execution_id <> 'unknown'
		GROUP BY task_session_id, tool_call_id HAVING count(DISTINCT agent_execution_id) > 1) c) AS collisions,
	(SELECT MAX((unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END)) FROM r) AS last_observed_us,
	(SELECT MAX((unixepoch(substr(updated_at, 1, 19) || CASE WHEN substr(updated_at, 20, 1) = '.' THEN ltrim(substr(updated_at, 21), '0123456789') ELSE substr(updated_at, 20) END) * 1000000 + CASE WHEN substr(updated_at, 20, 1) = '.' THEN CAST(substr(substr(substr(updated_at, 21), 1, length(substr(updated_at, 21)) - length(ltrim(substr(updated_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END)) FROM task_session_subagents WHERE (unixepoch(substr(updated_at, 1, 19) || CASE WHEN substr(updated_at, 20, 1) = '.' THEN ltrim(substr(updated_at, 21), '0123456789') ELSE substr(updated_at, 20) END) * 1000000 + CASE WHEN substr(updated_at, 20, 1) = '.' THEN CAST(substr(substr(substr(updated_at, 21), 1, length(substr(updated_at, 21)) - length(ltrim(substr(updated_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) >= ?) AS last_write_us;
-- arguments: 1786576200500002 2026-08-12T23:10:00.500001001Z 1786576200500002
