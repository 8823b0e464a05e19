package otelbridge

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// Every name the bridge writes, on OpenTelemetry's GenAI semantic
// conventions (status: development; docs/CONTRACT.md §9 maps each
// column) as they stand in open-telemetry/semantic-conventions-genai at
// the revision conventions.txt names, beside this file, with every name
// (a test holds the two to each other, and the OTLP export to both). A
// renaming of the conventions changes these two files alone.
const (
	instrumentationName = "github.com/subagentctx/subagentctx/otelbridge"

	// The recorder's metrics (Metrics), in the semantic conventions'
	// style: a dotted namespace, UCUM units, outcomes as attributes.
	metricFrames        = "subagentctx.recorder.frames"
	metricFramesPending = "subagentctx.recorder.frames.pending"
	metricQueueDepth    = "subagentctx.recorder.queue.depth"
	metricReady         = "subagentctx.recorder.ready"
	metricLastWrite     = "subagentctx.recorder.last_write"
	metricBatchDuration = "subagentctx.recorder.batch.duration"
	metricBatchRetries  = "subagentctx.recorder.batch.retries"
	// The record's subagents with no end seen (Metrics.ObserveStale).
	metricStale = "subagentctx.subagents.stale"
	// The conventions' agent and tool metrics, one measurement per run
	// that ended (WithMetrics): the invoke_agent span's duration, the
	// execute_tool span's, and the run's own tool calls (tool_use_count)
	// and model requests (requests) where reported.
	metricAgentDuration  = "gen_ai.invoke_agent.duration"
	metricAgentToolCalls = "gen_ai.invoke_agent.tool_calls"
	metricAgentRequests  = "gen_ai.invoke_agent.inference_calls"
	metricToolDuration   = "gen_ai.execute_tool.duration"
	// One plain name for both outcomes, as PromQL reads labels
	// (sum by (outcome) (…)); each instrument has its own values.
	attrOutcome = "outcome"

	operationName = "gen_ai.operation.name"
	opExecuteTool = "execute_tool"
	opInvokeAgent = "invoke_agent"

	toolName   = "gen_ai.tool.name"
	toolCallID = "gen_ai.tool.call.id"
	toolType   = "gen_ai.tool.type"

	transferMode       = "gen_ai.transfer.mode"
	transferTargetType = "gen_ai.transfer.target.type"
	transferTargetName = "gen_ai.transfer.target.name"

	agentName        = "gen_ai.agent.name"
	agentDescription = "gen_ai.agent.description"
	conversationID   = "gen_ai.conversation.id"
	requestModel     = "gen_ai.request.model"
	errorType        = "error.type"

	// An agent's usage: the run's, where a source reported it (never
	// total_tokens, which is its final request's). input_tokens includes
	// the cached ones, as the conventions ask; Anthropic reports them
	// apart.
	usageInput      = "gen_ai.usage.input_tokens"
	usageOutput     = "gen_ai.usage.output_tokens"
	usageCacheRead  = "gen_ai.usage.cache_read.input_tokens"
	usageCacheWrite = "gen_ai.usage.cache_creation.input_tokens"

	// The record's own, namespaced: total_tokens is the final request's
	// figure, no usage of the conventions'; the agent id is a per-run
	// instance id, which gen_ai.agent.id is not for.
	ns               = "subagentctx."
	agentID          = ns + "agent_id"
	requests         = ns + "requests"
	totalTokens      = ns + "total_tokens"
	toolUseCount     = ns + "tool_use_count"
	durationMs       = ns + "duration_ms"
	taskSessionID    = ns + "task_session_id"
	taskID           = ns + "task_id"
	turnID           = ns + "turn_id"
	agentExecutionID = ns + "agent_execution_id"
	parentToolCallID = ns + "parent_tool_call_id"
	rowID            = ns + "id"
	source           = ns + "source"
	toolStatus       = ns + "tool_status"
	agentStatus      = ns + "agent_status"
	isAsync          = ns + "is_async"
)

