-- every pass once the shape holds, on one server: a probe of the unchecked rows' index; when it finds one, the rest in one transaction
SELECT count(*) FROM (SELECT 1 FROM task_session_subagents WHERE seam_checked = 0 LIMIT 1) u;

UPDATE task_session_subagents AS t SET task_id = b.task_id,
		turn_id = COALESCE(b.turn_id, t.turn_id),
		parent_tool_call_id = COALESCE(t.parent_tool_call_id, b.parent_tool_call_id),
		subagent_type = COALESCE(t.subagent_type, b.subagent_type),
		description = COALESCE(t.description, b.description),
		agent_id = COALESCE(t.agent_id, b.agent_id),
		child_session_id = COALESCE(t.child_session_id, b.child_session_id),
		model = COALESCE(t.model, b.model),
		agent_status = CASE WHEN t.agent_status = 'unknown' AND b.ended_at IS NOT NULL THEN b.agent_status ELSE COALESCE(t.agent_status, b.agent_status) END,
		tool_status = CASE WHEN b.settled_at IS NOT NULL THEN b.tool_status ELSE COALESCE(t.tool_status, b.tool_status) END,
		is_async = CASE WHEN b.is_async = 1 OR t.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(t.total_tokens, b.total_tokens),
		tool_use_count = COALESCE(t.tool_use_count, b.tool_use_count),
		duration_ms = COALESCE(t.duration_ms, b.duration_ms),
		input_tokens = CASE WHEN t.input_tokens IS NOT NULL AND (b.input_tokens IS NULL OR t.input_tokens > b.input_tokens) THEN t.input_tokens ELSE b.input_tokens END,
		output_tokens = CASE WHEN t.output_tokens IS NOT NULL AND (b.output_tokens IS NULL OR t.output_tokens > b.output_tokens) THEN t.output_tokens ELSE b.output_tokens END,
		cache_read_tokens = CASE WHEN t.cache_read_tokens IS NOT NULL AND (b.cache_read_tokens IS NULL OR t.cache_read_tokens > b.cache_read_tokens) THEN t.cache_read_tokens ELSE b.cache_read_tokens END,
		cache_write_tokens = CASE WHEN t.cache_write_tokens IS NOT NULL AND (b.cache_write_tokens IS NULL OR t.cache_write_tokens > b.cache_write_tokens) THEN t.cache_write_tokens ELSE b.cache_write_tokens END,
		requests = CASE WHEN t.requests IS NOT NULL AND (b.requests IS NULL OR t.requests > b.requests) THEN t.requests ELSE b.requests END,
		source = b.source,
		observed_at = b.observed_at,
		settled_at = COALESCE(b.settled_at, t.settled_at),
		started_at = CASE WHEN t.started_at IS NOT NULL AND (b.started_at IS NULL OR t.started_at <= b.started_at) THEN t.started_at ELSE b.started_at END,
		ended_at = CASE WHEN t.started_at > b.ended_at THEN t.ended_at ELSE COALESCE(b.ended_at, t.ended_at) END,
		updated_at = ?
	FROM task_session_subagents AS b
	WHERE b.agent_execution_id = 'unknown' AND b.source = 'backfill' AND t.task_session_id = b.task_session_id AND t.tool_call_id = b.tool_call_id
		AND t.agent_execution_id <> 'unknown' AND NOT EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = t.task_session_id AND o.tool_call_id = t.tool_call_id AND o.agent_execution_id <> 'unknown'
			AND ((EXTRACT(EPOCH FROM o.observed_at) * 1000000)::bigint < (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint OR ((EXTRACT(EPOCH FROM o.observed_at) * 1000000)::bigint = (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint AND o.agent_execution_id COLLATE "C" < t.agent_execution_id COLLATE "C")))
		AND EXISTS (SELECT 1 FROM task_session_subagents u WHERE u.seam_checked = 0 AND u.task_session_id = b.task_session_id AND u.tool_call_id = b.tool_call_id);

DELETE FROM task_session_subagents WHERE task_session_subagents.agent_execution_id = 'unknown' AND task_session_subagents.source = 'backfill'
	AND EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = task_session_subagents.task_session_id AND o.tool_call_id = task_session_subagents.tool_call_id AND o.agent_execution_id <> 'unknown')
	AND EXISTS (SELECT 1 FROM task_session_subagents u WHERE u.seam_checked = 0 AND u.task_session_id = task_session_subagents.task_session_id AND u.tool_call_id = task_session_subagents.tool_call_id);

UPDATE task_session_subagents SET seam_checked = 1 WHERE task_session_subagents.seam_checked = 0
	AND NOT (EXISTS (SELECT 1 FROM task_session_subagents b WHERE b.agent_execution_id = 'unknown' AND b.source = 'backfill' AND b.task_session_id = task_session_subagents.task_session_id AND b.tool_call_id = task_session_subagents.tool_call_id)
		AND EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = task_session_subagents.task_session_id AND o.tool_call_id = task_session_subagents.tool_call_id
			AND o.agent_execution_id <> 'unknown'));

