-- a pass on an up-to-date table, a new store's first use: 11 statements besides the pass's lock, in order
SHOW server_encoding;

SELECT to_regclass('"task_sessions"') IS NOT NULL;

SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus');

SELECT to_regclass('"kandev_meta"') IS NOT NULL;

SELECT to_regclass('"task_session_subagents"') IS NOT NULL;

SELECT to_regclass('"task_session_subagents"') IS NOT NULL AS exists,
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
		WHERE i.indrelid = to_regclass('"task_session_subagents"')) AS indexes,
	(SELECT json_agg(json_build_object('column', a.attname, 'ref_table', r.relname, 'ref_column', ra.attname,
			'del_type', k.confdeltype))
		FROM pg_constraint k JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
		JOIN pg_class r ON r.oid = k.confrelid
		JOIN pg_attribute ra ON ra.attrelid = k.confrelid AND ra.attnum = k.confkey[1]
		WHERE k.conrelid = to_regclass('"task_session_subagents"') AND k.contype = 'f' AND k.conparentid = 0) AS foreign_keys;

SELECT (SELECT to_regprocedure('subagentctx_metadata_v1(text)') IS NOT NULL), (SELECT NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('task_session_subagents')
	AND tgname = 'subagentctx_absorb') AND NOT EXISTS (SELECT p.oid::regprocedure FROM pg_proc p WHERE p.proname LIKE 'subagentctx\_absorb\_%'
	AND p.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass('task_session_subagents'))));

SELECT g.n FROM (VALUES (0, 'SELECT', '"task_session_subagents"'), (1, 'INSERT', '"task_session_subagents"'), (2, 'UPDATE', '"task_session_subagents"'), (3, 'SELECT', '"kandev_meta"')) AS g(n, privilege, name) WHERE NOT has_table_privilege(g.name, g.privilege) ORDER BY g.n LIMIT 1;

SELECT "key", value FROM "kandev_meta" WHERE "key" LIKE 'subagent_context_schema_v%';

SELECT count(*) FROM "kandev_meta" WHERE "key" = 'subagent_context_execution_since';

SELECT "key", value FROM "kandev_meta" WHERE "key" IN ('subagent_context_capture_since','subagent_context_execution_since','subagent_context_backfill_through','subagent_context_pruned_before');
