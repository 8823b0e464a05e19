-- the merge and the insert take updated_at
BEGIN;

LOCK TABLE task_session_subagents IN SHARE ROW EXCLUSIVE MODE;

SET LOCAL enable_nestloop = off;

SET LOCAL jit = off;

WITH staged AS MATERIALIZED (SELECT e.message_id, e.task_session_id, e.task_id, e.tool_call_id, e.recoverable, e.created,
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
		FROM (SELECT * FROM (SELECT k.*, ROW_NUMBER() OVER (PARTITION BY tool_call_id, task_session_id
		ORDER BY created DESC, message_id COLLATE "C" DESC) AS rn FROM (SELECT k.*, CASE WHEN k.task_session_id <> '' AND k.task_id <> '' AND k.message_id <> ''
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
				WHERE (strpos(m.metadata::text, 'subagent_task') > 0 OR strpos(m.metadata::text, E'\\u') > 0)) d
			WHERE d.doc #>> '{normalized,kind}' = 'subagent_task') k) k WHERE k.recoverable = 1) k
		WHERE k.rn = 1) k) e),
	merged AS (UPDATE task_session_subagents AS t SET task_id = r.task_id,
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
	FROM staged r
	WHERE t.task_session_id = r.task_session_id AND t.tool_call_id = r.tool_call_id
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = t.task_session_id AND o.tool_call_id = t.tool_call_id
			AND ((EXTRACT(EPOCH FROM o.observed_at) * 1000000)::bigint < (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint OR ((EXTRACT(EPOCH FROM o.observed_at) * 1000000)::bigint = (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint AND o.agent_execution_id COLLATE "C" < t.agent_execution_id COLLATE "C")))
	RETURNING 1),
	inserted AS (INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, agent_execution_id, tool_call_id, parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, requests, source, observed_at, settled_at, started_at, ended_at, updated_at, seam_checked)
	SELECT r.message_id, r.task_session_id, r.task_id, r.turn_id, 'unknown', r.tool_call_id, r.parent_tool_call_id, r.subagent_type, r.description, r.agent_id, r.child_session_id, r.model, r.agent_status, r.tool_status, r.is_async, r.total_tokens, r.tool_use_count, r.duration_ms, NULL, NULL, NULL, NULL, NULL, 'backfill', r.observed_at, r.settled_at, NULL, NULL, ?, 1
	FROM staged r
	WHERE EXISTS (SELECT 1 FROM "task_sessions" x WHERE x.id = r.task_session_id)
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents t WHERE t.task_session_id = r.task_session_id AND t.tool_call_id = r.tool_call_id)
	ON CONFLICT DO NOTHING
	RETURNING 1)
SELECT (SELECT MAX(created) FROM staged) AS through, (SELECT count(*) FROM inserted) AS inserted,
	(SELECT count(*) FROM merged) AS merged;

COMMIT;
