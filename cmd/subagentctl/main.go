// Command subagentctl is the operator's command line for subagentctx:
// migrate, feed, inspect and health-check a store, or see the library work
// in one command:
//
//	go run ./cmd/subagentctl demo
//
// It uses the library's public API only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/subagentctx/subagentctx/core"
)

const usage = `usage: subagentctl [--db DSN] [--sessions-table NAME] [--messages-table NAME] [--meta-table NAME] COMMAND [ARGS]

DSN is sqlite:PATH, a path ending in .db or .sqlite, or a postgres:// or
postgresql:// URL; default $SUBAGENTCTL_DB, else ./subagents.db. Host table
names default to Kandev's (task_sessions, task_session_messages, kandev_meta).

commands:
  migrate                                run the migration pass; exit 1 when a step failed
  record [FILE|-]                        record frames from JSON lines (default stdin); exit 1 if a line was bad
  list (--session ID | --turn ID) [--limit N] [--json]
                                         rows in observed_at, tool_call_id, agent_execution_id order
  stats [--session ID | --task ID] [--json]
                                         coverage-aware statistics
  activation [--json]                    the activation state and keys
  health [--json]                        exit 0 healthy, 1 shortfall, 3 not activated, 2 error
  demo                                   a self-contained demo in a temporary directory (no flags, no network)
`

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // a step failed, a line was bad, a shortfall was found
	exitUsage = 2 // also: health's "any error"
)

// usageError is a bad command line: reported in one line with the usage,
// exit 2, before any database is touched.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries a command's exit code past the generic error path.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command runs with.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	dsn            dsn
	tables         core.HostTables
	// progress is true when stderr is a terminal: long work shows it is
	// alive there, and stays quiet otherwise.
	progress bool
}

var commands = map[string]func(ctx context.Context, e *env, args []string) error{
	"migrate":    cmdMigrate,
	"record":     cmdRecord,
	"list":       cmdList,
	"stats":      cmdStats,
	"activation": cmdActivation,
	"health":     cmdHealth,
	"demo":       cmdDemo,
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, progress: isTerminal(stderr)}
	err := parseGlobal(e, args, func(cmd string, rest []string) error {
		fn, ok := commands[cmd]
		if !ok {
			return usagef("unknown command %q", cmd)
		}
		return fn(ctx, e, rest)
	})
	var ue usageError
	var ee exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "subagentctl: %s\n\n%s", ue.msg, usage)
		return exitUsage
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "subagentctl: %s\n", e.dsn.redact(err.Error()))
	return exitFail
}

func parseGlobal(e *env, args []string, dispatch func(string, []string) error) error {
	fs := flag.NewFlagSet("subagentctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	db := fs.String("db", "", "")
	fs.StringVar(&e.tables.Sessions, "sessions-table", "", "")
	fs.StringVar(&e.tables.Messages, "messages-table", "", "")
	fs.StringVar(&e.tables.Meta, "meta-table", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() == 0 {
		return usagef("no command given")
	}
	if err := e.tables.Validate(); err != nil {
		return usageError{err.Error()}
	}
	raw := *db
	if raw == "" {
		raw = os.Getenv("SUBAGENTCTL_DB")
	}
	if raw == "" {
		raw = "./subagents.db"
	}
	var err error
	if e.dsn, err = parseDSN(raw); err != nil {
		return usageError{err.Error()}
	}
	return dispatch(fs.Arg(0), fs.Args()[1:])
}

// commandFlags parses a command's own flags; a bad one is a usage error.
func commandFlags(name string, args []string, define func(fs *flag.FlagSet)) (*flag.FlagSet, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%s: %v", name, err)
	}
	return fs, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func jsonFlag(fs *flag.FlagSet) *bool { return fs.Bool("json", false, "") }

func noArgs(name string, fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", name, strings.Join(fs.Args(), " "))
	}
	return nil
}
