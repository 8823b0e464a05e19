WITH w AS MATERIALIZED (SELECT tool_status, agent_status, subagent_type, model, source, duration_ms,
		total_tokens, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, tool_use_count,
		CASE WHEN (tool_status IN ('error', 'failed', 'cancelled') OR agent_status IN ('failed', 'error')) THEN 1 ELSE 0 END AS failed,
		CASE WHEN (ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL)) THEN 1 ELSE 0 END AS unended
	FROM task_session_subagents INDEXED BY idx_subagents_observed_at WHERE observed_at >= '2026-08-12 09' AND CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at >= ? ELSE (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) >= ? END AND observed_at < '2026-08-14' AND CASE WHEN substr(observed_at, 11, 1) = ' ' AND substr(observed_at, -6) = '+00:00' THEN observed_at < ? ELSE (unixepoch(substr(observed_at, 1, 19) || CASE WHEN substr(observed_at, 20, 1) = '.' THEN ltrim(substr(observed_at, 21), '0123456789') ELSE substr(observed_at, 20) END) * 1000000 + CASE WHEN substr(observed_at, 20, 1) = '.' THEN CAST(substr(substr(substr(observed_at, 21), 1, length(substr(observed_at, 21)) - length(ltrim(substr(observed_at, 21), '0123456789'))) || '000000', 1, 6) AS INTEGER) ELSE 0 END) < ? END),
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
		ORDER BY SUM(n) DESC, CASE WHEN k IS NULL THEN 1 ELSE 0 END, k) AS place
	FROM c GROUP BY dim, k),
d AS MATERIALIZED (WITH y AS MATERIALIZED (SELECT * FROM (SELECT x.*,
			CASE WHEN x.source = 'live' THEN x.rl ELSE x.rn - x.rl END AS rs,
			CASE WHEN x.source = 'live' THEN x.ml ELSE x.m - x.ml END AS ms
		FROM (SELECT dim, k, source, duration_ms,
				ROW_NUMBER() OVER win AS rn, SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) OVER win AS rl,
				count(*) OVER part AS m, SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) OVER part AS ml
			FROM (SELECT 'subagent_type' AS dim, subagent_type AS k, source, duration_ms FROM w WHERE duration_ms IS NOT NULL) AS q
			WINDOW part AS (PARTITION BY k), win AS (part ORDER BY duration_ms ROWS UNBOUNDED PRECEDING)
		UNION ALL SELECT dim, k, source, duration_ms,
				ROW_NUMBER() OVER win AS rn, SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) OVER win AS rl,
				count(*) OVER part AS m, SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) OVER part AS ml
			FROM (SELECT 'model' AS dim, model AS k, source, duration_ms FROM w WHERE duration_ms IS NOT NULL) AS q
			WINDOW part AS (PARTITION BY k), win AS (part ORDER BY duration_ms ROWS UNBOUNDED PRECEDING)) x) z
	WHERE z.rn IN ((50 * z.m + 99) / 100, (95 * z.m + 99) / 100) OR z.rs IN ((50 * z.ms + 99) / 100, (95 * z.ms + 99) / 100))
SELECT dim, k, 'all' AS source, m, rn, duration_ms AS value FROM y WHERE rn IN ((50 * m + 99) / 100, (95 * m + 99) / 100)
UNION ALL
SELECT dim, k, source, ms, rs, duration_ms FROM y WHERE rs IN ((50 * ms + 99) / 100, (95 * ms + 99) / 100))
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
-- arguments: 2026-08-12 23:10:00.500002+00:00 1786576200500002 2026-08-13 00:10:00.500002+00:00 1786579800500002
