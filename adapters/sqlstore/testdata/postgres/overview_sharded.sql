-- the groups of the four breakdowns at once, per combination of their values
SELECT tool_status, agent_status, subagent_type, model, source, count(*) AS n, SUM(CASE WHEN (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error')) THEN 1 ELSE 0 END) AS failed, SUM(CASE WHEN (ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL)) THEN 1 ELSE 0 END) AS unended, count(duration_ms) AS duration_n, count(total_tokens) AS total_tokens_n, SUM(total_tokens / 4294967296) AS total_tokens_hi, SUM(total_tokens % 4294967296) AS total_tokens_lo, count(COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)) AS run_tokens_n, SUM(COALESCE(input_tokens / 4294967296, 0) + COALESCE(output_tokens / 4294967296, 0) + COALESCE(cache_read_tokens / 4294967296, 0) + COALESCE(cache_write_tokens / 4294967296, 0)) AS run_tokens_hi, SUM(COALESCE(input_tokens % 4294967296, 0) + COALESCE(output_tokens % 4294967296, 0) + COALESCE(cache_read_tokens % 4294967296, 0) + COALESCE(cache_write_tokens % 4294967296, 0)) AS run_tokens_lo, count(tool_use_count) AS tool_use_count_n, SUM(tool_use_count / 4294967296) AS tool_use_count_hi, SUM(tool_use_count % 4294967296) AS tool_use_count_lo
FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? GROUP BY tool_status, agent_status, subagent_type, model, source;
-- arguments: 2026-08-12 23:10:00.500002 +0000 UTC 2026-08-13 00:10:00.500002 +0000 UTC

-- the listed groups' durations per bucket
SELECT subagent_type AS k, source, length(to_hex(duration_ms)) * 256 + (duration_ms >> greatest(0, 4 * length(to_hex(duration_ms)) - 8)) AS b, count(*) AS n
FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND duration_ms IS NOT NULL AND (subagent_type = CAST(? AS TEXT) OR subagent_type IS NULL) GROUP BY subagent_type, source, b;
-- arguments: 2026-08-12 23:10:00.500002 +0000 UTC 2026-08-13 00:10:00.500002 +0000 UTC explorer

-- the distinct durations of the buckets that hold a rank
SELECT subagent_type AS k, source, duration_ms, count(*) AS n
FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND duration_ms IS NOT NULL AND ((subagent_type = CAST(? AS TEXT) AND duration_ms >= ? AND duration_ms < ?) OR (subagent_type IS NULL AND duration_ms >= ? AND duration_ms < ?)) GROUP BY subagent_type, source, duration_ms;
-- arguments: 2026-08-12 23:10:00.500002 +0000 UTC 2026-08-13 00:10:00.500002 +0000 UTC explorer 299008 303104 299008 303104
