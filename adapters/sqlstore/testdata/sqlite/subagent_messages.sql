SELECT CAST(v.id AS TEXT) AS message_id,
		CAST(v.task_session_id AS TEXT) AS task_session_id,
		CAST(v.task_id AS TEXT) AS task_id,
		json_extract(v.x, '$.tool_call_id') AS tool_call_id,
		json_extract(v.x, '$.recoverable') AS recoverable,
		json_extract(v.x, '$.created') AS created,
		json_extract(v.x, '$.turn_id') AS turn_id,
		json_extract(v.x, '$.parent_tool_call_id') AS parent_tool_call_id,
		json_extract(v.x, '$.subagent_type') AS subagent_type,
		json_extract(v.x, '$.description') AS description,
		json_extract(v.x, '$.agent_id') AS agent_id,
		json_extract(v.x, '$.child_session_id') AS child_session_id,
		json_extract(v.x, '$.model') AS model,
		json_extract(v.x, '$.agent_status') AS agent_status,
		json_extract(v.x, '$.tool_status') AS tool_status,
		json_extract(v.x, '$.is_async') AS is_async,
		json_extract(v.x, '$.total_tokens') AS total_tokens,
		json_extract(v.x, '$.tool_use_count') AS tool_use_count,
		json_extract(v.x, '$.duration_ms') AS duration_ms,
		json_extract(v.x, '$.observed_at') AS observed_at,
		json_extract(v.x, '$.settled_at') AS settled_at
	FROM (SELECT m.id, m.task_session_id, m.task_id,
			subagentctx_message(CAST(m.id AS BLOB), CAST(m.task_session_id AS BLOB), CAST(m.task_id AS BLOB),
				CAST(m.turn_id AS BLOB), CAST(m.metadata AS BLOB), CAST(m.created_at AS BLOB), CAST(m.updated_at AS BLOB)) AS x
		FROM "task_session_messages" m
		WHERE (instr(m.metadata, 'subagent_task') > 0 OR instr(m.metadata, '\u') > 0)
		LIMIT -1 OFFSET 0) v
	WHERE v.x IS NOT NULL;
