SELECT count(*) FROM task_session_messages
    WHERE (strpos(metadata, 'subagent_task') > 0 OR strpos(metadata, E'\\u') > 0)
    AND subagentctx_metadata_v1(metadata) #>> '{normalized,kind}' = 'subagent_task';
