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

DO $do$ BEGIN
IF to_regprocedure('subagentctx_upsert_7fc49a59(text,text,text,text,text,text,text,text,text,text,text,text,text,text,integer,bigint,bigint,bigint,text,timestamptz,timestamptz,timestamptz)') IS NULL THEN
CREATE FUNCTION subagentctx_upsert_7fc49a59(text,text,text,text,text,text,text,text,text,text,text,text,text,text,integer,bigint,bigint,bigint,text,timestamptz,timestamptz,timestamptz) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE task_session_subagents SET agent_execution_id = $5
	WHERE task_session_id = $2 AND tool_call_id = $6 AND $5 <> 'unknown'
		AND agent_execution_id = 'unknown' AND source = 'backfill'
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents x WHERE x.task_session_id = $2
			AND x.agent_execution_id = $5 AND x.tool_call_id = $6);
	INSERT INTO "task_session_subagents" ("id","task_session_id","task_id","turn_id","agent_execution_id","tool_call_id","parent_tool_call_id","subagent_type","description","agent_id","child_session_id","model","agent_status","tool_status","is_async","total_tokens","tool_use_count","duration_ms","source","observed_at","settled_at","updated_at") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22) ON CONFLICT ("task_session_id","agent_execution_id","tool_call_id") DO UPDATE SET "turn_id"=COALESCE("task_session_subagents"."turn_id", excluded.turn_id),"parent_tool_call_id"=COALESCE(excluded.parent_tool_call_id, "task_session_subagents"."parent_tool_call_id"),"subagent_type"=COALESCE(excluded.subagent_type, "task_session_subagents"."subagent_type"),"description"=COALESCE(excluded.description, "task_session_subagents"."description"),"agent_id"=COALESCE(excluded.agent_id, "task_session_subagents"."agent_id"),"child_session_id"=COALESCE(excluded.child_session_id, "task_session_subagents"."child_session_id"),"model"=COALESCE(excluded.model, "task_session_subagents"."model"),"agent_status"=COALESCE(excluded.agent_status, "task_session_subagents"."agent_status"),"tool_status"=CASE WHEN "task_session_subagents"."settled_at" IS NOT NULL THEN "task_session_subagents"."tool_status" ELSE COALESCE(excluded.tool_status, "task_session_subagents"."tool_status") END,"is_async"=CASE WHEN "task_session_subagents"."is_async" = 1 OR excluded.is_async = 1 THEN 1 ELSE 0 END,"total_tokens"=COALESCE(excluded.total_tokens, "task_session_subagents"."total_tokens"),"tool_use_count"=COALESCE(excluded.tool_use_count, "task_session_subagents"."tool_use_count"),"duration_ms"=COALESCE(excluded.duration_ms, "task_session_subagents"."duration_ms"),"settled_at"=COALESCE("task_session_subagents"."settled_at", excluded.settled_at),"updated_at"=excluded.updated_at;
END $f$;
END IF;
END $do$;
