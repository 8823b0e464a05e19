-- the aggregates
SELECT count(*) AS n,
	SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) AS live,
	SUM(CASE WHEN source = 'backfill' THEN 1 ELSE 0 END) AS backfill,
	SUM(CASE WHEN turn_id IS NULL THEN 1 ELSE 0 END) AS no_turn,
	SUM(is_async) AS background,
	SUM(CASE WHEN (ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL)) THEN 1 ELSE 0 END) AS no_end,
	SUM(CASE WHEN (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error')) THEN 1 ELSE 0 END) AS failed,
	SUM(CASE WHEN agent_execution_id = 'unknown' THEN 1 ELSE 0 END) AS unknown_exec,
	count(DISTINCT CASE WHEN agent_execution_id <> 'unknown' THEN agent_execution_id END) AS executions,
	count(CASE WHEN source = 'live' THEN total_tokens END) AS total_tokens_live_n,
	SUM(CASE WHEN source = 'live' THEN total_tokens / 4294967296 END) AS total_tokens_live_hi,
	SUM(CASE WHEN source = 'live' THEN total_tokens % 4294967296 END) AS total_tokens_live_lo,
	count(CASE WHEN source = 'backfill' THEN total_tokens END) AS total_tokens_backfill_n,
	SUM(CASE WHEN source = 'backfill' THEN total_tokens / 4294967296 END) AS total_tokens_backfill_hi,
	SUM(CASE WHEN source = 'backfill' THEN total_tokens % 4294967296 END) AS total_tokens_backfill_lo,
	count(CASE WHEN source = 'live' THEN COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens) END) AS run_tokens_live_n,
	SUM(CASE WHEN source = 'live' THEN COALESCE(input_tokens / 4294967296, 0) + COALESCE(output_tokens / 4294967296, 0) + COALESCE(cache_read_tokens / 4294967296, 0) + COALESCE(cache_write_tokens / 4294967296, 0) END) AS run_tokens_live_hi,
	SUM(CASE WHEN source = 'live' THEN COALESCE(input_tokens % 4294967296, 0) + COALESCE(output_tokens % 4294967296, 0) + COALESCE(cache_read_tokens % 4294967296, 0) + COALESCE(cache_write_tokens % 4294967296, 0) END) AS run_tokens_live_lo,
	count(CASE WHEN source = 'backfill' THEN COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens) END) AS run_tokens_backfill_n,
	SUM(CASE WHEN source = 'backfill' THEN COALESCE(input_tokens / 4294967296, 0) + COALESCE(output_tokens / 4294967296, 0) + COALESCE(cache_read_tokens / 4294967296, 0) + COALESCE(cache_write_tokens / 4294967296, 0) END) AS run_tokens_backfill_hi,
	SUM(CASE WHEN source = 'backfill' THEN COALESCE(input_tokens % 4294967296, 0) + COALESCE(output_tokens % 4294967296, 0) + COALESCE(cache_read_tokens % 4294967296, 0) + COALESCE(cache_write_tokens % 4294967296, 0) END) AS run_tokens_backfill_lo,
	count(CASE WHEN source = 'live' THEN tool_use_count END) AS tool_use_count_live_n,
	SUM(CASE WHEN source = 'live' THEN tool_use_count / 4294967296 END) AS tool_use_count_live_hi,
	SUM(CASE WHEN source = 'live' THEN tool_use_count % 4294967296 END) AS tool_use_count_live_lo,
	count(CASE WHEN source = 'backfill' THEN tool_use_count END) AS tool_use_count_backfill_n,
	SUM(CASE WHEN source = 'backfill' THEN tool_use_count / 4294967296 END) AS tool_use_count_backfill_hi,
	SUM(CASE WHEN source = 'backfill' THEN tool_use_count % 4294967296 END) AS tool_use_count_backfill_lo,
	count(CASE WHEN source = 'live' THEN duration_ms END) AS duration_ms_live_n,
	SUM(CASE WHEN source = 'live' THEN duration_ms / 4294967296 END) AS duration_ms_live_hi,
	SUM(CASE WHEN source = 'live' THEN duration_ms % 4294967296 END) AS duration_ms_live_lo,
	count(CASE WHEN source = 'backfill' THEN duration_ms END) AS duration_ms_backfill_n,
	SUM(CASE WHEN source = 'backfill' THEN duration_ms / 4294967296 END) AS duration_ms_backfill_hi,
	SUM(CASE WHEN source = 'backfill' THEN duration_ms % 4294967296 END) AS duration_ms_backfill_lo
