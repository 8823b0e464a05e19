INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, agent_execution_id, tool_call_id, parent_tool_call_id,
        subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count,
        duration_ms, source, observed_at, settled_at, updated_at, seam_checked)
    SELECT id, task_session_id, task_id, NULLIF(turn_id, ''), 'unknown', tc, NULLIF(json_extract(metadata, '$.parent_tool_call_id'), ''),
        NULLIF(json_extract(metadata, '$.normalized.subagent_task.subagent_type'), ''), NULLIF(json_extract(metadata, '$.normalized.subagent_task.description'), ''),
        NULLIF(json_extract(metadata, '$.normalized.subagent_task.agent_id'), ''), NULLIF(json_extract(metadata, '$.normalized.subagent_task.child_session_id'), ''),
        NULLIF(json_extract(metadata, '$.normalized.subagent_task.model'), ''), NULLIF(json_extract(metadata, '$.normalized.subagent_task.status'), ''),
        NULLIF(json_extract(metadata, '$.status'), ''), COALESCE(json_extract(metadata, '$.normalized.subagent_task.is_async'), 0),
        NULLIF(json_extract(metadata, '$.normalized.subagent_task.total_tokens'), 0), json_extract(metadata, '$.normalized.subagent_task.tool_use_count'),
        NULLIF(json_extract(metadata, '$.normalized.subagent_task.duration_ms'), 0), 'backfill', created_at,
        CASE WHEN json_extract(metadata, '$.status') IN ('complete', 'completed', 'success', 'error', 'failed', 'cancelled') THEN updated_at END, ?, 1
    FROM (SELECT m.*, json_extract(metadata, '$.tool_call_id') AS tc,
            ROW_NUMBER() OVER (PARTITION BY task_session_id, json_extract(metadata, '$.tool_call_id') ORDER BY created_at DESC, id DESC) AS rn
        FROM task_session_messages m
        WHERE (instr(metadata, 'subagent_task') > 0 OR instr(metadata, '\u') > 0)
            AND json_valid(metadata) AND json_extract(metadata, '$.normalized.kind') = 'subagent_task'
            AND task_session_id <> '' AND task_id <> '' AND json_extract(metadata, '$.tool_call_id') <> '') r
    WHERE rn = 1
    ON CONFLICT DO NOTHING;
