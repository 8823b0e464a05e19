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
	input_tokens         BIGINT,
	output_tokens        BIGINT,
	cache_read_tokens    BIGINT,
	cache_write_tokens   BIGINT,
	requests             BIGINT,
	source               TEXT NOT NULL DEFAULT 'live',
	observed_at          TIMESTAMPTZ NOT NULL,
	settled_at           TIMESTAMPTZ,
	started_at           TIMESTAMPTZ,
	ended_at             TIMESTAMPTZ,
	updated_at           TIMESTAMPTZ NOT NULL,
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

CREATE INDEX IF NOT EXISTS idx_subagents_session_order ON task_session_subagents(task_session_id, observed_at, tool_call_id COLLATE "C", agent_execution_id COLLATE "C");

CREATE TABLE IF NOT EXISTS "subagentctx_meta" (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '');

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
	AND p.proname NOT IN ('subagentctx_absorb_c59dc2b5')
	AND p.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass('task_session_subagents')) LOOP
	EXECUTE 'DROP FUNCTION ' || f;
END LOOP;
END $do$;

DO $do$ BEGIN
IF to_regprocedure('subagentctx_absorb_c59dc2b5()') IS NOT NULL THEN
CREATE OR REPLACE FUNCTION subagentctx_absorb_c59dc2b5() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET enable_seqscan = off AS $f$
DECLARE b record; tbl text; here boolean := TG_TABLE_NAME = 'task_session_subagents';
BEGIN
	IF NOT here THEN -- a partition of the table, or a Citus shard
		here := (SELECT c.relname FROM pg_class c WHERE c.oid = pg_partition_root(TG_RELID)) = 'task_session_subagents';
	END IF;
	IF here THEN
		DELETE FROM task_session_subagents WHERE task_session_id = NEW.task_session_id AND tool_call_id = NEW.tool_call_id AND agent_execution_id = 'unknown' AND source = 'backfill' RETURNING * INTO b;
		IF FOUND THEN
			UPDATE task_session_subagents AS t SET task_id = b.task_id,
		turn_id = COALESCE(b.turn_id, t.turn_id),
		parent_tool_call_id = COALESCE(t.parent_tool_call_id, b.parent_tool_call_id),
		subagent_type = COALESCE(t.subagent_type, b.subagent_type),
		description = COALESCE(t.description, b.description),
		agent_id = COALESCE(t.agent_id, b.agent_id),
		child_session_id = COALESCE(t.child_session_id, b.child_session_id),
		model = COALESCE(t.model, b.model),
		agent_status = CASE WHEN t.agent_status = 'unknown' AND b.ended_at IS NOT NULL THEN b.agent_status ELSE COALESCE(t.agent_status, b.agent_status) END,
		tool_status = CASE WHEN b.settled_at IS NOT NULL THEN b.tool_status ELSE COALESCE(t.tool_status, b.tool_status) END,
		is_async = CASE WHEN b.is_async = 1 OR t.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(t.total_tokens, b.total_tokens),
		tool_use_count = COALESCE(t.tool_use_count, b.tool_use_count),
		duration_ms = COALESCE(t.duration_ms, b.duration_ms),
		input_tokens = CASE WHEN t.input_tokens IS NOT NULL AND (b.input_tokens IS NULL OR t.input_tokens > b.input_tokens) THEN t.input_tokens ELSE b.input_tokens END,
		output_tokens = CASE WHEN t.output_tokens IS NOT NULL AND (b.output_tokens IS NULL OR t.output_tokens > b.output_tokens) THEN t.output_tokens ELSE b.output_tokens END,
		cache_read_tokens = CASE WHEN t.cache_read_tokens IS NOT NULL AND (b.cache_read_tokens IS NULL OR t.cache_read_tokens > b.cache_read_tokens) THEN t.cache_read_tokens ELSE b.cache_read_tokens END,
		cache_write_tokens = CASE WHEN t.cache_write_tokens IS NOT NULL AND (b.cache_write_tokens IS NULL OR t.cache_write_tokens > b.cache_write_tokens) THEN t.cache_write_tokens ELSE b.cache_write_tokens END,
		requests = CASE WHEN t.requests IS NOT NULL AND (b.requests IS NULL OR t.requests > b.requests) THEN t.requests ELSE b.requests END,
		source = b.source,
		observed_at = b.observed_at,
		settled_at = COALESCE(b.settled_at, t.settled_at),
		started_at = CASE WHEN t.started_at IS NOT NULL AND (b.started_at IS NULL OR t.started_at <= b.started_at) THEN t.started_at ELSE b.started_at END,
		ended_at = CASE WHEN t.started_at > b.ended_at THEN t.ended_at ELSE COALESCE(b.ended_at, t.ended_at) END,
		id = b.id
			WHERE t.task_session_id = NEW.task_session_id AND t.id = NEW.id;
		END IF;
	ELSE -- a Citus shard: its own name, planned on each call
		tbl := quote_ident(TG_TABLE_SCHEMA) || '.' || quote_ident(TG_TABLE_NAME);
		-- Deleted first, as above, in the statement that merges it: the
		-- row lock makes a second absorber wait, then find nothing (one
		-- absorber per pair).
		EXECUTE 'WITH h AS (DELETE FROM ' || tbl || $q$ WHERE task_session_id = $1 AND tool_call_id = $2 AND agent_execution_id = 'unknown' AND source = 'backfill' RETURNING *)
			UPDATE $q$ || tbl || $q$ AS t SET task_id = h.task_id,
		turn_id = COALESCE(h.turn_id, t.turn_id),
		parent_tool_call_id = COALESCE(t.parent_tool_call_id, h.parent_tool_call_id),
		subagent_type = COALESCE(t.subagent_type, h.subagent_type),
		description = COALESCE(t.description, h.description),
		agent_id = COALESCE(t.agent_id, h.agent_id),
		child_session_id = COALESCE(t.child_session_id, h.child_session_id),
		model = COALESCE(t.model, h.model),
		agent_status = CASE WHEN t.agent_status = 'unknown' AND h.ended_at IS NOT NULL THEN h.agent_status ELSE COALESCE(t.agent_status, h.agent_status) END,
		tool_status = CASE WHEN h.settled_at IS NOT NULL THEN h.tool_status ELSE COALESCE(t.tool_status, h.tool_status) END,
		is_async = CASE WHEN h.is_async = 1 OR t.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(t.total_tokens, h.total_tokens),
		tool_use_count = COALESCE(t.tool_use_count, h.tool_use_count),
		duration_ms = COALESCE(t.duration_ms, h.duration_ms),
		input_tokens = CASE WHEN t.input_tokens IS NOT NULL AND (h.input_tokens IS NULL OR t.input_tokens > h.input_tokens) THEN t.input_tokens ELSE h.input_tokens END,
		output_tokens = CASE WHEN t.output_tokens IS NOT NULL AND (h.output_tokens IS NULL OR t.output_tokens > h.output_tokens) THEN t.output_tokens ELSE h.output_tokens END,
		cache_read_tokens = CASE WHEN t.cache_read_tokens IS NOT NULL AND (h.cache_read_tokens IS NULL OR t.cache_read_tokens > h.cache_read_tokens) THEN t.cache_read_tokens ELSE h.cache_read_tokens END,
		cache_write_tokens = CASE WHEN t.cache_write_tokens IS NOT NULL AND (h.cache_write_tokens IS NULL OR t.cache_write_tokens > h.cache_write_tokens) THEN t.cache_write_tokens ELSE h.cache_write_tokens END,
		requests = CASE WHEN t.requests IS NOT NULL AND (h.requests IS NULL OR t.requests > h.requests) THEN t.requests ELSE h.requests END,
		source = h.source,
		observed_at = h.observed_at,
		settled_at = COALESCE(h.settled_at, t.settled_at),
		started_at = CASE WHEN t.started_at IS NOT NULL AND (h.started_at IS NULL OR t.started_at <= h.started_at) THEN t.started_at ELSE h.started_at END,
		ended_at = CASE WHEN t.started_at > h.ended_at THEN t.ended_at ELSE COALESCE(h.ended_at, t.ended_at) END,
		id = h.id
			FROM h WHERE t.task_session_id = $1 AND t.id = $3$q$
			USING NEW.task_session_id, NEW.tool_call_id, NEW.id;
	END IF;
	RETURN NULL;
