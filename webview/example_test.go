package webview_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/webview"
)

// The view mounted under a prefix of the host's own server, its reads
// bounded: each has a deadline of its own, and at most two run at once.
func ExampleNew() {
	store := memory.New() // the host's store, or one on a read replica
	mux := http.NewServeMux()
	mux.Handle("/subagents/", webview.New(store, webview.WithPrefix("/subagents"),
		webview.WithReadTimeout(5*time.Second), webview.WithMaxReads(2)))

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/subagents/?range=24h", nil))
	fmt.Println(w.Code, w.Header().Get("Content-Type"))
	// Output: 200 text/html; charset=utf-8
}
