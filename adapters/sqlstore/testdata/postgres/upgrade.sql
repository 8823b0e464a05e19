-- the first draft's table brought to its declared shape in one transaction (statements between catalog reads)
BEGIN;

LOCK TABLE task_session_subagents IN SHARE ROW EXCLUSIVE MODE;

ALTER TABLE task_session_subagents ADD COLUMN agent_execution_id TEXT NOT NULL DEFAULT 'unknown';

ALTER TABLE task_session_subagents DROP CONSTRAINT "task_session_subagents_task_session_id_tool_call_id_key";

ALTER TABLE task_session_subagents ADD CONSTRAINT task_session_subagents_key UNIQUE (task_session_id, agent_execution_id, tool_call_id);

ALTER TABLE task_session_subagents ALTER COLUMN total_tokens TYPE BIGINT;

ALTER TABLE task_session_subagents ALTER COLUMN tool_use_count TYPE BIGINT;

ALTER TABLE task_session_subagents ALTER COLUMN duration_ms TYPE BIGINT;

ALTER TABLE task_session_subagents ALTER COLUMN observed_at TYPE TIMESTAMPTZ USING observed_at AT TIME ZONE 'UTC';

ALTER TABLE task_session_subagents ALTER COLUMN settled_at TYPE TIMESTAMPTZ USING settled_at AT TIME ZONE 'UTC';

ALTER TABLE task_session_subagents ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING updated_at AT TIME ZONE 'UTC';

ALTER TABLE task_session_subagents DROP CONSTRAINT "task_session_subagents_pkey", ADD PRIMARY KEY (task_session_id, id);

UPDATE task_session_subagents AS t SET task_id = b.task_id,
		turn_id = COALESCE(b.turn_id, t.turn_id),
		parent_tool_call_id = COALESCE(t.parent_tool_call_id, b.parent_tool_call_id),
		subagent_type = COALESCE(t.subagent_type, b.subagent_type),
		description = COALESCE(t.description, b.description),
		agent_id = COALESCE(t.agent_id, b.agent_id),
		child_session_id = COALESCE(t.child_session_id, b.child_session_id),
		model = COALESCE(t.model, b.model),
		agent_status = COALESCE(t.agent_status, b.agent_status),
		tool_status = CASE WHEN b.settled_at IS NOT NULL THEN b.tool_status ELSE COALESCE(t.tool_status, b.tool_status) END,
		is_async = CASE WHEN b.is_async = 1 OR t.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(t.total_tokens, b.total_tokens),
		tool_use_count = COALESCE(t.tool_use_count, b.tool_use_count),
		duration_ms = COALESCE(t.duration_ms, b.duration_ms),
		source = b.source,
		observed_at = b.observed_at,
		settled_at = COALESCE(b.settled_at, t.settled_at),
		updated_at = ?
	FROM task_session_subagents AS b
	WHERE b.agent_execution_id = 'unknown' AND b.source = 'backfill' AND t.task_session_id = b.task_session_id AND t.tool_call_id = b.tool_call_id
		AND t.agent_execution_id <> 'unknown' AND NOT EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = t.task_session_id AND o.tool_call_id = t.tool_call_id AND o.agent_execution_id <> 'unknown'
			AND ((EXTRACT(EPOCH FROM o.observed_at) * 1000000)::bigint < (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint OR ((EXTRACT(EPOCH FROM o.observed_at) * 1000000)::bigint = (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint AND o.agent_execution_id COLLATE "C" < t.agent_execution_id COLLATE "C")))
		AND (b.task_session_id, b.tool_call_id) IN (SELECT task_session_id, tool_call_id
		FROM task_session_subagents GROUP BY task_session_id, tool_call_id HAVING count(*) > 1);

DELETE FROM task_session_subagents WHERE task_session_subagents.agent_execution_id = 'unknown' AND task_session_subagents.source = 'backfill'
	AND EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = task_session_subagents.task_session_id AND o.tool_call_id = task_session_subagents.tool_call_id AND o.agent_execution_id <> 'unknown')
	AND (task_session_subagents.task_session_id, task_session_subagents.tool_call_id) IN (SELECT task_session_id, tool_call_id
		FROM task_session_subagents GROUP BY task_session_id, tool_call_id HAVING count(*) > 1);

