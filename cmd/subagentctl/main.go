// Command subagentctl is the operator's command line for subagentctx:
// migrate, feed, inspect, health-check and view a store (in a terminal or a
// browser), or see the library work in one command:
//
//	go run ./cmd/subagentctl demo
//
// It reads and writes through the library's public API; its tree and web
// view draw with internal/fanout and internal/web.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/webview"
)

const usage = `usage: subagentctl [--db DSN] [--sessions-table NAME] [--messages-table NAME] [--meta-table NAME]` +
	` COMMAND [ARGS]

DSN is sqlite:PATH, a path ending in .db, .sqlite or .sqlite3, or a
postgres:// or postgresql:// URL; default $SUBAGENTCTL_DB, else
./subagents.db. Host table names default to task_sessions and
task_session_messages; the meta table to subagentctx_meta, or kandev_meta
where the database has only that one. Global flags may also follow the
command. Every command that reports takes --json (snake_case keys).

commands:
  migrate [--json]                       run the migration pass; exit 1 when a step failed
  record [--json] [FILE|-]               record frames from JSON lines (default stdin), drain, print the counters;
                                         it waits for the database rather than drop a frame; exit 1 if a line
                                         was bad or a frame failed; on SIGINT/SIGTERM it stops reading, writes
                                         what it read (for 2 s more at most), exit 0 when all of it was written,
                                         else 1 with the count
  record --acp --task-session ID --task ID [--turn ID] [--execution ID] [--agent NAME] [--json] [FILE|-]
                                         the same from ACP traffic: JSON-RPC messages (session/update, cursor/task;
                                         others ignored) or bare session/update params; --agent codex (or
                                         codex-acp) for Codex; an unknown agent is refused
  record (--claude-sdk | --claude-hooks) --task-session ID --task ID [--turn ID] [--execution ID] [--json] [FILE|-]
                                         the same from Claude Code: the Agent SDK's stream-json lines (Agent tool
                                         calls, their results, task_* messages), or hook events one JSON object a
                                         line (SubagentStart/Stop, the Agent tool's Pre/PostToolUse); an agent's
                                         start or end whose tool call the input never names is joined to the
                                         session's row by agent id; one with no such row is counted (unmatched),
                                         named, and exits 1
  list (--session ID | --turn ID) [--limit N] [--json | --tree]
                                         rows in observed_at, tool_call_id, agent_execution_id order, or as a tree
  stats [--session ID | --task ID] [--json]
                                         coverage-aware statistics
  stale [--older-than DURATION] [--limit N] [--json]
                                         the subagents that never came back: no end seen, a background launch
                                         or an open tool call, started (or first observed) more than DURATION
                                         ago, oldest first, at most N (default 100); exit 0 none, 1 some.
                                         Without DURATION, each type's threshold is learnt from its runs of the
                                         last 30 days: 3x its 95th percentile duration_ms, 5m to 7 days; 1h for
                                         a type with no duration reported
  transcripts [--json] PATH...           fill the rows with the run's usage (input, output, cache read and
                                         cache write tokens, requests), start and end from Claude Code subagent
                                         transcripts: files agent-<agentId>.jsonl, or directories walked for
                                         them; rows matched by agent id; says how many rows it filled, were
                                         already complete, or had no row; a second run changes nothing
  activation [--json]                    the activation state and keys
  health [--since DURATION|TIME] [--pairs N] [--json]
                                         exit 0 healthy, 1 shortfall, 3 not activated, 2 error; the window
                                         starts at capture_since (or the retention boundary) unless --since is
                                         later (1h: the last hour; or an RFC 3339 instant); the missing and
                                         excess pairs are listed, at most N each (default 20)
  export [--since T] [--until T] [--format jsonl|csv] [--after-session ID --after-id ID] [--keys]
                                         every row (last written in [since, until), when given), by session then
                                         id, byte by byte, streamed; resume after the last row printed; stderr
                                         ends "next since: T"; --keys: the activation keys and the retention
                                         boundary first, on a line of their own (for import)
  import [--json] [FILE|-]               load what export --keys wrote (JSON lines, default stdin) into this
                                         store as the source had it: rows by the merge rules, replacing this
                                         store's own reading of the history they hold; the activation keys;
                                         the retention boundary forward; a second import changes nothing but
                                         updated_at; run it again to resume
  prune --before DURATION|TIME [--json]  delete the rows last written before the time (90d: use 2160h), in short
                                         batches, after moving the retention boundary there; health and coverage
                                         then start at it
  serve [--addr HOST:PORT] [--base-path /PATH] [--read-timeout DURATION] [--max-reads N]
                                         a read-only web view (default 127.0.0.1:7410; port 0 picks a free one),
                                         under /PATH behind a reverse proxy; prints "listening on
                                         http://HOST:PORT/PATH/", stops on SIGINT or SIGTERM; each read the
                                         view makes is cancelled after --read-timeout (default 10s: the page
                                         says so) and at most --max-reads run at once (default 2: the others
                                         wait, or get 503); --db may name a read replica
  grants --role NAME [--part migrate|live|read|prune|import]
                                         the PostgreSQL GRANT statements that give the role what the part needs
                                         (default live and read: what an application needs; migrate runs as the
                                         table's owner; prune and import are an operator's)
  demo                                   a self-contained demo in a temporary directory (no flags, no network)
  version                                the version (also --version)
  help [COMMAND]                         this text

exit status: 0 success, 1 a failure the command reports, 2 a usage or
other error (health: 3 not activated). Errors and warnings go to stderr as
"subagentctl: error: …" and "subagentctl: warning: …".
`

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // a step failed, a line was bad, a shortfall was found
	exitUsage = 2 // also: any other error
)

