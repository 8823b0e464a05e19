-- the first draft's table upgraded in one transaction (statements between catalog reads)
ALTER TABLE task_session_subagents ADD COLUMN IF NOT EXISTS agent_execution_id TEXT NOT NULL DEFAULT 'unknown';

ALTER TABLE task_session_subagents DROP CONSTRAINT "task_session_subagents_task_session_id_tool_call_id_key";

ALTER TABLE task_session_subagents ADD CONSTRAINT task_session_subagents_key UNIQUE (task_session_id, agent_execution_id, tool_call_id);

ALTER TABLE task_session_subagents DROP CONSTRAINT "task_session_subagents_pkey", ADD PRIMARY KEY (task_session_id, id);

ALTER TABLE task_session_subagents ALTER COLUMN total_tokens TYPE BIGINT;

ALTER TABLE task_session_subagents ALTER COLUMN tool_use_count TYPE BIGINT;

ALTER TABLE task_session_subagents ALTER COLUMN duration_ms TYPE BIGINT;

ALTER TABLE task_session_subagents ALTER COLUMN observed_at TYPE TIMESTAMPTZ USING observed_at AT TIME ZONE 'UTC';

ALTER TABLE task_session_subagents ALTER COLUMN settled_at TYPE TIMESTAMPTZ USING settled_at AT TIME ZONE 'UTC';

ALTER TABLE task_session_subagents ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING updated_at AT TIME ZONE 'UTC';