FROM task_session_subagents WHERE task_session_id = ?;

-- fan-out per turn
SELECT n AS subagents, count(*) AS turns
	FROM (SELECT task_session_id, turn_id, count(*) AS n FROM task_session_subagents WHERE task_session_id = ? AND turn_id IS NOT NULL GROUP BY task_session_id, turn_id) x
	GROUP BY n ORDER BY n;

-- first activity: rows
SELECT task_session_id, COALESCE(min((unixepoch(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 1, 19) || CASE WHEN substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20, 1) = '.' THEN ltrim(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), '0123456789') ELSE substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20) END) * 1000000 + CASE WHEN substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20, 1) = '.' THEN CAST(substr(substr(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), 1, length(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21)) - length(ltrim(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END), MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN NULL ELSE (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) END)), (unixepoch(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 1, 19) || CASE WHEN substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20, 1) = '.' THEN ltrim(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), '0123456789') ELSE substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20) END) * 1000000 + CASE WHEN substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20, 1) = '.' THEN CAST(substr(substr(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), 1, length(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21)) - length(ltrim(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END), MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN NULL ELSE (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) END)) AS first
	FROM task_session_subagents WHERE task_session_id = ? GROUP BY task_session_id;

-- first activity: messages
SELECT task_session_id, MIN(subagentctx_instant(CAST(created_at AS TEXT))) AS first
	FROM "task_session_messages" WHERE task_session_id = ? AND task_session_id IS NOT NULL GROUP BY task_session_id;

-- the sessions listed: activity before the coverage bound, rows
SELECT task_session_id, COALESCE(min((unixepoch(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 1, 19) || CASE WHEN substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20, 1) = '.' THEN ltrim(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), '0123456789') ELSE substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20) END) * 1000000 + CASE WHEN substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20, 1) = '.' THEN CAST(substr(substr(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), 1, length(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21)) - length(ltrim(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END), MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN NULL ELSE (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) END)), (unixepoch(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 1, 19) || CASE WHEN substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20, 1) = '.' THEN ltrim(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), '0123456789') ELSE substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20) END) * 1000000 + CASE WHEN substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 20, 1) = '.' THEN CAST(substr(substr(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), 1, length(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21)) - length(ltrim(substr(MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at END), 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END), MIN(CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN NULL ELSE (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) END)) AS first
	FROM task_session_subagents WHERE task_session_id IN (?, ?) AND observed_at < '2026-08-14' AND CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at < ? ELSE (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) < ? END GROUP BY task_session_id;

-- and messages
SELECT task_session_id, MIN(subagentctx_instant(CAST(created_at AS TEXT))) AS first
	FROM "task_session_messages" WHERE task_session_id IN (?, ?) AND task_session_id IS NOT NULL AND created_at < '2026-08-14' AND subagentctx_instant(CAST(created_at AS TEXT)) < ? GROUP BY task_session_id;

-- the whole store: the sessions by verdict, counted where they are
SELECT count(*) AS sessions, COALESCE(SUM(CASE WHEN f.early = 0 AND f.dated = 1 THEN 1 ELSE 0 END), 0) AS known
FROM (SELECT u.task_session_id, MAX(u.early) AS early, MAX(u.dated) AS dated FROM (
		SELECT task_session_id, MAX(CASE WHEN observed_at < '2026-08-14' AND CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at < ? ELSE (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) < ? END THEN 1 ELSE 0 END) AS early, 1 AS dated
		FROM task_session_subagents GROUP BY task_session_id
		UNION ALL
		SELECT task_session_id, MAX(CASE WHEN subagentctx_instant(CAST(created_at AS TEXT)) < ? THEN 1 ELSE 0 END),
			MAX(CASE WHEN subagentctx_instant(CAST(created_at AS TEXT)) IS NOT NULL THEN 1 ELSE 0 END)
		FROM "task_session_messages" WHERE task_session_id IS NOT NULL GROUP BY task_session_id) u
	GROUP BY u.task_session_id) f;
-- arguments: 2026-08-12 23:10:00.500002+00:00 1786576200500002 2026-08-12T23:10:00.500001001Z
