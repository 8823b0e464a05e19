package otelbridge

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// written is every name conventions.go declares, in its order.
var written = []string{
	operationName, toolName, toolCallID, toolType, transferMode, transferTargetType, transferTargetName, agentName,
	agentDescription, conversationID, requestModel, errorType, usageInput, usageOutput, usageCacheRead,
	usageCacheWrite, agentID, requests, totalTokens, toolUseCount, durationMs, taskSessionID, taskID, turnID,
	agentExecutionID, parentToolCallID, rowID, source, toolStatus, agentStatus, isAsync, metricFrames,
	metricFramesPending, metricQueueDepth, metricReady, metricLastWrite, metricBatchDuration, metricBatchRetries,
	metricStale, metricAgentDuration, metricAgentToolCalls, metricAgentRequests, metricToolDuration, attrOutcome,
}

// TestConventionsListed: conventions.txt lists exactly the names
// conventions.go declares, and no name the conventions retired for what
// the bridge writes (docs/CONTRACT.md §9).
func TestConventionsListed(t *testing.T) {
	data, err := os.ReadFile("conventions.txt")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			listed = append(listed, l)
		}
	}
	if !slices.Equal(listed, written) {
		t.Errorf("conventions.txt lists\n%v\nconventions.go declares\n%v", listed, written)
	}
	for _, retired := range []string{"gen_ai.agent.id", "gen_ai.execute_tool.transfer.internal"} {
		if slices.Contains(written, retired) {
			t.Errorf("%s is written", retired)
		}
	}
}
