INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, agent_execution_id, tool_call_id, parent_tool_call_id,
        subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count,
        duration_ms, source, observed_at, settled_at, updated_at, seam_checked)
    SELECT id, task_session_id, task_id, NULLIF(turn_id, ''), 'unknown', doc ->> 'tool_call_id', NULLIF(doc ->> 'parent_tool_call_id', ''),
        NULLIF(doc #>> '{normalized,subagent_task,subagent_type}', ''), NULLIF(doc #>> '{normalized,subagent_task,description}', ''),
        NULLIF(doc #>> '{normalized,subagent_task,agent_id}', ''), NULLIF(doc #>> '{normalized,subagent_task,child_session_id}', ''),
        NULLIF(doc #>> '{normalized,subagent_task,model}', ''), NULLIF(doc #>> '{normalized,subagent_task,status}', ''), NULLIF(doc ->> 'status', ''),
        CASE WHEN (doc #>> '{normalized,subagent_task,is_async}') IN ('true', '1') THEN 1 ELSE 0 END,
        NULLIF((doc #>> '{normalized,subagent_task,total_tokens}')::numeric::bigint, 0), (doc #>> '{normalized,subagent_task,tool_use_count}')::numeric::bigint,
        NULLIF((doc #>> '{normalized,subagent_task,duration_ms}')::numeric::bigint, 0), 'backfill', created_at,
        CASE WHEN doc ->> 'status' IN ('complete', 'completed', 'success', 'error', 'failed', 'cancelled') THEN updated_at END, $1, 1
    FROM (SELECT m.*, d.doc, ROW_NUMBER() OVER (PARTITION BY m.task_session_id, d.doc ->> 'tool_call_id' ORDER BY m.created_at DESC, m.id DESC) AS rn
        FROM task_session_messages m CROSS JOIN LATERAL subagentctx_metadata_v1(m.metadata) AS d(doc)
        WHERE (strpos(m.metadata, 'subagent_task') > 0 OR strpos(m.metadata, E'\\u') > 0)
            AND d.doc #>> '{normalized,kind}' = 'subagent_task' AND m.task_session_id <> '' AND m.task_id <> '' AND d.doc ->> 'tool_call_id' <> '') r
    WHERE rn = 1
    ON CONFLICT DO NOTHING;
