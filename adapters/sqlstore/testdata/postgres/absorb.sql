-- first in a write's transaction of more than one row: its pairs' locks, in one order (two arrays, one entry per row)
SELECT count(pg_advisory_xact_lock(hashtext('subagentctx pair'), s.k))
FROM (SELECT DISTINCT hashtext(length(p.session) || ':' || p.session || p.tool_call) AS k
	FROM unnest($1::text[], $2::text[]) AS p (session, tool_call)
	ORDER BY k OFFSET 0) AS s;

-- before the upserts: the planner's settings kept and set
SELECT set_config('enable_seqscan', 'off', true),
	set_config('enable_hashjoin', 'off', true),
	set_config('enable_mergejoin', 'off', true),
	set_config('plan_cache_mode', 'force_custom_plan', true)
FROM (SELECT set_config('subagentctx.planner', concat_ws(',',
		current_setting('enable_seqscan'),
		current_setting('enable_hashjoin'),
		current_setting('enable_mergejoin'),
		current_setting('plan_cache_mode')), true) OFFSET 0) AS saved;

-- history moved to the rows that absorb it (four arrays, a row per pair)
UPDATE task_session_subagents AS h
SET agent_execution_id = CASE WHEN h.agent_execution_id = 'unknown' THEN a.execution
	ELSE h.agent_execution_id END
FROM (SELECT DISTINCT ON (f.session, f.tool_call) f.session, f.execution, f.history
	FROM (SELECT f.*, (SELECT id FROM task_session_subagents WHERE task_session_id = f.session AND tool_call_id = f.tool_call AND agent_execution_id = 'unknown' AND source = 'backfill') AS history
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY
			AS f (session, tool_call, execution, row_id, n)
		OFFSET 0) AS f
	WHERE f.history IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents WHERE task_session_id = f.session
			AND agent_execution_id = f.execution AND tool_call_id = f.tool_call)
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents WHERE task_session_id = f.session AND id = f.row_id
			AND id <> f.history)
	ORDER BY f.session, f.tool_call, f.n) AS a
WHERE h.task_session_id = a.session AND h.id = a.history;

-- the settings as they were
SELECT set_config('enable_seqscan', split_part(current_setting('subagentctx.planner'), ',', 1), true),
	set_config('enable_hashjoin', split_part(current_setting('subagentctx.planner'), ',', 2), true),
	set_config('enable_mergejoin', split_part(current_setting('subagentctx.planner'), ',', 3), true),
	set_config('plan_cache_mode', split_part(current_setting('subagentctx.planner'), ',', 4), true);
