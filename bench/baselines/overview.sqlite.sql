SELECT tool_status, source, count(*) FROM task_session_subagents
    WHERE observed_at >= ? AND observed_at < ? GROUP BY tool_status, source;
SELECT agent_status, source, count(*) FROM task_session_subagents
    WHERE observed_at >= ? AND observed_at < ? GROUP BY agent_status, source;
SELECT subagent_type, source, count(*), count(*) FILTER (WHERE (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))),
        count(*) FILTER (WHERE ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL)), sum(total_tokens), count(total_tokens), sum(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0)),
        count(COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)), sum(tool_use_count), count(tool_use_count)
    FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? GROUP BY subagent_type, source;
SELECT subagent_type, source, duration_ms FROM (SELECT subagent_type, source, duration_ms,
        ROW_NUMBER() OVER (PARTITION BY subagent_type, source ORDER BY duration_ms) AS rn,
        count(*) OVER (PARTITION BY subagent_type, source) AS n
    FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND duration_ms IS NOT NULL)
    WHERE rn = (n + 1) / 2 OR rn = (95 * n + 99) / 100;
SELECT model, source, count(*), count(*) FILTER (WHERE (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))),
        count(*) FILTER (WHERE ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL)), sum(total_tokens), count(total_tokens), sum(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0)),
        count(COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)), sum(tool_use_count), count(tool_use_count)
    FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? GROUP BY model, source;
SELECT model, source, duration_ms FROM (SELECT model, source, duration_ms,
        ROW_NUMBER() OVER (PARTITION BY model, source ORDER BY duration_ms) AS rn,
        count(*) OVER (PARTITION BY model, source) AS n
    FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND duration_ms IS NOT NULL)
    WHERE rn = (n + 1) / 2 OR rn = (95 * n + 99) / 100;
SELECT task_session_id, min(task_id), count(*), count(DISTINCT turn_id), sum(settled_at IS NULL),
        min(observed_at), max(observed_at)
    FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND task_session_id LIKE ?
    GROUP BY task_session_id ORDER BY max(observed_at) DESC, task_session_id LIMIT 51;
SELECT tool_status, source, count(*) FROM task_session_subagents
    WHERE observed_at >= ? AND observed_at < ? AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error')) GROUP BY tool_status, source;
SELECT agent_status, source, count(*) FROM task_session_subagents
    WHERE observed_at >= ? AND observed_at < ? AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error')) GROUP BY agent_status, source;
SELECT subagent_type, source, count(*), sum(total_tokens), count(total_tokens), sum(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0)),
        count(COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)), sum(tool_use_count), count(tool_use_count)
    FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))
    GROUP BY subagent_type, source;
SELECT subagent_type, source, duration_ms FROM (SELECT subagent_type, source, duration_ms,
        ROW_NUMBER() OVER (PARTITION BY subagent_type, source ORDER BY duration_ms) AS rn,
        count(*) OVER (PARTITION BY subagent_type, source) AS n
    FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND duration_ms IS NOT NULL
        AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error')))
    WHERE rn = (n + 1) / 2 OR rn = (95 * n + 99) / 100;
SELECT model, source, count(*), sum(total_tokens), count(total_tokens), sum(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0)),
        count(COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)), sum(tool_use_count), count(tool_use_count)
    FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))
    GROUP BY model, source;
SELECT model, source, duration_ms FROM (SELECT model, source, duration_ms,
        ROW_NUMBER() OVER (PARTITION BY model, source ORDER BY duration_ms) AS rn,
        count(*) OVER (PARTITION BY model, source) AS n
    FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND duration_ms IS NOT NULL
        AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error')))
    WHERE rn = (n + 1) / 2 OR rn = (95 * n + 99) / 100;
SELECT * FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))
    ORDER BY observed_at DESC, task_session_id DESC, tool_call_id DESC, agent_execution_id DESC LIMIT 26;
SELECT unixepoch(observed_at) / {bucket_s} AS k, count(*), sum((tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))),
        count(total_tokens), sum(total_tokens)
    FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ? GROUP BY k ORDER BY k;
SELECT * FROM task_session_subagents WHERE observed_at >= ? AND ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL)
        AND unixepoch(COALESCE(started_at, observed_at), 'subsec') < {stale_before_s}
    ORDER BY COALESCE(started_at, observed_at), task_session_id, tool_call_id, agent_execution_id LIMIT 25;
