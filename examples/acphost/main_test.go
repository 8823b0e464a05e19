package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestACPHost(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"1 agent message chunk(s) shown to the user; 3 subagent row(s) recorded",
		"toolu_01A general-purpose parent=- tool_status=completed settled=true async=false",
		"toolu_01C explorer parent=toolu_01A tool_status=failed settled=true async=false",
		"toolu_02 security-reviewer parent=- tool_status=pending settled=true async=true",
		"Failed:0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
