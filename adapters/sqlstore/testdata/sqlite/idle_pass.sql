-- a pass on an up-to-date table, a new store's first use: 16 statements besides the pass's lock, in order
SELECT name, file FROM pragma_database_list;

PRAGMA foreign_keys;

PRAGMA busy_timeout;

SELECT CAST("2000-01-02 03:04:05" AS TEXT);

SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "task_sessions";

SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "subagentctx_meta";

SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "kandev_meta";

SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "task_session_subagents";

SELECT name, type, "notnull" AS not_null, dflt_value
		FROM pragma_table_info("task_session_subagents") WHERE EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "task_session_subagents")
		ORDER BY cid;

SELECT il.name AS name, il.origin AS origin, il."unique" AS is_unique, il.partial AS is_partial,
		(SELECT group_concat(name, ',' ORDER BY seqno) FROM pragma_index_info(il.name)) AS columns
		FROM pragma_index_list("task_session_subagents") il ORDER BY il.name;

SELECT "table", "from" AS "column", "to" AS ref_column, on_delete
		FROM pragma_foreign_key_list("task_session_subagents");

SELECT (SELECT count(*) = 0 FROM sqlite_master WHERE type = 'trigger' AND name = 'subagentctx_absorb_v1'), (SELECT count(*) = 1 FROM sqlite_master WHERE type = 'index' AND name = 'idx_subagents_history' AND sql = 'CREATE UNIQUE INDEX idx_subagents_history ON task_session_subagents(task_session_id, tool_call_id, agent_execution_id) WHERE agent_execution_id = ''unknown'''), (SELECT count(*) = 1 FROM sqlite_master WHERE type = 'index' AND name = 'idx_subagents_history' AND sql = 'CREATE UNIQUE INDEX idx_subagents_history ON task_session_subagents(task_session_id, tool_call_id, agent_execution_id) WHERE agent_execution_id = ''unknown''');

SELECT "key", value FROM "kandev_meta" WHERE "key" LIKE "subagent_context_schema_v%";

SELECT count(*) FROM (SELECT 1 FROM task_session_subagents WHERE seam_checked = 0 LIMIT 1) u;

SELECT count(*) FROM "kandev_meta" WHERE "key" = "subagent_context_execution_since";

SELECT "key", value FROM "kandev_meta" WHERE "key" IN ("subagent_context_capture_since","subagent_context_execution_since","subagent_context_backfill_through","subagent_context_pruned_before");
