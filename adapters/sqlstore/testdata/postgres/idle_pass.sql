-- a pass on an up-to-date table, a new store's first use: 13 statements besides the pass's lock, in order
SHOW server_encoding;

SELECT to_regclass('"task_sessions"') IS NOT NULL;

SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus');

SELECT to_regclass('"subagentctx_meta"') IS NOT NULL;

SELECT to_regclass('"kandev_meta"') IS NOT NULL;

SELECT to_regclass('"task_session_subagents"') IS NOT NULL;

SELECT to_regclass('"task_session_subagents"') IS NOT NULL AS exists,
	COALESCE((SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass('"task_session_subagents"')), false) AS partitioned,
	(SELECT json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, NULL),
			'not_null', a.attnotnull, 'dflt', pg_get_expr(x.adbin, x.adrelid)) ORDER BY a.attnum)
		FROM pg_attribute a LEFT JOIN pg_attrdef x ON x.adrelid = a.attrelid AND x.adnum = a.attnum
		WHERE a.attrelid = to_regclass('"task_session_subagents"') AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
	(SELECT json_agg(json_build_object('name', c.relname, 'unique', i.indisunique, 'primary', i.indisprimary,
			'partial', i.indpred IS NOT NULL, 'columns', COALESCE(x.columns, ''),
			'constraint', COALESCE((SELECT k.conname FROM pg_constraint k
				WHERE k.conindid = i.indexrelid AND k.contype IN ('p', 'u')), '')) ORDER BY c.relname)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		CROSS JOIN LATERAL (SELECT string_agg(a.attname, ',' ORDER BY k.ord) AS columns
			FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) x
		WHERE i.indrelid = to_regclass('"task_session_subagents"') AND i.indisvalid) AS indexes,
	(SELECT json_agg(json_build_object('column', a.attname, 'ref_table', r.relname, 'ref_column', ra.attname,
			'del_type', k.confdeltype))
		FROM pg_constraint k JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
		JOIN pg_class r ON r.oid = k.confrelid
		JOIN pg_attribute ra ON ra.attrelid = k.confrelid AND ra.attnum = k.confkey[1]
		WHERE k.conrelid = to_regclass('"task_session_subagents"') AND k.contype = 'f' AND k.conparentid = 0) AS foreign_keys;

SELECT (SELECT to_regprocedure('subagentctx_metadata_v1(text)') IS NOT NULL), (SELECT NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('task_session_subagents')
	AND tgname = 'subagentctx_absorb') AND NOT EXISTS (SELECT p.oid::regprocedure FROM pg_proc p WHERE p.proname LIKE 'subagentctx\_absorb\_%'
	AND p.proname NOT IN ('subagentctx_absorb_c59dc2b5')
	AND p.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass('task_session_subagents')))), (SELECT (to_regprocedure('subagentctx_absorb_c59dc2b5()') IS NULL OR EXISTS (SELECT 1 FROM pg_proc
	WHERE oid = to_regprocedure('subagentctx_absorb_c59dc2b5()') AND prosecdef AND prosrc = $src$
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
		EXECUTE 'WITH h AS (DELETE FROM ' || tbl || $q$ WHERE task_session_id = $1$ AND tool_call_id = $2$ AND agent_execution_id = 'unknown' AND source = 'backfill' RETURNING *)
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
			FROM h WHERE t.task_session_id = $1$ AND t.id = $3$$q$
			USING NEW.task_session_id, NEW.tool_call_id, NEW.id;
	END IF;
	RETURN NULL;
END
$src$)) AND (to_regprocedure('subagentctx_absorb_dbde5c46()') IS NULL OR EXISTS (SELECT 1 FROM pg_proc
	WHERE oid = to_regprocedure('subagentctx_absorb_dbde5c46()') AND prosecdef AND prosrc = $src$
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
		EXECUTE 'WITH h AS (DELETE FROM ' || tbl || $q$ WHERE task_session_id = $1$ AND tool_call_id = $2$ AND agent_execution_id = 'unknown' AND source = 'backfill' RETURNING *)
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
			FROM h WHERE t.task_session_id = $1$ AND t.id = $3$$q$
			USING NEW.task_session_id, NEW.tool_call_id, NEW.id;
	END IF;
	RETURN NULL;
END
$src$))), (SELECT to_regprocedure('subagentctx_seam_check_895ce6b0(timestamptz)') IS NOT NULL);

SELECT g.n FROM (VALUES (0, 'SELECT', '"task_session_subagents"'), (1, 'INSERT', '"task_session_subagents"'), (2, 'UPDATE', '"task_session_subagents"'), (3, 'SELECT', '"kandev_meta"')) AS g(n, privilege, name) WHERE NOT has_table_privilege(g.name, g.privilege)
UNION ALL SELECT 4 WHERE NOT has_function_privilege('pg_catalog.pg_advisory_xact_lock(integer, integer)', 'EXECUTE') ORDER BY 1 LIMIT 1;

SELECT "key", value FROM "kandev_meta" WHERE "key" LIKE 'subagent_context_schema_v%';

SELECT count(*) FROM (SELECT 1 FROM task_session_subagents WHERE seam_checked = 0 LIMIT 1) u;

SELECT count(*) FROM "kandev_meta" WHERE "key" = 'subagent_context_execution_since';

SELECT "key", value FROM "kandev_meta" WHERE "key" IN ('subagent_context_capture_since','subagent_context_execution_since','subagent_context_backfill_through','subagent_context_pruned_before');
