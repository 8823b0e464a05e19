// Command adminview is a host's admin server with the record's web view
// mounted in it: under a prefix of the host's own mux, behind the host's
// own authentication (here HTTP basic auth; the view has none of its own).
package main

import (
	"context"
	"crypto/subtle"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/webview"
)

func main() {
	dir, err := os.MkdirTemp("", "adminview-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	h, err := adminServer(context.Background(), filepath.Join(dir, "host.db"), "admin", "s3cret")
	if err != nil {
		log.Fatal(err)
	}
	log.Print("admin server on http://127.0.0.1:7411/admin/subagents/ (admin / s3cret)")
	log.Fatal(http.ListenAndServe("127.0.0.1:7411", h))
}

// README: adminview
// adminServer is the host's admin mux: its own pages, and the record's
// view under /admin/subagents/, both behind its authentication.
func adminServer(ctx context.Context, path, user, password string) (http.Handler, error) {
	store, err := openStore(ctx, path)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/{$}", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("admin home")) })
	mux.Handle("/admin/subagents/", webview.New(store, webview.WithPrefix("/admin/subagents")))
	return basicAuth(mux, user, password), nil
}

// basicAuth is the host's middleware: the view trusts whoever it lets by.
func basicAuth(next http.Handler, user, password string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="admin"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// README: end

// openStore opens a demo host database with one recorded stream.
func openStore(ctx context.Context, path string) (*sqlstore.Store, error) {
	db, err := sqlite.OpenDB(path)
	if err != nil {
		return nil, err
	}
	if err := kandevtest.CreateTables(ctx, db, sqlstore.Tables{}); err != nil {
		return nil, err
	}
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	frames := kandevtest.Stream("demo-", time.Now().UTC())
	if err := kandevtest.InsertSession(ctx, db, sqlstore.Tables{}, frames[0].TaskSessionID, "task"); err != nil {
		return nil, err
	}
	for _, f := range frames {
		row, v := core.Normalize(f)
		if v.NoIdentity {
			continue
		}
		if err := store.Upsert(ctx, row); err != nil {
			return nil, err
		}
	}
	return store, nil
}
