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
	total_tokens         BIGINT,
	tool_use_count       BIGINT,
	duration_ms          BIGINT,
	source               TEXT NOT NULL DEFAULT 'live',
	observed_at          TIMESTAMPTZ NOT NULL,
	settled_at           TIMESTAMPTZ,
	updated_at           TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (task_session_id, id),
	CONSTRAINT task_session_subagents_key UNIQUE (task_session_id, agent_execution_id, tool_call_id),
	CONSTRAINT task_session_subagents_session_fk FOREIGN KEY (task_session_id) REFERENCES "task_sessions"(id) ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS idx_subagents_session_id ON task_session_subagents(task_session_id);

CREATE INDEX IF NOT EXISTS idx_subagents_task_id ON task_session_subagents(task_id);

CREATE INDEX IF NOT EXISTS idx_subagents_turn_id ON task_session_subagents(turn_id);

CREATE INDEX IF NOT EXISTS idx_subagents_observed_at ON task_session_subagents(observed_at);

CREATE INDEX IF NOT EXISTS idx_subagents_history ON task_session_subagents(task_session_id, tool_call_id) WHERE agent_execution_id = 'unknown' AND source = 'backfill';

CREATE INDEX IF NOT EXISTS idx_subagents_session_order ON task_session_subagents(task_session_id, observed_at, tool_call_id COLLATE "C", agent_execution_id COLLATE "C");

CREATE TABLE IF NOT EXISTS "kandev_meta" (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '');

DO $do$ BEGIN
IF to_regprocedure('subagentctx_metadata_v1(text)') IS NULL THEN
CREATE FUNCTION subagentctx_metadata_v1(doc text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $f$
DECLARE j jsonb;
BEGIN
	IF doc IS NULL OR octet_length(doc) > 16777216 THEN RETURN '{}'::jsonb; END IF;
	j := doc::jsonb;
	IF jsonb_typeof(j) <> 'object' OR j @? 'strict $.**{1000}' THEN RETURN '{}'::jsonb; END IF;
	RETURN j;
EXCEPTION WHEN others THEN
	RETURN '{}'::jsonb;
END $f$;
END IF;
END $do$;

DO $do$ DECLARE f regprocedure; BEGIN
DROP TRIGGER IF EXISTS subagentctx_absorb ON task_session_subagents;
FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.proname LIKE 'subagentctx\_absorb\_%'
	AND p.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass('task_session_subagents')) LOOP
	EXECUTE 'DROP FUNCTION ' || f;
END LOOP;
END $do$;
