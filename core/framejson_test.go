package core_test

import (
	"strings"
	"testing"

	"github.com/subagentctx/subagentctx/core"
)

// TestDecodeFrame: a frame's fields as the command line's record reads
// them; a field it does not know (a misspelt one, or a column that belongs
// in subagent_task) refuses the line, naming it, rather than lose what it
// held; the execution id is read under its column's name as well.
func TestDecodeFrame(t *testing.T) {
	const base = `"task_session_id":"s","task_id":"t","tool_call_id":"c"`
	for _, c := range []struct {
		name, line string
		exec       string
		status     string // the payload's; "" for no payload
		refused    string // a part of the error; "" when it decodes
	}{
		{name: "execution_id", line: `{` + base + `,"execution_id":"e1"}`, exec: "e1"},
		{name: "the column's name", line: `{` + base + `,"agent_execution_id":"e1"}`, exec: "e1"},
		{name: "both, the same", line: `{` + base + `,"execution_id":"e1","agent_execution_id":"e1"}`, exec: "e1"},
		{name: "both, differing", line: `{` + base + `,"execution_id":"e1","agent_execution_id":"e2"}`,
			refused: `execution_id "e1" and agent_execution_id "e2" differ`},
		{name: "misspelt", line: `{` + base + `,"tool_stauts":"completed"}`, refused: `unknown field "tool_stauts"`},
		{name: "a payload column at the top", line: `{` + base + `,"agent_status":"running"}`,
			refused: `unknown field "agent_status"`},
		{name: "the payload's own extra fields", line: `{` + base +
			`,"subagent_task":{"status":"running","prompt":"p","something_new":1}}`, status: "running"},
		{name: "a payload of the wrong type", line: `{` + base + `,"subagent_task":"running"}`,
			refused: "subagent_task"},
		{name: "null payload", line: `{` + base + `,"subagent_task":null}`},
		{name: "two objects", line: `{` + base + `} {}`, refused: "something follows the object"},
		{name: "an array", line: `[1]`, refused: "not a frame object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := core.DecodeFrame([]byte(c.line))
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("DecodeFrame(%s) = %+v, %v; want an error saying %q", c.line, f, err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeFrame(%s): %v", c.line, err)
			}
			if f.TaskSessionID != "s" || f.TaskID != "t" || f.ToolCallID != "c" || f.ExecutionID != c.exec ||
				(f.Payload == nil) != (c.status == "") || (f.Payload != nil && f.Payload.Status != c.status) {
				t.Errorf("DecodeFrame(%s) = %+v (payload %+v)", c.line, f, f.Payload)
			}
		})
	}
}
