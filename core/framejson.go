package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// frameJSON is a frame as one JSON object (the command line's `record`
// input): the frame's fields, the execution id under execution_id or under
// its column's name, agent_execution_id; observed_at in RFC 3339 with an
// optional fraction (absent: the recorder's clock); the agent's own
// started_at and ended_at, likewise (absent: not reported); the run's
// usage under usage (input_tokens, output_tokens, cache_read_tokens,
// cache_write_tokens, requests; each absent when not reported); and the provider
// payload, Kandev's SubagentTaskPayload, under subagent_task (whose fields
// beyond the payload's are the provider's, and ignored).
type frameJSON struct {
	TaskSessionID    string          `json:"task_session_id"`
	TaskID           string          `json:"task_id"`
	TurnID           string          `json:"turn_id"`
	ExecutionID      string          `json:"execution_id"`
	AgentExecutionID string          `json:"agent_execution_id"`
	ToolCallID       string          `json:"tool_call_id"`
	ParentToolCallID string          `json:"parent_tool_call_id"`
	ToolStatus       string          `json:"tool_status"`
	ObservedAt       string          `json:"observed_at"`
	StartedAt        string          `json:"started_at"`
	EndedAt          string          `json:"ended_at"`
	Usage            *Usage          `json:"usage"`
	SubagentTask     json.RawMessage `json:"subagent_task"`
}

// frameFields names frameJSON's fields, for the error on any other.
func frameFields() string {
	t := reflect.TypeFor[frameJSON]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = t.Field(i).Tag.Get("json")
	}
	return strings.Join(names, ", ")
}

// DecodeFrame reads one JSON object into a Frame. Anything else (invalid
// JSON, an array, a scalar, anything after the object, a field it does not know —
// a misspelt one would otherwise be lost without a word —, a field of the
// wrong type, an observed_at that is not RFC 3339) is an error saying what.
func DecodeFrame(data []byte) (Frame, error) {
	var l frameJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		if strings.HasPrefix(err.Error(), "json: unknown field ") { // the only way encoding/json says so
			return Frame{}, fmt.Errorf("not a frame object: %w (a frame's fields: %s)", err, frameFields())
		}
		return Frame{}, fmt.Errorf("not a frame object: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Frame{}, fmt.Errorf("not a frame object: something follows the object on the line")
	}
	exec := l.ExecutionID
	switch {
	case exec == "":
		exec = l.AgentExecutionID
	case l.AgentExecutionID != "" && l.AgentExecutionID != exec:
		return Frame{}, fmt.Errorf("execution_id %q and agent_execution_id %q differ", exec, l.AgentExecutionID)
	}
	f := Frame{TaskSessionID: l.TaskSessionID, TaskID: l.TaskID, TurnID: l.TurnID, ExecutionID: exec,
		ToolCallID: l.ToolCallID, ParentToolCallID: l.ParentToolCallID, ToolStatus: l.ToolStatus, Usage: l.Usage}
	if len(l.SubagentTask) > 0 && string(l.SubagentTask) != "null" {
		f.Payload = new(Payload)
		if err := json.Unmarshal(l.SubagentTask, f.Payload); err != nil {
			return Frame{}, fmt.Errorf("subagent_task: %w", err)
		}
	}
	for _, t := range []struct {
		name, text string
		into       *time.Time
	}{{"observed_at", l.ObservedAt, &f.ObservedAt}, {"started_at", l.StartedAt, &f.StartedAt},
		{"ended_at", l.EndedAt, &f.EndedAt}} {
		if t.text == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339Nano, t.text)
		if err != nil {
			return Frame{}, fmt.Errorf("%s %q is not RFC 3339", t.name, t.text)
		}
		*t.into = v
	}
	return f, nil
}