// subagentTool is the tool a subagent is launched through, as the caller
// sees it.
const subagentTool = "Task"

// transfer values: a subagent returns to its caller; its target is an
// agent.
const (
	modeReturn  = "return_to_caller"
	targetAgent = "agent"
)

func toolSpanName(core.Subagent) string { return opExecuteTool + " " + subagentTool }

func agentSpanName(row core.Subagent) string {
	if row.SubagentType != nil {
		return opInvokeAgent + " " + *row.SubagentType
	}
	return opInvokeAgent
}

// ids are the row's identifying columns, on both spans, so that a host
// can join a span back to its row.
func idAttributes(row core.Subagent) attrs {
	a := attrs{
		attribute.String(taskSessionID, row.TaskSessionID), attribute.String(taskID, row.TaskID),
		attribute.String(agentExecutionID, row.AgentExecutionID), attribute.String(toolCallID, row.ToolCallID),
		attribute.String(rowID, row.ID), attribute.String(source, string(row.Source)),
	}
	a.text(turnID, row.TurnID)
	a.text(parentToolCallID, row.ParentToolCallID)
	return a
}

func toolAttributes(row core.Subagent) []attribute.KeyValue {
	a := idAttributes(row)
	a = append(a, attribute.String(operationName, opExecuteTool), attribute.String(toolName, subagentTool),
		attribute.String(toolType, "function"), attribute.String(transferMode, modeReturn),
		attribute.String(transferTargetType, targetAgent), attribute.Bool(isAsync, row.IsAsync))
	a.text(transferTargetName, row.SubagentType)
	a.text(toolStatus, row.ToolStatus)
	return a
}

func agentAttributes(row core.Subagent) []attribute.KeyValue {
	a := idAttributes(row)
	a = append(a, attribute.String(operationName, opInvokeAgent))
	a.text(agentID, row.AgentID)
	a.text(agentName, row.SubagentType)
	a.text(agentDescription, row.Description)
	a.text(conversationID, row.ChildSessionID)
	a.text(requestModel, row.Model)
	a.text(agentStatus, row.AgentStatus)
	a.number(totalTokens, row.TotalTokens)
	if row.InputTokens != nil {
		in := *row.InputTokens
		for _, c := range []*int64{row.CacheReadTokens, row.CacheWriteTokens} {
			if c != nil {
				in += *c
			}
		}
		a.number(usageInput, &in)
	}
	a.number(usageOutput, row.OutputTokens)
	a.number(usageCacheRead, row.CacheReadTokens)
	a.number(usageCacheWrite, row.CacheWriteTokens)
	a.number(requests, row.Requests)
	a.number(toolUseCount, row.ToolUseCount)
	a.number(durationMs, row.DurationMs)
	return a
}

// agentMetricAttributes are an ended run's attributes on the agent
// metrics: its agent's name and model, and its failure; nothing per run
// (no ids), so that a metric's series stay few.
func agentMetricAttributes(row core.Subagent) []attribute.KeyValue {
	var a attrs
	a.text(agentName, row.SubagentType)
	a.text(requestModel, row.Model)
	a.text(errorType, failure(row))
	return a
}

// toolMetricAttributes are the same for the tool call that launched it.
func toolMetricAttributes(row core.Subagent) []attribute.KeyValue {
	a := attrs{attribute.String(toolName, subagentTool), attribute.String(toolType, "function")}
	a.text(errorType, failure(row))
	return a
}

// failure is why a row failed — its tool call's failed status, else its
// agent's — or nil.
func failure(row core.Subagent) *string {
	if !canon.Failed(row.ToolStatus, row.AgentStatus) {
		return nil
	}
	if row.ToolStatus != nil && canon.IsFailedToolStatus(*row.ToolStatus) {
		return row.ToolStatus
	}
	return row.AgentStatus
}
