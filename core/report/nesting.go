package report

import "github.com/subagentctx/subagentctx/core"

// Parents resolves each nested row's parent among rows, whichever of them
// history or live frames wrote (docs/CONTRACT.md §3.3, **Decision 8.17**):
// parents[i] is the index of row i's parent, or -1 when it names none or
// none of rows is it. The parent of a row naming parent tool call id P is a
// row of the same session with tool call id P:
//
//   - the one under the row's own execution, when there is one (a nested
//     subagent runs in its parent's execution);
//   - else, for a row of history (execution 'unknown'), the one that holds
//     the history of P's invocation (source backfill: history absorbed by
//     the execution that reported P live), else the first in AC-13 order;
//   - else, for a row under an execution, P's history not yet absorbed
//     (the row under 'unknown');
//   - else none: a row of P under another execution is another
//     invocation that reused the tool call id (AC-32), not the parent.
//
// Every reader that nests — the fan-out tree, the web view's totals, the
// OpenTelemetry bridge's parent span — resolves parents through it.
func Parents(rows []core.Subagent) []int {
	type pair struct{ session, tool string }
	byPair := make(map[pair][]int, len(rows))
	for i, r := range rows {
		p := pair{r.TaskSessionID, r.ToolCallID}
		byPair[p] = append(byPair[p], i)
	}
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = -1
		if r.ParentToolCallID == nil {
			continue
		}
		candidates := byPair[pair{r.TaskSessionID, *r.ParentToolCallID}]
		first, history, unknown := -1, -1, -1
		for _, j := range candidates {
			c := rows[j]
			switch {
			case j == i:
				continue
			case c.AgentExecutionID == r.AgentExecutionID:
				out[i] = j
			case c.AgentExecutionID == core.UnknownExecution:
				unknown = j
			case c.Source == core.SourceBackfill:
				history = j
			}
			if first < 0 || c.Cursor().Less(rows[first].Cursor()) {
				first = j
			}
		}
		switch {
		case out[i] >= 0:
		case r.AgentExecutionID == core.UnknownExecution && history >= 0:
			out[i] = history
		case r.AgentExecutionID == core.UnknownExecution:
			out[i] = first
		case unknown >= 0:
			out[i] = unknown
		}
	}
	return out
}
