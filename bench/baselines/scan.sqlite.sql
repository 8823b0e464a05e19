SELECT count(*) FROM task_session_messages
    WHERE (instr(metadata, 'subagent_task') > 0 OR instr(metadata, '\u') > 0)
    AND json_valid(metadata) AND json_extract(metadata, '$.normalized.kind') = 'subagent_task';
