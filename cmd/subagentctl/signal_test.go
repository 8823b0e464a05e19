package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/faultproxy"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// proc is the binary running with its stdin held open (a producer that
// has not finished).
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    bytes.Buffer
	exited chan error
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), exited: make(chan error, 1)}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	go func() { p.exited <- p.cmd.Wait() }()
	return p
}

// signal sends sig and waits for the exit: its code, the output, and how
// long it took.
func (p *proc) signal(t *testing.T, sig syscall.Signal) (code int, out string, took time.Duration) {
	t.Helper()
	sent := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := await.Recv(t, p.exited, "the command's exit")
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return p.cmd.ProcessState.ExitCode(), p.out.String(), time.Since(sent)
}

// TestSignalsStopRecord: record stops within seconds of SIGINT or SIGTERM
// while its input is still open and the database unavailable (connections
// reset and refused), gives up what it holds, says so, and exits non-zero.
func TestSignalsStopRecord(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			e := testenv.Postgres().Env(t)
			kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s1", "task-1")
			proxy, dsn := faultproxy.Between(t, e.DSN)
			p := start(t, "--db", dsn, "record")
			time.Sleep(500 * time.Millisecond) // the store is open
			proxy.Set(faultproxy.Refuse)
			for i := range 3 {
				fmt.Fprintln(p.stdin, jsonFrame("s1", fmt.Sprint("toolu_", i), "exec-1", "in_progress", time.Now(), `{}`))
			}
			time.Sleep(300 * time.Millisecond)
			code, out, took := p.signal(t, sig)
			if took > 5*time.Second || code == 0 || !strings.Contains(out, "interrupted") ||
				!strings.Contains(out, "failed 3") {
				t.Errorf("after %s: exit %d after %v:\n%s", sig, code, took, out)
			}
		})
	}
}

// TestSignalStopsMigrate: a migrate waiting on the database (the table
// locked by another session) stops within seconds of SIGTERM and exits
// non-zero: a pass that did not complete is not a success.
func TestSignalStopsMigrate(t *testing.T) {
	e := testenv.Postgres().Env(t)
	tx := e.DB.Begin()
	defer tx.Rollback()
	if err := tx.Exec(`LOCK TABLE task_session_subagents IN ACCESS EXCLUSIVE MODE`).Error; err != nil {
		t.Fatal(err)
	}
	p := start(t, "--db", e.DSN, "migrate")
	time.Sleep(time.Second) // waiting for the lock
	code, out, took := p.signal(t, syscall.SIGTERM)
	if code == 0 || took > 5*time.Second {
		t.Errorf("migrate after SIGTERM: exit %d after %v:\n%s", code, took, out)
	}
}

// TestSignalAfterEverythingWritten: record, its input still open, every
// frame it read written, exits 0 on SIGTERM, saying so: nothing was lost.
func TestSignalAfterEverythingWritten(t *testing.T) {
	e := testenv.SQLite().Env(t)
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s1", "task-1")
	p := start(t, "--db", e.DSN, "record")
	for i := range 3 {
		fmt.Fprintln(p.stdin, jsonFrame("s1", fmt.Sprint("toolu_", i), "exec-1", "in_progress", time.Now(), `{}`))
	}
	for deadline := time.Now().Add(10 * time.Second); e.Count(t) < 3 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	code, out, _ := p.signal(t, syscall.SIGTERM)
	if code != 0 || !strings.Contains(out, "every frame read was written") || !strings.Contains(out, "persisted 3") {
		t.Errorf("SIGTERM with everything written: exit %d:\n%s", code, out)
	}
}
