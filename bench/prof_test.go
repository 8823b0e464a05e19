package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

func TestProfPages(t *testing.T) {
	ctx := context.Background()
	c := config{tmp: t.TempDir(), pgAdmin: os.Getenv("SUBAGENTCTX_TEST_POSTGRES_DSN"), runs: 3}
	for _, d := range []string{"sqlite", "postgres"} {
		s, cleanup, err := newStore(ctx, c, d)
		if err != nil {
			t.Fatal(err)
		}
		defer cleanup()
		if err := seedOperate(ctx, s, 100_000); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		tm := func(name string, fn func() error) {
			for i := range 3 {
				start := time.Now()
				if err := fn(); err != nil {
					t.Fatal(err)
				}
				if i == 2 {
					t.Logf("%s %s: %v", d, name, time.Since(start))
				}
			}
		}
		day := now.Add(-24 * time.Hour)
		tm("health 1h", func() error { _, err := s.Health(ctx, core.HealthQuery{Since: now.Add(-time.Hour)}); return err })
		tm("activation", func() error { _, err := s.Activation(ctx); return err })
		tm("overview 24h", func() error { _, err := s.Overview(ctx, core.OverviewQuery{Since: day}); return err })
		tm("sessions 24h", func() error {
			_, err := s.Sessions(ctx, core.SessionQuery{Since: day, Limit: 51})
			return err
		})
		tm("list session", func() error { _, err := s.ListBySession(ctx, "op000099", core.Page{}); return err })
		tm("stats session", func() error {
			_, err := s.Stats(ctx, core.StatsQuery{TaskSessionID: "op000099"})
			return err
		})
	}
}
