SELECT * FROM task_session_subagents WHERE task_session_id = $1
    ORDER BY observed_at, tool_call_id COLLATE "C", agent_execution_id COLLATE "C";
