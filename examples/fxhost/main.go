// Command fxhost is a host application wired with go.uber.org/fx: the
// subagentctx module on embedded SQLite, /debug/vars served on loopback, and
// a realistic frame stream recorded through the injected Recorder.
//
//	go -C examples run ./fxhost            # record, print /debug/vars, exit
//	go -C examples run ./fxhost -serve     # keep serving until interrupted
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"go.uber.org/fx"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/fxmodule"
	"github.com/subagentctx/subagentctx/kandevtest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address for /debug/vars")
	path := flag.String("db", "", "SQLite file (default: a new temporary directory)")
	serve := flag.Bool("serve", false, "keep serving /debug/vars until interrupted")
	flag.Parse()
	if *path == "" {
		dir, err := os.MkdirTemp("", "subagentctx-fxhost-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		*path = filepath.Join(dir, "host.db")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *path, *addr, *serve); err != nil {
		log.Fatal(err)
	}
}

// README: handler

// StreamHandler stands for the host's tool-call stream handler: it sees
// subagent frames and hands them to the Recorder, which never fails it nor
// makes it wait.
type StreamHandler struct{ rec *core.Recorder }

// NewStreamHandler is the host's constructor; fx injects the Recorder.
func NewStreamHandler(rec *core.Recorder) *StreamHandler { return &StreamHandler{rec: rec} }

// OnSubagentFrame is called for each recognised subagent frame.
func (h *StreamHandler) OnSubagentFrame(ctx context.Context, f core.Frame) { h.rec.Record(ctx, f) }

// README: end

func run(ctx context.Context, w io.Writer, path, addr string, serve bool) error {
	if err := seedHost(ctx, path); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var handler *StreamHandler
	var rec *core.Recorder
	app := fx.New(
		fx.NopLogger,
		// README: fx
		fx.Provide(func() (*sqlstore.Store, error) {
			db, err := sqlite.OpenDB(path) // or the host's own handle: sqlite.New(hostDB), postgres.NewSQL(sqlDB)
			if err != nil {
				return nil, err
			}
			return sqlite.New(db) // touches nothing: the module migrates in the background
		}),
		fxmodule.SQL, // provides *core.Recorder, core.Store, report.Reader, *core.Counters, *migration.Runner
		fx.Provide(NewStreamHandler),
		// README: end
		fx.Invoke(func(lc fx.Lifecycle) { // the host's debug server
			srv := &http.Server{Handler: expvar.Handler(), ReadHeaderTimeout: 5 * time.Second}
			lc.Append(fx.StartStopHook(
				func() { go srv.Serve(ln) },
				func(ctx context.Context) error { return srv.Shutdown(ctx) }))
		}),
		fx.Populate(&handler, &rec),
	)
	if err := app.Start(ctx); err != nil {
		return err
	}
	for _, f := range kandevtest.Stream("", time.Now().UTC()) {
		f.TaskSessionID = "sess-1"
		handler.OnSubagentFrame(ctx, f)
	}
	if err := rec.Flush(ctx); err != nil { // only to print final counters below
		return errors.Join(err, app.Stop(context.Background()))
	}
	url := "http://" + ln.Addr().String() + "/debug/vars"
	resp, err := http.Get(url)
	if err != nil {
		return errors.Join(err, app.Stop(context.Background()))
	}
	vars, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	counters, _ := expvarField(vars, core.ExpvarName)
	fmt.Fprintf(w, "GET %s → %s: %s\n", url, core.ExpvarName, counters)
	if serve {
		fmt.Fprintln(w, "serving; interrupt to stop")
		<-ctx.Done()
	}
	return app.Stop(context.Background())
}

// seedHost creates the host's own tables, as the host's schema init would.
func seedHost(ctx context.Context, path string) error {
	db, err := sqlite.OpenDB(path)
	if err != nil {
		return err
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	if err := kandevtest.CreateTables(ctx, db, sqlstore.Tables{}); err != nil {
		return err
	}
	return kandevtest.InsertSession(ctx, db, sqlstore.Tables{}, "sess-1", "task")
}