// usageError is a bad command line: reported in one line naming what was
// wrong and where the command's help is, exit 2, before any database is
// touched; cmd is the command it was given to ("" before one was named).
type usageError struct{ msg, cmd string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

// exitError carries a command's exit code past the generic error path.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command runs with.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	db             string // --db as given (or its default)
	dsn            dsn
	tables         sqlstore.Tables
	// progress is true when stderr is a terminal: long work shows it is
	// alive there, and stays quiet otherwise.
	progress bool
}

// command is one command: its flags (besides the global ones), how many
// positional arguments it takes, and its body.
type command struct {
	// bind declares the command's flags on fs, into a struct of its own,
	// and returns the body that reads them once parsed.
	bind func(fs *flag.FlagSet) func(ctx context.Context, e *env, pos []string) error
	args func(pos []string) error
	// noDB commands do not read --db.
	noDB bool
}

// cmd makes a command's bind from its flag struct F: flags declares F's
// fields on a flag set, run is the body that reads them. A command that
// takes positional arguments embeds positional in F.
func cmd[F any](flags func(*flag.FlagSet, *F), run func(context.Context, *env, *F) error,
) func(*flag.FlagSet) func(context.Context, *env, []string) error {
	return func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		f := new(F)
		flags(fs, f)
		return func(ctx context.Context, e *env, pos []string) error {
			if p, ok := any(f).(interface{ setPos([]string) }); ok {
				p.setPos(pos)
			}
			return run(ctx, e, f)
		}
	}
}

// positional is the positional arguments of a command that takes them.
type positional struct{ pos []string }

func (p *positional) setPos(pos []string) { p.pos = pos }

// Each command's flags.
type (
	jsonFlags   struct{ json bool }
	recordFlags struct {
		json, acp, claudeSDK, claudeHooks     bool
		session, task, turn, execution, agent string
		positional
	}
	listFlags struct {
		json, tree    bool
		session, turn string
		limit         int
	}
	statsFlags struct {
		json          bool
		session, task string
	}
	staleFlags struct {
		json      bool
		olderThan time.Duration
		limit     int
	}
	inputFlags struct { // transcripts, import: --json and their inputs
		json bool
		positional
	}
	exportFlags struct {
		since, until, format, afterSession, afterID string
		keys                                        bool
	}
	pruneFlags struct {
		json   bool
		before string
	}
	healthFlags struct {
		json  bool
		since string
		pairs int
	}
	serveFlags struct {
		addr, basePath string
		readTimeout    time.Duration
		maxReads       int
	}
	grantsFlags struct{ role, part string }
	noFlags     struct{ positional }
)

var commands map[string]command

