SELECT tool_status, source, count(*) FROM task_session_subagents
    WHERE observed_at >= $1 AND observed_at < $2 GROUP BY tool_status, source;
SELECT agent_status, source, count(*) FROM task_session_subagents
    WHERE observed_at >= $1 AND observed_at < $2 GROUP BY agent_status, source;
SELECT subagent_type, source, count(*), count(*) FILTER (WHERE (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))),
        count(*) FILTER (WHERE ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL)), sum(total_tokens), count(total_tokens), sum(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0)),
        count(COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)), sum(tool_use_count), count(tool_use_count),
        percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms), percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms)
    FROM task_session_subagents WHERE observed_at >= $1 AND observed_at < $2 GROUP BY subagent_type, source;
SELECT model, source, count(*), count(*) FILTER (WHERE (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))),
        count(*) FILTER (WHERE ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL)), sum(total_tokens), count(total_tokens), sum(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0)),
        count(COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)), sum(tool_use_count), count(tool_use_count),
        percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms), percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms)
    FROM task_session_subagents WHERE observed_at >= $1 AND observed_at < $2 GROUP BY model, source;
SELECT task_session_id, min(task_id), count(*), count(DISTINCT turn_id), count(*) FILTER (WHERE settled_at IS NULL),
        min(observed_at), max(observed_at)
    FROM task_session_subagents WHERE observed_at >= $1 AND observed_at < $2 AND task_session_id LIKE $3
    GROUP BY task_session_id ORDER BY max(observed_at) DESC, task_session_id LIMIT 51;
SELECT tool_status, source, count(*) FROM task_session_subagents
    WHERE observed_at >= $1 AND observed_at < $2 AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error')) GROUP BY tool_status, source;
SELECT agent_status, source, count(*) FROM task_session_subagents
    WHERE observed_at >= $1 AND observed_at < $2 AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error')) GROUP BY agent_status, source;
SELECT subagent_type, source, count(*), sum(total_tokens), count(total_tokens), sum(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0)),
        count(COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)), sum(tool_use_count), count(tool_use_count),
        percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms), percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms)
    FROM task_session_subagents WHERE observed_at >= $1 AND observed_at < $2 AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))
    GROUP BY subagent_type, source;
SELECT model, source, count(*), sum(total_tokens), count(total_tokens), sum(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0)),
        count(COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)), sum(tool_use_count), count(tool_use_count),
        percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms), percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms)
    FROM task_session_subagents WHERE observed_at >= $1 AND observed_at < $2 AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))
    GROUP BY model, source;
SELECT * FROM task_session_subagents WHERE observed_at >= $1 AND observed_at < $2 AND (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))
    ORDER BY observed_at DESC, task_session_id DESC, tool_call_id DESC, agent_execution_id DESC LIMIT 26;
SELECT floor(extract(epoch FROM observed_at) / {bucket_s})::bigint AS k, count(*),
        count(*) FILTER (WHERE (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error'))), count(total_tokens), sum(total_tokens)
    FROM task_session_subagents WHERE observed_at >= $1 AND observed_at < $2 GROUP BY k ORDER BY k;
SELECT * FROM task_session_subagents WHERE observed_at >= $1 AND ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL)
        AND COALESCE(started_at, observed_at) < to_timestamp({stale_before_s})
    ORDER BY COALESCE(started_at, observed_at), task_session_id, tool_call_id, agent_execution_id LIMIT 25;
