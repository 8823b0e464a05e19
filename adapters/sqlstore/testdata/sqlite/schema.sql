CREATE TABLE IF NOT EXISTS task_session_subagents (
	id                   TEXT NOT NULL,
	task_session_id      TEXT NOT NULL,
	task_id              TEXT NOT NULL,
	turn_id              TEXT,
	agent_execution_id   TEXT NOT NULL DEFAULT 'unknown',
	tool_call_id         TEXT NOT NULL,
	parent_tool_call_id  TEXT,
	subagent_type        TEXT,
	description          TEXT,
	agent_id             TEXT,
	child_session_id     TEXT,
	model                TEXT,
	agent_status         TEXT,
	tool_status          TEXT,
	is_async             INTEGER NOT NULL DEFAULT 0,
	total_tokens         INTEGER,
	tool_use_count       INTEGER,
	duration_ms          INTEGER,
	source               TEXT NOT NULL DEFAULT 'live',
	observed_at          TIMESTAMP NOT NULL,
	settled_at           TIMESTAMP,
	updated_at           TIMESTAMP NOT NULL,
	PRIMARY KEY (task_session_id, id),
	CONSTRAINT task_session_subagents_key UNIQUE (task_session_id, agent_execution_id, tool_call_id),
	CONSTRAINT task_session_subagents_session_fk FOREIGN KEY (task_session_id) REFERENCES "task_sessions"(id) ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS idx_subagents_session_id ON task_session_subagents(task_session_id);

CREATE INDEX IF NOT EXISTS idx_subagents_task_id ON task_session_subagents(task_id);

CREATE INDEX IF NOT EXISTS idx_subagents_turn_id ON task_session_subagents(turn_id);

CREATE INDEX IF NOT EXISTS idx_subagents_observed_at ON task_session_subagents(observed_at);

CREATE INDEX IF NOT EXISTS idx_subagents_history ON task_session_subagents(task_session_id, tool_call_id) WHERE agent_execution_id = 'unknown' AND source = 'backfill';

CREATE INDEX IF NOT EXISTS idx_subagents_session_order ON task_session_subagents(task_session_id, (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END), tool_call_id, agent_execution_id);

CREATE TABLE IF NOT EXISTS "kandev_meta" (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '');

SAVEPOINT subagentctx_trigger; DROP TRIGGER IF EXISTS subagentctx_absorb_v1; CREATE TRIGGER subagentctx_absorb_v1 AFTER INSERT ON task_session_subagents FOR EACH ROW
WHEN NEW.agent_execution_id <> 'unknown'
	AND EXISTS (SELECT 1 FROM task_session_subagents WHERE task_session_id = NEW.task_session_id AND tool_call_id = NEW.tool_call_id AND agent_execution_id = 'unknown' AND source = 'backfill')
BEGIN
	UPDATE task_session_subagents SET task_id = b.task_id,
		turn_id = COALESCE(b.turn_id, task_session_subagents.turn_id),
		parent_tool_call_id = COALESCE(task_session_subagents.parent_tool_call_id, b.parent_tool_call_id),
		subagent_type = COALESCE(task_session_subagents.subagent_type, b.subagent_type),
		description = COALESCE(task_session_subagents.description, b.description),
		agent_id = COALESCE(task_session_subagents.agent_id, b.agent_id),
		child_session_id = COALESCE(task_session_subagents.child_session_id, b.child_session_id),
		model = COALESCE(task_session_subagents.model, b.model),
		agent_status = COALESCE(task_session_subagents.agent_status, b.agent_status),
		tool_status = CASE WHEN b.settled_at IS NOT NULL THEN b.tool_status ELSE COALESCE(task_session_subagents.tool_status, b.tool_status) END,
		is_async = CASE WHEN b.is_async = 1 OR task_session_subagents.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(task_session_subagents.total_tokens, b.total_tokens),
		tool_use_count = COALESCE(task_session_subagents.tool_use_count, b.tool_use_count),
		duration_ms = COALESCE(task_session_subagents.duration_ms, b.duration_ms),
		source = b.source,
		observed_at = b.observed_at,
		settled_at = COALESCE(b.settled_at, task_session_subagents.settled_at)
		FROM (SELECT * FROM task_session_subagents WHERE task_session_id = NEW.task_session_id AND tool_call_id = NEW.tool_call_id AND agent_execution_id = 'unknown' AND source = 'backfill') AS b
		WHERE task_session_subagents.task_session_id = NEW.task_session_id AND task_session_subagents.id = NEW.id;
	DELETE FROM task_session_subagents WHERE task_session_id = NEW.task_session_id AND tool_call_id = NEW.tool_call_id AND agent_execution_id = 'unknown' AND source = 'backfill';
END; RELEASE subagentctx_trigger;
