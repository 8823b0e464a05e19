-- the first rows of the next turns
SELECT r.turn_id, r.observed_at, r.tool_call_id, r.agent_execution_id
FROM task_session_subagents r
WHERE r.task_session_id = ?
	AND r.observed_at >= ? AND (? < r.observed_at OR (? = r.observed_at AND (? < r.tool_call_id COLLATE "C" OR (? = r.tool_call_id COLLATE "C" AND ? < r.agent_execution_id COLLATE "C"))))
	AND NOT EXISTS (SELECT 1 FROM task_session_subagents o
		WHERE o.turn_id = r.turn_id AND o.task_session_id = ? AND (o.observed_at < r.observed_at OR (o.observed_at = r.observed_at AND (o.tool_call_id COLLATE "C" < r.tool_call_id COLLATE "C" OR (o.tool_call_id COLLATE "C" = r.tool_call_id COLLATE "C" AND o.agent_execution_id COLLATE "C" < r.agent_execution_id COLLATE "C")))))
	AND (r.turn_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM task_session_subagents o
		WHERE o.task_session_id = ? AND o.turn_id IS NULL AND o.observed_at <= r.observed_at AND (o.observed_at < r.observed_at OR (o.observed_at = r.observed_at AND (o.tool_call_id COLLATE "C" < r.tool_call_id COLLATE "C" OR (o.tool_call_id COLLATE "C" = r.tool_call_id COLLATE "C" AND o.agent_execution_id COLLATE "C" < r.agent_execution_id COLLATE "C"))))))
ORDER BY r.observed_at, r.tool_call_id COLLATE "C", r.agent_execution_id COLLATE "C"
LIMIT ?;
-- arguments: sess-1 2026-08-12 23:10:00.500002 +0000 UTC 2026-08-12 23:10:00.500002 +0000 UTC 2026-08-12 23:10:00.500002 +0000 UTC    sess-1 sess-1 26

-- of the turns before a cursor
SELECT r.turn_id, r.observed_at, r.tool_call_id, r.agent_execution_id
FROM task_session_subagents r
WHERE r.task_session_id = ?
	AND r.observed_at <= ? AND (r.observed_at < ? OR (r.observed_at = ? AND (r.tool_call_id COLLATE "C" < ? OR (r.tool_call_id COLLATE "C" = ? AND r.agent_execution_id COLLATE "C" < ?))))
	AND NOT EXISTS (SELECT 1 FROM task_session_subagents o
		WHERE o.turn_id = r.turn_id AND o.task_session_id = ? AND (o.observed_at < r.observed_at OR (o.observed_at = r.observed_at AND (o.tool_call_id COLLATE "C" < r.tool_call_id COLLATE "C" OR (o.tool_call_id COLLATE "C" = r.tool_call_id COLLATE "C" AND o.agent_execution_id COLLATE "C" < r.agent_execution_id COLLATE "C")))))
	AND (r.turn_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM task_session_subagents o
		WHERE o.task_session_id = ? AND o.turn_id IS NULL AND o.observed_at <= r.observed_at AND (o.observed_at < r.observed_at OR (o.observed_at = r.observed_at AND (o.tool_call_id COLLATE "C" < r.tool_call_id COLLATE "C" OR (o.tool_call_id COLLATE "C" = r.tool_call_id COLLATE "C" AND o.agent_execution_id COLLATE "C" < r.agent_execution_id COLLATE "C"))))))
ORDER BY r.observed_at DESC, r.tool_call_id COLLATE "C" DESC, r.agent_execution_id COLLATE "C" DESC
LIMIT ?;
-- arguments: sess-1 2026-08-12 23:10:00.500002 +0000 UTC 2026-08-12 23:10:00.500002 +0000 UTC 2026-08-12 23:10:00.500002 +0000 UTC    sess-1 sess-1 26

-- every row of the page's turns (two, and the rows without one)
SELECT id, task_session_id, task_id, turn_id, agent_execution_id, tool_call_id, parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, requests, source, observed_at, settled_at, started_at, ended_at, updated_at FROM task_session_subagents WHERE task_session_id = ? AND (turn_id IN (?, ?) OR turn_id IS NULL) ORDER BY (EXTRACT(EPOCH FROM observed_at) * 1000000)::bigint, tool_call_id COLLATE "C", agent_execution_id COLLATE "C";
-- arguments: sess-1 turn-1 turn-2
