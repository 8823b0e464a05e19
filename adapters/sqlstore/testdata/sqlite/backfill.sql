-- the merge and the insert take updated_at
DROP TABLE IF EXISTS subagentctx_backfill_stage;

CREATE TEMP TABLE subagentctx_backfill_stage AS SELECT message_id, task_session_id, task_id, tool_call_id, recoverable, created, turn_id, parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms, observed_at, settled_at
	FROM (SELECT v.*, ROW_NUMBER() OVER (PARTITION BY tool_call_id, task_session_id
		ORDER BY created DESC, message_id DESC) AS rn FROM (SELECT CAST(v.id AS TEXT) AS message_id,
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
	WHERE v.x IS NOT NULL) v WHERE v.recoverable = 1) v
	WHERE v.rn = 1;

BEGIN IMMEDIATE;

SELECT MAX(created) FROM subagentctx_backfill_stage;

UPDATE task_session_subagents AS t SET task_id = r.task_id,
		turn_id = COALESCE(r.turn_id, t.turn_id),
		parent_tool_call_id = COALESCE(t.parent_tool_call_id, r.parent_tool_call_id),
		subagent_type = COALESCE(t.subagent_type, r.subagent_type),
		description = COALESCE(t.description, r.description),
		agent_id = COALESCE(t.agent_id, r.agent_id),
		child_session_id = COALESCE(t.child_session_id, r.child_session_id),
		model = COALESCE(t.model, r.model),
		agent_status = CASE WHEN t.agent_status = 'unknown' AND NULL IS NOT NULL THEN r.agent_status ELSE COALESCE(t.agent_status, r.agent_status) END,
		tool_status = CASE WHEN r.settled_at IS NOT NULL THEN r.tool_status ELSE COALESCE(t.tool_status, r.tool_status) END,
		is_async = CASE WHEN r.is_async = 1 OR t.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(t.total_tokens, r.total_tokens),
		tool_use_count = COALESCE(t.tool_use_count, r.tool_use_count),
		duration_ms = COALESCE(t.duration_ms, r.duration_ms),
		input_tokens = CASE WHEN t.input_tokens IS NOT NULL AND (NULL IS NULL OR t.input_tokens > NULL) THEN t.input_tokens ELSE NULL END,
		output_tokens = CASE WHEN t.output_tokens IS NOT NULL AND (NULL IS NULL OR t.output_tokens > NULL) THEN t.output_tokens ELSE NULL END,
		cache_read_tokens = CASE WHEN t.cache_read_tokens IS NOT NULL AND (NULL IS NULL OR t.cache_read_tokens > NULL) THEN t.cache_read_tokens ELSE NULL END,
		cache_write_tokens = CASE WHEN t.cache_write_tokens IS NOT NULL AND (NULL IS NULL OR t.cache_write_tokens > NULL) THEN t.cache_write_tokens ELSE NULL END,
		requests = CASE WHEN t.requests IS NOT NULL AND (NULL IS NULL OR t.requests > NULL) THEN t.requests ELSE NULL END,
		source = 'backfill',
		observed_at = r.observed_at,
		settled_at = COALESCE(r.settled_at, t.settled_at),
		started_at = CASE WHEN t.started_at IS NOT NULL AND (NULL IS NULL OR t.started_at <= NULL) THEN t.started_at ELSE NULL END,
		ended_at = CASE WHEN t.started_at > NULL THEN t.ended_at ELSE COALESCE(NULL, t.ended_at) END,
		updated_at = ?
	FROM subagentctx_backfill_stage r
	WHERE t.task_session_id = r.task_session_id AND t.tool_call_id = r.tool_call_id
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = t.task_session_id AND o.tool_call_id = t.tool_call_id
			AND ((unixepoch(substr(o.observed_at, 1, 19) || CASE WHEN substr(o.observed_at, 20, 1) = '.' THEN ltrim(substr(o.observed_at, 21), '0123456789') ELSE substr(o.observed_at, 20) END) * 1000000 + CASE WHEN substr(o.observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(o.observed_at, 21), 1, length(substr(o.observed_at, 21)) - length(ltrim(substr(o.observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) < (unixepoch(substr(t.observed_at, 1, 19) || CASE WHEN substr(t.observed_at, 20, 1) = '.' THEN ltrim(substr(t.observed_at, 21), '0123456789') ELSE substr(t.observed_at, 20) END) * 1000000 + CASE WHEN substr(t.observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(t.observed_at, 21), 1, length(substr(t.observed_at, 21)) - length(ltrim(substr(t.observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) OR ((unixepoch(substr(o.observed_at, 1, 19) || CASE WHEN substr(o.observed_at, 20, 1) = '.' THEN ltrim(substr(o.observed_at, 21), '0123456789') ELSE substr(o.observed_at, 20) END) * 1000000 + CASE WHEN substr(o.observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(o.observed_at, 21), 1, length(substr(o.observed_at, 21)) - length(ltrim(substr(o.observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) = (unixepoch(substr(t.observed_at, 1, 19) || CASE WHEN substr(t.observed_at, 20, 1) = '.' THEN ltrim(substr(t.observed_at, 21), '0123456789') ELSE substr(t.observed_at, 20) END) * 1000000 + CASE WHEN substr(t.observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(t.observed_at, 21), 1, length(substr(t.observed_at, 21)) - length(ltrim(substr(t.observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) AND o.agent_execution_id < t.agent_execution_id)));

INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, agent_execution_id, tool_call_id, parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, requests, source, observed_at, settled_at, started_at, ended_at, updated_at, seam_checked)
	SELECT r.message_id, r.task_session_id, r.task_id, r.turn_id, 'unknown', r.tool_call_id, r.parent_tool_call_id, r.subagent_type, r.description, r.agent_id, r.child_session_id, r.model, r.agent_status, r.tool_status, r.is_async, r.total_tokens, r.tool_use_count, r.duration_ms, NULL, NULL, NULL, NULL, NULL, 'backfill', r.observed_at, r.settled_at, NULL, NULL, ?, 1
	FROM subagentctx_backfill_stage r
	WHERE EXISTS (SELECT 1 FROM "task_sessions" x WHERE x.id = r.task_session_id)
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents t WHERE t.task_session_id = r.task_session_id AND t.tool_call_id = r.tool_call_id)
	ON CONFLICT DO NOTHING;

COMMIT;

DROP TABLE IF EXISTS subagentctx_backfill_stage;
