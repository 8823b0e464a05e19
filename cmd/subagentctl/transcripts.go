package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/subagentctx/subagentctx/claude"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// transcriptsReport is what transcripts did.
type transcriptsReport struct {
	Files           int   `json:"files"`
	Matched         int   `json:"matched"`
	AlreadyComplete int   `json:"already_complete"`
	NoRow           int   `json:"no_row"`
	SkippedLines    int64 `json:"skipped_lines"`
	Failed          int64 `json:"failed"`
}

// cmdTranscripts fills the rows whose agent a Claude Code subagent
// transcript names with the run's usage, start and end (docs/CONTRACT.md
// §3.5): each file (agent-<agentId>.jsonl), or each such file under a
// directory, read streaming; the rows found by agent id in one pass over
// the record; the readings written by the merge rules, so that a second
// run changes nothing.
func cmdTranscripts(ctx context.Context, e *env, o *inputFlags) error {
	if len(o.pos) == 0 {
		return usagef("transcripts: give at least one file or directory")
	}
	files := map[string]string{} // path → agent id
	for _, p := range o.pos {
		if err := collectTranscripts(p, files); err != nil {
			return err
		}
	}
	s, err := e.open(ctx, writing)
	if err != nil {
		return err
	}
	defer s.Close()
	wanted := map[string]bool{}
	for _, agent := range files {
		wanted[agent] = true
	}
	byAgent := map[string][]core.Subagent{}
	for r, err := range s.Export(ctx, report.ExportQuery{}) {
		if err != nil {
			return err
		}
		if r.AgentID != nil && wanted[*r.AgentID] {
			byAgent[*r.AgentID] = append(byAgent[*r.AgentID], r)
		}
	}
	rec, err := core.NewRecorder(s, core.WithLogger(e.logger()), core.WithDrain(0))
	if err != nil {
		return err
	}
	out := transcriptsReport{Files: len(files)}
	for path, agent := range files {
		t, err := readTranscript(path)
		if err != nil {
			return err
		}
		out.SkippedLines += t.Skipped
		rows := byAgent[agent]
		if len(rows) == 0 {
			out.NoRow++
			e.warnf("%s: no row names agent %q", path, agent)
			continue
		}
		for _, r := range rows {
			f := t.Frame(r)
			if holds(r, f) {
				out.AlreadyComplete++
				continue
			}
			out.Matched++
			if err := rec.RecordWaiting(ctx, f); err != nil {
				return err
			}
		}
	}
	closeErr := rec.Close(ctx)
	out.Failed = rec.Counters().Values().Failed
	if o.json {
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "%d transcripts: %d rows filled, %d already complete, %d without a row "+
			"(%d lines skipped; failed %d)\n", out.Files, out.Matched, out.AlreadyComplete, out.NoRow, out.SkippedLines,
			out.Failed)
	}
	if closeErr != nil {
		return closeErr
	}
	if out.Failed > 0 {
		return exitError{exitFail}
	}
	return nil
}

// collectTranscripts adds path — a transcript, or a directory walked for
// agent-*.jsonl — to files, with each file's agent id.
func collectTranscripts(path string, files map[string]string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		agent, ok := transcriptAgent(filepath.Base(path))
		if !ok {
			return usagef("transcripts: %s: cannot tell its agent: name it agent-<agentId>.jsonl", path)
		}
		files[path] = agent
		return nil
	}
	return filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if agent, ok := transcriptAgent(d.Name()); ok && !d.IsDir() {
			files[p] = agent
		}
		return nil
	})
}

// transcriptAgent is the agent id of a transcript's file name,
// agent-<agentId>.jsonl.
func transcriptAgent(name string) (string, bool) {
	agent, ok := strings.CutPrefix(name, "agent-")
	if !ok {
		return "", false
	}
	agent, ok = strings.CutSuffix(agent, ".jsonl")
	return agent, ok && agent != ""
}

func readTranscript(path string) (claude.Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return claude.Transcript{}, err
	}
	defer f.Close()
	t, err := claude.ReadTranscript(f)
	if err != nil {
		return t, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// columns are the declaration, read once (holds runs per frame).
var columns = storekit.Columns()

// holds reports whether row already holds what f would write: the merge
// would change no column but the write's own (observed_at, updated_at).
func holds(row core.Subagent, f core.Frame) bool {
	next, _ := core.Normalize(f)
	merged := storekit.Merge(&row, next)
	for _, c := range columns {
		if c.Name != "observed_at" && c.Name != "updated_at" && c.Format(&merged) != c.Format(&row) {
			return false
		}
	}
	return true
}
