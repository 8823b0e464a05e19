package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/webview"
)

// defaultAddr keeps the view on this machine unless asked otherwise.
const defaultAddr = "127.0.0.1:7410"

// cmdServe serves the read-only web view until SIGINT or SIGTERM. The
// database is opened read-only, as for every read command; the view only
// reads, and the first line on stdout says where it listens (with
// --addr 127.0.0.1:0, on a free port). --db may name a read replica: the
// view reads the activation keys and health from the same database.
func cmdServe(ctx context.Context, e *env, o *serveFlags) error {
	if o.readTimeout <= 0 {
		return usagef("serve: --read-timeout %v: want a positive duration", o.readTimeout)
	}
	if o.maxReads < 1 {
		return usagef("serve: --max-reads %d: want at least 1", o.maxReads)
	}
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer s.Close()
	l, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := &http.Server{
		Handler: webview.New(s, webview.WithLogger(e.logger()), webview.WithPrefix(o.basePath),
			webview.WithReadTimeout(o.readTimeout), webview.WithMaxReads(o.maxReads)),
		ReadHeaderTimeout: 10 * time.Second,
		// A page waits for its turn and then reads, each up to the read
		// timeout: the answer must still be written after both.
		WriteTimeout: 2*o.readTimeout + 30*time.Second,
		IdleTimeout:  2 * time.Minute,
	}
	fmt.Fprintf(e.stdout, "listening on http://%s%s/\n", l.Addr(), strings.TrimRight(o.basePath, "/"))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil {
		return fmt.Errorf("serve: stop: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
