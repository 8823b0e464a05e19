SELECT id, task_session_id, task_id, turn_id, agent_execution_id, tool_call_id, parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms, source, observed_at, settled_at, started_at, ended_at, updated_at FROM task_session_subagents WHERE updated_at >= ? AND updated_at < ? AND (task_session_id COLLATE "C" > ? OR (task_session_id COLLATE "C" = ? AND id COLLATE "C" > ?)) ORDER BY task_session_id COLLATE "C", id COLLATE "C";
-- arguments: 2026-08-12 23:10:00.500002 +0000 UTC 2026-08-13 00:10:00.500002 +0000 UTC sess-1 sess-1 0198a4b0-0000-7000-8000-000000000001

-- a window open at its end (export --since)
SELECT id, task_session_id, task_id, turn_id, agent_execution_id, tool_call_id, parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms, source, observed_at, settled_at, started_at, ended_at, updated_at FROM task_session_subagents WHERE updated_at >= ? ORDER BY task_session_id COLLATE "C", id COLLATE "C";
-- arguments: 2026-08-12 23:10:00.500002 +0000 UTC
