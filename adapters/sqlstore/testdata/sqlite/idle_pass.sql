-- a pass on an up-to-date table, a new store's first use: 14 statements besides the pass's lock, in order
SELECT name, file FROM pragma_database_list;

PRAGMA foreign_keys;

PRAGMA busy_timeout;

SELECT CAST("2000-01-02 03:04:05" AS TEXT);

SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "task_sessions";

SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "kandev_meta";

SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "task_session_subagents";

SELECT name, type, "notnull" AS not_null, dflt_value
		FROM pragma_table_info("task_session_subagents") WHERE EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "task_session_subagents")
		ORDER BY cid;

SELECT il.name AS name, il.origin AS origin, il."unique" AS is_unique,
		(SELECT group_concat(name, ',' ORDER BY seqno) FROM pragma_index_info(il.name)) AS columns
		FROM pragma_index_list("task_session_subagents") il ORDER BY il.name;

SELECT "table", "from" AS "column", "to" AS ref_column, on_delete
		FROM pragma_foreign_key_list("task_session_subagents");

SELECT (SELECT count(*) = 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'subagentctx_absorb_v1' AND sql = 'CREATE TRIGGER subagentctx_absorb_v1 AFTER INSERT ON task_session_subagents FOR EACH ROW
WHEN NEW.agent_execution_id <> ''unknown''
	AND EXISTS (SELECT 1 FROM task_session_subagents WHERE task_session_id = NEW.task_session_id AND tool_call_id = NEW.tool_call_id AND agent_execution_id = ''unknown'' AND source = ''backfill'')
BEGIN
	UPDATE task_session_subagents SET task_id = b.task_id,
		turn_id = COALESCE(b.turn_id, task_session_subagents.turn_id),
		parent_tool_call_id = COALESCE(task_session_subagents.parent_tool_call_id, b.parent_tool_call_id),
		subagent_type = COALESCE(task_session_subagents.subagent_type, b.subagent_type),
		description = COALESCE(task_session_subagents.description, b.description),
		agent_id = COALESCE(task_session_subagents.agent_id, b.agent_id),
		child_session_id = COALESCE(task_session_subagents.child_session_id, b.child_session_id),
		model = COALESCE(task_session_subagents.model, b.model),
		agent_status = COALESCE(task_session_subagents.agent_status, b.agent_status),
		tool_status = CASE WHEN b.settled_at IS NOT NULL THEN b.tool_status ELSE COALESCE(task_session_subagents.tool_status, b.tool_status) END,
		is_async = CASE WHEN b.is_async = 1 OR task_session_subagents.is_async = 1 THEN 1 ELSE 0 END,
		total_tokens = COALESCE(task_session_subagents.total_tokens, b.total_tokens),
		tool_use_count = COALESCE(task_session_subagents.tool_use_count, b.tool_use_count),
		duration_ms = COALESCE(task_session_subagents.duration_ms, b.duration_ms),
		source = b.source,
		observed_at = b.observed_at,
		settled_at = COALESCE(b.settled_at, task_session_subagents.settled_at)
		FROM (SELECT * FROM task_session_subagents WHERE task_session_id = NEW.task_session_id AND tool_call_id = NEW.tool_call_id AND agent_execution_id = ''unknown'' AND source = ''backfill'') AS b
		WHERE task_session_subagents.task_session_id = NEW.task_session_id AND task_session_subagents.id = NEW.id;
	DELETE FROM task_session_subagents WHERE task_session_id = NEW.task_session_id AND tool_call_id = NEW.tool_call_id AND agent_execution_id = ''unknown'' AND source = ''backfill'';
END');

SELECT "key", value FROM "kandev_meta" WHERE "key" LIKE "subagent_context_schema_v%";

SELECT count(*) FROM "kandev_meta" WHERE "key" = "subagent_context_execution_since";

SELECT "key", value FROM "kandev_meta" WHERE "key" IN ("subagent_context_capture_since","subagent_context_execution_since","subagent_context_backfill_through","subagent_context_pruned_before");
