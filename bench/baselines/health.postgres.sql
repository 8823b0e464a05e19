WITH m AS MATERIALIZED (SELECT task_session_id, doc ->> 'tool_call_id' AS tool_call_id, created_at
        FROM (SELECT task_session_id, created_at, subagentctx_metadata_v1(metadata) AS doc FROM task_session_messages
            WHERE strpos(metadata, 'subagent_task') > 0 OR strpos(metadata, E'\\u') > 0 OFFSET 0) d
        WHERE doc #>> '{normalized,kind}' = 'subagent_task')
    SELECT (SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM m WHERE created_at >= $1 AND tool_call_id IS NOT NULL
        EXCEPT SELECT task_session_id, tool_call_id FROM task_session_subagents) i),
    (SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM task_session_subagents WHERE observed_at >= $2
        EXCEPT SELECT task_session_id, tool_call_id FROM m) x);