func init() {
	none := func(name string) func([]string) error {
		return func(pos []string) error {
			if len(pos) > 0 {
				return usagef("%s: unexpected argument %q", name, strings.Join(pos, " "))
			}
			return nil
		}
	}
	atMostOne := func(name, what string) func([]string) error {
		return func(pos []string) error {
			if len(pos) > 1 {
				return usagef("%s: one %s at most, got %d", name, what, len(pos))
			}
			return nil
		}
	}
	jsonOnly := func(fs *flag.FlagSet, o *jsonFlags) { fs.BoolVar(&o.json, "json", false, "") }
	noneDeclared := func(*flag.FlagSet, *noFlags) {}
	commands = map[string]command{
		"migrate": {bind: cmd(jsonOnly, cmdMigrate), args: none("migrate")},
		"record": {bind: cmd(func(fs *flag.FlagSet, o *recordFlags) {
			fs.BoolVar(&o.json, "json", false, "")
			fs.BoolVar(&o.acp, "acp", false, "")
			fs.BoolVar(&o.claudeSDK, "claude-sdk", false, "")
			fs.BoolVar(&o.claudeHooks, "claude-hooks", false, "")
			fs.StringVar(&o.session, "task-session", "", "")
			fs.StringVar(&o.task, "task", "", "")
			fs.StringVar(&o.turn, "turn", "", "")
			fs.StringVar(&o.execution, "execution", "", "")
			fs.StringVar(&o.agent, "agent", "", "")
		}, cmdRecord), args: atMostOne("record", "input")},
		"list": {bind: cmd(func(fs *flag.FlagSet, o *listFlags) {
			fs.BoolVar(&o.json, "json", false, "")
			fs.BoolVar(&o.tree, "tree", false, "")
			fs.StringVar(&o.session, "session", "", "")
			fs.StringVar(&o.turn, "turn", "", "")
			fs.IntVar(&o.limit, "limit", 0, "")
		}, cmdList), args: none("list")},
		"stats": {bind: cmd(func(fs *flag.FlagSet, o *statsFlags) {
			fs.BoolVar(&o.json, "json", false, "")
			fs.StringVar(&o.session, "session", "", "")
			fs.StringVar(&o.task, "task", "", "")
		}, cmdStats), args: none("stats")},
		"stale": {bind: cmd(func(fs *flag.FlagSet, o *staleFlags) {
			fs.BoolVar(&o.json, "json", false, "")
			fs.DurationVar(&o.olderThan, "older-than", 0, "")
			fs.IntVar(&o.limit, "limit", 0, "")
		}, cmdStale), args: none("stale")},
		"transcripts": {bind: cmd(inputJSON, cmdTranscripts), args: func([]string) error { return nil }},
		"activation":  {bind: cmd(jsonOnly, cmdActivation), args: none("activation")},
		"export": {bind: cmd(func(fs *flag.FlagSet, o *exportFlags) {
			fs.StringVar(&o.since, "since", "", "")
			fs.StringVar(&o.until, "until", "", "")
			fs.StringVar(&o.format, "format", "jsonl", "")
			fs.StringVar(&o.afterSession, "after-session", "", "")
			fs.StringVar(&o.afterID, "after-id", "", "")
			fs.BoolVar(&o.keys, "keys", false, "")
		}, cmdExport), args: none("export")},
		"import": {bind: cmd(inputJSON, cmdImport), args: atMostOne("import", "input")},
		"prune": {bind: cmd(func(fs *flag.FlagSet, o *pruneFlags) {
			fs.BoolVar(&o.json, "json", false, "")
			fs.StringVar(&o.before, "before", "", "")
		}, cmdPrune), args: none("prune")},
		"health": {bind: cmd(func(fs *flag.FlagSet, o *healthFlags) {
			fs.BoolVar(&o.json, "json", false, "")
			fs.StringVar(&o.since, "since", "", "")
			fs.IntVar(&o.pairs, "pairs", 0, "")
		}, cmdHealth), args: none("health")},
		"serve": {bind: cmd(func(fs *flag.FlagSet, o *serveFlags) {
			fs.StringVar(&o.addr, "addr", defaultAddr, "")
			fs.StringVar(&o.basePath, "base-path", "", "")
			fs.DurationVar(&o.readTimeout, "read-timeout", webview.DefaultReadTimeout, "")
			fs.IntVar(&o.maxReads, "max-reads", webview.DefaultMaxReads, "")
		}, cmdServe), args: none("serve")},
		"grants": {bind: cmd(func(fs *flag.FlagSet, o *grantsFlags) {
			fs.StringVar(&o.role, "role", "", "")
			fs.StringVar(&o.part, "part", "", "")
		}, cmdGrants), args: none("grants"), noDB: true},
		"demo":    {bind: cmd(noneDeclared, cmdDemo), args: none("demo"), noDB: true},
		"version": {bind: cmd(noneDeclared, cmdVersion), args: none("version"), noDB: true},
		"help":    {bind: cmd(noneDeclared, cmdHelp), args: atMostOne("help", "command"), noDB: true},
	}
}