END
$f$;
EXECUTE format('ALTER FUNCTION subagentctx_absorb_c59dc2b5() SET search_path = %I, pg_temp',
	(SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'task_session_subagents'::regclass));
END IF;
IF to_regprocedure('subagentctx_absorb_dbde5c46()') IS NOT NULL THEN
CREATE OR REPLACE FUNCTION subagentctx_absorb_dbde5c46() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET enable_seqscan = off AS $f$
DECLARE b record; tbl text; here boolean := TG_TABLE_NAME = 'task_session_subagents';
BEGIN
	IF NOT here THEN -- a partition of the table, or a Citus shard
		here := (SELECT c.relname FROM pg_class c WHERE c.oid = pg_partition_root(TG_RELID)) = 'task_session_subagents';
	END IF;
	IF here THEN
		DELETE FROM task_session_subagents WHERE task_session_id = NEW.task_session_id AND tool_call_id = NEW.tool_call_id AND agent_execution_id = 'unknown' AND source = 'backfill' RETURNING * INTO b;
		IF FOUND THEN
			UPDATE task_session_subagents AS t SET task_id = b.task_id,
		turn_id = COALESCE(b.turn_id, t.turn_id),
		parent_tool_call_id = COALESCE(t.parent_tool_call_id, b.parent_tool_call_id),
		subagent_type = COALESCE(t.subagent_type, b.subagent_type),
		description = COALESCE(t.description, b.description),
		agent_id = COALESCE(t.agent_id, b.agent_id),
		child_session_id = COALESCE(t.child_session_id, b.child_session_id),
		model = COALESCE(t.model, b.model),
		agent_status = CASE WHEN t.agent_status = 'unknown' AND b.ended_at IS NOT NULL THEN b.agent_status ELSE COALESCE(t.agent_status, b.agent_status) END,
		tool_status = CASE WHEN b.settled_at IS NOT NULL THEN b.tool_status ELSE COALESCE(t.tool_status, b.tool_status) END,
		is_async = CASE WHEN b.is_async = 1 OR t.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(t.total_tokens, b.total_tokens),
		tool_use_count = COALESCE(t.tool_use_count, b.tool_use_count),
		duration_ms = COALESCE(t.duration_ms, b.duration_ms),
		input_tokens = CASE WHEN t.input_tokens IS NOT NULL AND (b.input_tokens IS NULL OR t.input_tokens > b.input_tokens) THEN t.input_tokens ELSE b.input_tokens END,
		output_tokens = CASE WHEN t.output_tokens IS NOT NULL AND (b.output_tokens IS NULL OR t.output_tokens > b.output_tokens) THEN t.output_tokens ELSE b.output_tokens END,
		cache_read_tokens = CASE WHEN t.cache_read_tokens IS NOT NULL AND (b.cache_read_tokens IS NULL OR t.cache_read_tokens > b.cache_read_tokens) THEN t.cache_read_tokens ELSE b.cache_read_tokens END,
		cache_write_tokens = CASE WHEN t.cache_write_tokens IS NOT NULL AND (b.cache_write_tokens IS NULL OR t.cache_write_tokens > b.cache_write_tokens) THEN t.cache_write_tokens ELSE b.cache_write_tokens END,
		requests = CASE WHEN t.requests IS NOT NULL AND (b.requests IS NULL OR t.requests > b.requests) THEN t.requests ELSE b.requests END,
		source = b.source,
		observed_at = b.observed_at,
		settled_at = COALESCE(b.settled_at, t.settled_at),
		started_at = CASE WHEN t.started_at IS NOT NULL AND (b.started_at IS NULL OR t.started_at <= b.started_at) THEN t.started_at ELSE b.started_at END,
		ended_at = CASE WHEN t.started_at > b.ended_at THEN t.ended_at ELSE COALESCE(b.ended_at, t.ended_at) END,
		id = b.id
			WHERE t.task_session_id = NEW.task_session_id AND t.id = NEW.id;
		END IF;
	ELSE -- a Citus shard: its own name, planned on each call
		tbl := quote_ident(TG_TABLE_SCHEMA) || '.' || quote_ident(TG_TABLE_NAME);
		-- Deleted first, as above, in the statement that merges it: the
		-- row lock makes a second absorber wait, then find nothing (one
		-- absorber per pair).
		EXECUTE 'WITH h AS (DELETE FROM ' || tbl || $q$ WHERE task_session_id = $1 AND tool_call_id = $2 AND agent_execution_id = 'unknown' AND source = 'backfill' RETURNING *)
			UPDATE $q$ || tbl || $q$ AS t SET task_id = h.task_id,
		turn_id = COALESCE(h.turn_id, t.turn_id),
		parent_tool_call_id = COALESCE(t.parent_tool_call_id, h.parent_tool_call_id),
		subagent_type = COALESCE(t.subagent_type, h.subagent_type),
		description = COALESCE(t.description, h.description),
		agent_id = COALESCE(t.agent_id, h.agent_id),
		child_session_id = COALESCE(t.child_session_id, h.child_session_id),
		model = COALESCE(t.model, h.model),
		agent_status = CASE WHEN t.agent_status = 'unknown' AND h.ended_at IS NOT NULL THEN h.agent_status ELSE COALESCE(t.agent_status, h.agent_status) END,
		tool_status = CASE WHEN h.settled_at IS NOT NULL THEN h.tool_status ELSE COALESCE(t.tool_status, h.tool_status) END,
		is_async = CASE WHEN h.is_async = 1 OR t.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(t.total_tokens, h.total_tokens),
		tool_use_count = COALESCE(t.tool_use_count, h.tool_use_count),
		duration_ms = COALESCE(t.duration_ms, h.duration_ms),
		input_tokens = CASE WHEN t.input_tokens IS NOT NULL AND (h.input_tokens IS NULL OR t.input_tokens > h.input_tokens) THEN t.input_tokens ELSE h.input_tokens END,
		output_tokens = CASE WHEN t.output_tokens IS NOT NULL AND (h.output_tokens IS NULL OR t.output_tokens > h.output_tokens) THEN t.output_tokens ELSE h.output_tokens END,
		cache_read_tokens = CASE WHEN t.cache_read_tokens IS NOT NULL AND (h.cache_read_tokens IS NULL OR t.cache_read_tokens > h.cache_read_tokens) THEN t.cache_read_tokens ELSE h.cache_read_tokens END,
		cache_write_tokens = CASE WHEN t.cache_write_tokens IS NOT NULL AND (h.cache_write_tokens IS NULL OR t.cache_write_tokens > h.cache_write_tokens) THEN t.cache_write_tokens ELSE h.cache_write_tokens END,
		requests = CASE WHEN t.requests IS NOT NULL AND (h.requests IS NULL OR t.requests > h.requests) THEN t.requests ELSE h.requests END,
		source = h.source,
		observed_at = h.observed_at,
		settled_at = COALESCE(h.settled_at, t.settled_at),
		started_at = CASE WHEN t.started_at IS NOT NULL AND (h.started_at IS NULL OR t.started_at <= h.started_at) THEN t.started_at ELSE h.started_at END,
		ended_at = CASE WHEN t.started_at > h.ended_at THEN t.ended_at ELSE COALESCE(h.ended_at, t.ended_at) END,
		id = h.id
			FROM h WHERE t.task_session_id = $1 AND t.id = $3$q$
			USING NEW.task_session_id, NEW.tool_call_id, NEW.id;
	END IF;
	RETURN NULL;
END
$f$;
EXECUTE format('ALTER FUNCTION subagentctx_absorb_dbde5c46() SET search_path = %I, pg_temp',
	(SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'task_session_subagents'::regclass));
END IF;
END $do$;
