package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestMinimal(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "host.db")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"toolu_01  security-reviewer  tool_status=completed agent_status=completed      tokens=51234 tool_uses=0 async=false",
		"toolu_02  explorer           tool_status=completed agent_status=async_launched " +
			"tokens=NULL tool_uses=NULL async=true",
		"Attempted:4 Persisted:4",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
