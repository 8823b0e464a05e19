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
	input_tokens         INTEGER,
	output_tokens        INTEGER,
	cache_read_tokens    INTEGER,
	cache_write_tokens   INTEGER,
	requests             INTEGER,
	source               TEXT NOT NULL DEFAULT 'live',
	observed_at          TIMESTAMP NOT NULL,
	settled_at           TIMESTAMP,
	started_at           TIMESTAMP,
	ended_at             TIMESTAMP,
	updated_at           TIMESTAMP NOT NULL,
	seam_checked         INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (task_session_id, id),
	CONSTRAINT task_session_subagents_key UNIQUE (task_session_id, agent_execution_id, tool_call_id),
	CONSTRAINT task_session_subagents_session_fk FOREIGN KEY (task_session_id) REFERENCES "task_sessions"(id) ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS idx_subagents_session_id ON task_session_subagents(task_session_id);

CREATE INDEX IF NOT EXISTS idx_subagents_task_id ON task_session_subagents(task_id);

CREATE INDEX IF NOT EXISTS idx_subagents_turn_id ON task_session_subagents(turn_id);

CREATE INDEX IF NOT EXISTS idx_subagents_observed_at ON task_session_subagents(observed_at);

CREATE INDEX IF NOT EXISTS idx_subagents_history ON task_session_subagents(task_session_id, tool_call_id) WHERE agent_execution_id = 'unknown' AND source = 'backfill';

CREATE INDEX IF NOT EXISTS idx_subagents_unchecked ON task_session_subagents(task_session_id, tool_call_id) WHERE seam_checked = 0;

CREATE INDEX IF NOT EXISTS idx_subagents_session_order ON task_session_subagents(task_session_id, (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END), tool_call_id, agent_execution_id);

CREATE TABLE IF NOT EXISTS "subagentctx_meta" (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '');

DROP TRIGGER IF EXISTS subagentctx_absorb_v1;

DROP INDEX IF EXISTS idx_subagents_history;

CREATE UNIQUE INDEX idx_subagents_history ON task_session_subagents(task_session_id, tool_call_id, agent_execution_id) WHERE agent_execution_id = 'unknown';