-- where the table's owner made it, in the place of the three above
DO $do$ BEGIN
CREATE OR REPLACE FUNCTION subagentctx_seam_check_895ce6b0(at timestamptz) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER AS $f$
DECLARE n bigint;
BEGIN
UPDATE task_session_subagents AS t SET task_id = b.task_id,
		turn_id = COALESCE(b.turn_id, t.turn_id),
		parent_tool_call_id = COALESCE(t.parent_tool_call_id, b.parent_tool_call_id),
		subagent_type = COALESCE(t.subagent_type, b.subagent_type),
		description = COALESCE(t.description, b.description),
		agent_id = COALESCE(t.agent_id, b.agent_id),
		child_session_id = COALESCE(t.child_session_id, b.child_session_id),
		model = COALESCE(t.model, b.model),
		agent_status = CASE WHEN t.agent_status = 'unknown' AND b.ended_at IS NOT NULL THEN b.agent_status ELSE COALESCE(t.agent_status, b.agent_status) END,
		tool_status = CASE WHEN b.settled_at IS NOT NULL THEN b.tool_status ELSE COALESCE(t.tool_status, b.tool_status) END,
		is_async = CASE WHEN b.is_async = 1 OR t.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(t.total_tokens, b.total_tokens),
		tool_use_count = COALESCE(t.tool_use_count, b.tool_use_count),
		duration_ms = COALESCE(t.duration_ms, b.duration_ms),
		input_tokens = CASE WHEN t.input_tokens IS NOT NULL AND (b.input_tokens IS NULL OR t.input_tokens > b.input_tokens) THEN t.input_tokens ELSE b.input_tokens END,
		output_tokens = CASE WHEN t.output_tokens IS NOT NULL AND (b.output_tokens IS NULL OR t.output_tokens > b.output_tokens) THEN t.output_tokens ELSE b.output_tokens END,
		cache_read_tokens = CASE WHEN t.cache_read_tokens IS NOT NULL AND (b.cache_read_tokens IS NULL OR t.cache_read_tokens > b.cache_read_tokens) THEN t.cache_read_tokens ELSE b.cache_read_tokens END,
		cache_write_tokens = CASE WHEN t.cache_write_tokens IS NOT NULL AND (b.cache_write_tokens IS NULL OR t.cache_write_tokens > b.cache_write_tokens) THEN t.cache_write_tokens ELSE b.cache_write_tokens END,
		requests = CASE WHEN t.requests IS NOT NULL AND (b.requests IS NULL OR t.requests > b.requests) THEN t.requests ELSE b.requests END,
		source = b.source,
		observed_at = b.observed_at,
		settled_at = COALESCE(b.settled_at, t.settled_at),
		started_at = CASE WHEN t.started_at IS NOT NULL AND (b.started_at IS NULL OR t.started_at <= b.started_at) THEN t.started_at ELSE b.started_at END,
		ended_at = CASE WHEN t.started_at > b.ended_at THEN t.ended_at ELSE COALESCE(b.ended_at, t.ended_at) END,
		updated_at = $1
	FROM task_session_subagents AS b
	WHERE b.agent_execution_id = 'unknown' AND b.source = 'backfill' AND t.task_session_id = b.task_session_id AND t.tool_call_id = b.tool_call_id
		AND t.agent_execution_id <> 'unknown' AND NOT EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = t.task_session_id AND o.tool_call_id = t.tool_call_id AND o.agent_execution_id <> 'unknown'
			AND ((EXTRACT(EPOCH FROM o.observed_at) * 1000000)::bigint < (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint OR ((EXTRACT(EPOCH FROM o.observed_at) * 1000000)::bigint = (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint AND o.agent_execution_id COLLATE "C" < t.agent_execution_id COLLATE "C")))
		AND EXISTS (SELECT 1 FROM task_session_subagents u WHERE u.seam_checked = 0 AND u.task_session_id = b.task_session_id AND u.tool_call_id = b.tool_call_id);
GET DIAGNOSTICS n = ROW_COUNT;
DELETE FROM task_session_subagents WHERE task_session_subagents.agent_execution_id = 'unknown' AND task_session_subagents.source = 'backfill'
	AND EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = task_session_subagents.task_session_id AND o.tool_call_id = task_session_subagents.tool_call_id AND o.agent_execution_id <> 'unknown')
	AND EXISTS (SELECT 1 FROM task_session_subagents u WHERE u.seam_checked = 0 AND u.task_session_id = task_session_subagents.task_session_id AND u.tool_call_id = task_session_subagents.tool_call_id);
UPDATE task_session_subagents SET seam_checked = 1 WHERE task_session_subagents.seam_checked = 0
	AND NOT (EXISTS (SELECT 1 FROM task_session_subagents b WHERE b.agent_execution_id = 'unknown' AND b.source = 'backfill' AND b.task_session_id = task_session_subagents.task_session_id AND b.tool_call_id = task_session_subagents.tool_call_id)
		AND EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = task_session_subagents.task_session_id AND o.tool_call_id = task_session_subagents.tool_call_id
			AND o.agent_execution_id <> 'unknown'));
RETURN n;
END
$f$;
EXECUTE format('ALTER FUNCTION subagentctx_seam_check_895ce6b0(timestamptz) SET search_path = %I, pg_temp',
	(SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'task_session_subagents'::regclass));
END $do$;

SELECT subagentctx_seam_check_895ce6b0(?);
