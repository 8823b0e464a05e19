WITH w AS MATERIALIZED (SELECT tool_status, agent_status, subagent_type, model, source, duration_ms,
		total_tokens, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, tool_use_count,
		CASE WHEN (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error')) THEN 1 ELSE 0 END AS failed,
		CASE WHEN (ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL)) THEN 1 ELSE 0 END AS unended
	FROM task_session_subagents WHERE observed_at >= ? AND observed_at < ?),
g AS MATERIALIZED (SELECT tool_status, agent_status, subagent_type, model, source, count(*) AS n, SUM(failed) AS failed, SUM(unended) AS unended, count(duration_ms) AS duration_n, count(total_tokens) AS total_tokens_n, SUM(total_tokens / 4294967296) AS total_tokens_hi, SUM(total_tokens % 4294967296) AS total_tokens_lo, count(COALESCE(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)) AS run_tokens_n, SUM(COALESCE(input_tokens / 4294967296, 0) + COALESCE(output_tokens / 4294967296, 0) + COALESCE(cache_read_tokens / 4294967296, 0) + COALESCE(cache_write_tokens / 4294967296, 0)) AS run_tokens_hi, SUM(COALESCE(input_tokens % 4294967296, 0) + COALESCE(output_tokens % 4294967296, 0) + COALESCE(cache_read_tokens % 4294967296, 0) + COALESCE(cache_write_tokens % 4294967296, 0)) AS run_tokens_lo, count(tool_use_count) AS tool_use_count_n, SUM(tool_use_count / 4294967296) AS tool_use_count_hi, SUM(tool_use_count % 4294967296) AS tool_use_count_lo
	FROM w GROUP BY tool_status, agent_status, subagent_type, model, source),
c AS MATERIALIZED (SELECT 'tool_status' AS dim, tool_status AS k, source, SUM(n) AS n, SUM(failed) AS failed, SUM(unended) AS unended, SUM(duration_n) AS duration_n, SUM(total_tokens_n) AS total_tokens_n, SUM(total_tokens_hi) AS total_tokens_hi, SUM(total_tokens_lo) AS total_tokens_lo, SUM(run_tokens_n) AS run_tokens_n, SUM(run_tokens_hi) AS run_tokens_hi, SUM(run_tokens_lo) AS run_tokens_lo, SUM(tool_use_count_n) AS tool_use_count_n, SUM(tool_use_count_hi) AS tool_use_count_hi, SUM(tool_use_count_lo) AS tool_use_count_lo
	FROM g GROUP BY tool_status, source
	UNION ALL SELECT 'agent_status' AS dim, agent_status AS k, source, SUM(n) AS n, SUM(failed) AS failed, SUM(unended) AS unended, SUM(duration_n) AS duration_n, SUM(total_tokens_n) AS total_tokens_n, SUM(total_tokens_hi) AS total_tokens_hi, SUM(total_tokens_lo) AS total_tokens_lo, SUM(run_tokens_n) AS run_tokens_n, SUM(run_tokens_hi) AS run_tokens_hi, SUM(run_tokens_lo) AS run_tokens_lo, SUM(tool_use_count_n) AS tool_use_count_n, SUM(tool_use_count_hi) AS tool_use_count_hi, SUM(tool_use_count_lo) AS tool_use_count_lo
	FROM g GROUP BY agent_status, source
	UNION ALL SELECT 'subagent_type' AS dim, subagent_type AS k, source, SUM(n) AS n, SUM(failed) AS failed, SUM(unended) AS unended, SUM(duration_n) AS duration_n, SUM(total_tokens_n) AS total_tokens_n, SUM(total_tokens_hi) AS total_tokens_hi, SUM(total_tokens_lo) AS total_tokens_lo, SUM(run_tokens_n) AS run_tokens_n, SUM(run_tokens_hi) AS run_tokens_hi, SUM(run_tokens_lo) AS run_tokens_lo, SUM(tool_use_count_n) AS tool_use_count_n, SUM(tool_use_count_hi) AS tool_use_count_hi, SUM(tool_use_count_lo) AS tool_use_count_lo
	FROM g GROUP BY subagent_type, source
	UNION ALL SELECT 'model' AS dim, model AS k, source, SUM(n) AS n, SUM(failed) AS failed, SUM(unended) AS unended, SUM(duration_n) AS duration_n, SUM(total_tokens_n) AS total_tokens_n, SUM(total_tokens_hi) AS total_tokens_hi, SUM(total_tokens_lo) AS total_tokens_lo, SUM(run_tokens_n) AS run_tokens_n, SUM(run_tokens_hi) AS run_tokens_hi, SUM(run_tokens_lo) AS run_tokens_lo, SUM(tool_use_count_n) AS tool_use_count_n, SUM(tool_use_count_hi) AS tool_use_count_hi, SUM(tool_use_count_lo) AS tool_use_count_lo
	FROM g GROUP BY model, source),
r AS MATERIALIZED (SELECT dim, k, SUM(n) AS n, ROW_NUMBER() OVER (PARTITION BY dim
		ORDER BY SUM(n) DESC, CASE WHEN k IS NULL THEN 1 ELSE 0 END, k COLLATE "C") AS place
	FROM c GROUP BY dim, k),
d AS MATERIALIZED (SELECT g.dim, g.k, g.source, g.m, r.rn, r.value
FROM (SELECT dim, k, CASE WHEN GROUPING(source) = 1 THEN 'all' ELSE source END AS source, count(*) AS m,
		percentile_disc(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY duration_ms) AS p
	FROM (SELECT 'subagent_type' AS dim, subagent_type AS k, source, duration_ms FROM w WHERE duration_ms IS NOT NULL
	UNION ALL SELECT 'model' AS dim, model AS k, source, duration_ms FROM w WHERE duration_ms IS NOT NULL) AS ds
	GROUP BY GROUPING SETS ((dim, k), (dim, k, source))) g
	CROSS JOIN LATERAL (VALUES ((50 * g.m + 99) / 100, g.p[1]), ((95 * g.m + 99) / 100, g.p[2])) AS r (rn, value))
SELECT 1 AS part, c.dim, c.k, r.place, c.source, c.n, c.failed, c.unended, c.duration_n,
	c.total_tokens_n, c.total_tokens_hi, c.total_tokens_lo, c.run_tokens_n, c.run_tokens_hi, c.run_tokens_lo,
	c.tool_use_count_n, c.tool_use_count_hi, c.tool_use_count_lo, CAST(NULL AS BIGINT) AS rn,
	CAST(NULL AS BIGINT) AS value
FROM c JOIN r ON r.dim = c.dim AND (r.k = c.k OR (r.k IS NULL AND c.k IS NULL)) WHERE r.place <= 20
UNION ALL
SELECT 2, r.dim, NULL, NULL, NULL, SUM(r.n), count(*), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, NULL, NULL
FROM r WHERE r.place > 20 GROUP BY r.dim
UNION ALL
SELECT 3, d.dim, d.k, r.place, d.source, d.m, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, d.rn, d.value
FROM d JOIN r ON r.dim = d.dim AND (r.k = d.k OR (r.k IS NULL AND d.k IS NULL)) WHERE r.place <= 20
UNION ALL
SELECT 4, NULL, NULL, NULL, w.source, count(*), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, NULL, NULL
FROM w GROUP BY w.source;
-- arguments: 2026-08-12 23:10:00.500002 +0000 UTC 2026-08-13 00:10:00.500002 +0000 UTC