// inputJSON declares the flags of a command that reads inputs: --json.
func inputJSON(fs *flag.FlagSet, o *inputFlags) { fs.BoolVar(&o.json, "json", false, "") }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, progress: isTerminal(stderr)}
	err := e.dispatch(ctx, args)
	var ue usageError
	var ee exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK
	case errors.As(err, &ue):
		help := "subagentctl help"
		if ue.cmd != "" {
			help += " " + ue.cmd
		}
		fmt.Fprintf(stderr, "subagentctl: error: %s (see %s)\n", e.dsn.redact(ue.msg), help)
		return exitUsage
	case errors.As(err, &ee):
		return ee.code
	}
	fmt.Fprintf(stderr, "subagentctl: error: %s\n", e.dsn.redact(err.Error()))
	return exitUsage
}

// dispatch parses the global flags, which may stand before or after the
// command, then the command's own flags and arguments, in any order.
func (e *env) dispatch(ctx context.Context, args []string) error {
	var version bool
	fs := newFlags("subagentctl")
	e.globalFlags(fs, &version)
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if version {
		return cmdVersion(ctx, e, nil)
	}
	if fs.NArg() == 0 {
		return usagef("no command given")
	}
	name := fs.Arg(0)
	cmd, ok := commands[name]
	if !ok {
		return usagef("unknown command %q", name)
	}
	err := e.command(ctx, name, cmd, fs.Args()[1:], &version)
	var ue usageError
	if errors.As(err, &ue) && ue.cmd == "" && name != "help" {
		ue.cmd = name
		return ue
	}
	return err
}

// command parses a command's flags and arguments and runs it.
func (e *env) command(ctx context.Context, name string, cmd command, args []string, version *bool) error {
	cfs := newFlags(name)
	e.globalFlags(cfs, version)
	run := cmd.bind(cfs)
	pos, err := parseInterspersed(cfs, args)
	if err != nil {
		return flagError(err, name)
	}
	if *version {
		return cmdVersion(ctx, e, nil)
	}
	if err := cmd.args(pos); err != nil {
		return err
	}
	if !cmd.noDB {
		if err := e.tables.Validate(); err != nil {
			return usageError{msg: err.Error()}
		}
		if e.db == "" {
			e.db = os.Getenv("SUBAGENTCTL_DB")
		}
		if e.db == "" {
			e.db = "./subagents.db"
		}
		if e.dsn, err = parseDSN(e.db); err != nil {
			return usageError{msg: err.Error()}
		}
	}
	return run(ctx, e, pos)
}

// globalFlags are the flags every command takes, before it or after it.
func (e *env) globalFlags(fs *flag.FlagSet, version *bool) {
	fs.StringVar(&e.db, "db", e.db, "")
	fs.StringVar(&e.tables.Sessions, "sessions-table", e.tables.Sessions, "")
	fs.StringVar(&e.tables.Messages, "messages-table", e.tables.Messages, "")
	fs.StringVar(&e.tables.Meta, "meta-table", e.tables.Meta, "")
	fs.BoolVar(version, "version", *version, "")
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseInterspersed parses flags wherever they stand among the positional
// arguments, which it returns in order.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

func flagError(err error, command ...string) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if len(command) > 0 {
		return usagef("%s: %v", command[0], err)
	}
	return usageError{msg: err.Error()}
}

func cmdVersion(_ context.Context, e *env, _ *noFlags) error {
	line := "subagentctl " + core.Version
	if info, ok := debug.ReadBuildInfo(); ok {
		// A build by go install module@version says which; a checkout's
		// build says its revision.
		if v := info.Main.Version; v != "" && v != "(devel)" && v != core.Version {
			line += " (module " + v + ")"
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				line += " " + s.Value[:12]
			}
		}
	}
	fmt.Fprintln(e.stdout, line)
	return nil
}

// cmdHelp prints the usage, or one command's entry of it.
func cmdHelp(_ context.Context, e *env, o *noFlags) error {
	if len(o.pos) == 0 {
		fmt.Fprint(e.stdout, usage)
		return nil
	}
	name := o.pos[0]
	if _, ok := commands[name]; !ok {
		return usagef("help: unknown command %q", name)
	}
	printing := false
	for _, line := range strings.Split(usage, "\n") {
		entry := strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ")
		if entry {
			printing = strings.HasPrefix(line, "  "+name+" ") || line == "  "+name
		}
		if printing && (entry || strings.HasPrefix(line, "   ")) {
			fmt.Fprintln(e.stdout, strings.TrimSpace(line))
		}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
