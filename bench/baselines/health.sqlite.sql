WITH m AS MATERIALIZED (SELECT task_session_id, json_extract(metadata, '$.tool_call_id') AS tool_call_id, created_at FROM task_session_messages
        WHERE (instr(metadata, 'subagent_task') > 0 OR instr(metadata, '\u') > 0)
        AND json_valid(metadata) AND json_extract(metadata, '$.normalized.kind') = 'subagent_task')
    SELECT (SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM m WHERE created_at >= ? AND tool_call_id IS NOT NULL
        EXCEPT SELECT task_session_id, tool_call_id FROM task_session_subagents)),
    (SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM task_session_subagents WHERE observed_at >= ?
        EXCEPT SELECT task_session_id, tool_call_id FROM m));
