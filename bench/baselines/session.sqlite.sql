SELECT * FROM task_session_subagents WHERE task_session_id = ?
    ORDER BY observed_at, tool_call_id, agent_execution_id;