ALTER TABLE task_session_subagents ADD COLUMN seam_checked INTEGER NOT NULL DEFAULT 1;

ALTER TABLE task_session_subagents ALTER COLUMN seam_checked SET DEFAULT 0;

UPDATE task_session_subagents AS t SET task_id = b.task_id,
		turn_id = COALESCE(b.turn_id, t.turn_id),
		parent_tool_call_id = COALESCE(t.parent_tool_call_id, b.parent_tool_call_id),
		subagent_type = COALESCE(t.subagent_type, b.subagent_type),
		description = COALESCE(t.description, b.description),
		agent_id = COALESCE(t.agent_id, b.agent_id),
		child_session_id = COALESCE(t.child_session_id, b.child_session_id),
		model = COALESCE(t.model, b.model),
		agent_status = COALESCE(t.agent_status, b.agent_status),
		tool_status = CASE WHEN b.settled_at IS NOT NULL THEN b.tool_status ELSE COALESCE(t.tool_status, b.tool_status) END,
		is_async = CASE WHEN b.is_async = 1 OR t.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(t.total_tokens, b.total_tokens),
		tool_use_count = COALESCE(t.tool_use_count, b.tool_use_count),
		duration_ms = COALESCE(t.duration_ms, b.duration_ms),
		source = b.source,
		observed_at = b.observed_at,
		settled_at = COALESCE(b.settled_at, t.settled_at),
		updated_at = ?
	FROM task_session_subagents AS b
	WHERE b.agent_execution_id = 'unknown' AND b.source = 'backfill' AND t.task_session_id = b.task_session_id AND t.tool_call_id = b.tool_call_id
		AND t.agent_execution_id <> 'unknown' AND NOT EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = t.task_session_id AND o.tool_call_id = t.tool_call_id AND o.agent_execution_id <> 'unknown'
			AND ((EXTRACT(EPOCH FROM o.observed_at) * 1000000)::bigint < (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint OR ((EXTRACT(EPOCH FROM o.observed_at) * 1000000)::bigint = (EXTRACT(EPOCH FROM t.observed_at) * 1000000)::bigint AND o.agent_execution_id COLLATE "C" < t.agent_execution_id COLLATE "C")))
		AND (b.task_session_id, b.tool_call_id) IN (SELECT task_session_id, tool_call_id
		FROM task_session_subagents GROUP BY task_session_id, tool_call_id HAVING count(*) > 1);

DELETE FROM task_session_subagents WHERE task_session_subagents.agent_execution_id = 'unknown' AND task_session_subagents.source = 'backfill'
	AND EXISTS (SELECT 1 FROM task_session_subagents o WHERE o.task_session_id = task_session_subagents.task_session_id AND o.tool_call_id = task_session_subagents.tool_call_id AND o.agent_execution_id <> 'unknown')
	AND (task_session_subagents.task_session_id, task_session_subagents.tool_call_id) IN (SELECT task_session_id, tool_call_id
		FROM task_session_subagents GROUP BY task_session_id, tool_call_id HAVING count(*) > 1);

UPDATE task_session_subagents SET seam_checked = 1 WHERE seam_checked = 0;

ALTER TABLE task_session_subagents ADD COLUMN input_tokens BIGINT;

ALTER TABLE task_session_subagents ADD COLUMN output_tokens BIGINT;

ALTER TABLE task_session_subagents ADD COLUMN cache_read_tokens BIGINT;

ALTER TABLE task_session_subagents ADD COLUMN cache_write_tokens BIGINT;

ALTER TABLE task_session_subagents ADD COLUMN requests BIGINT;

ALTER TABLE task_session_subagents ADD COLUMN started_at TIMESTAMPTZ;

ALTER TABLE task_session_subagents ADD COLUMN ended_at TIMESTAMPTZ;
