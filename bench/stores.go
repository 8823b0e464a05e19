package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// newStore opens a fresh database of the dialect with Kandev-shaped host
// tables and the store in it; cleanup closes and drops it.
func newStore(ctx context.Context, c config, dialect string) (*sqlstore.Store, func(), error) {
	var db *gorm.DB
	var err error
	var drop func()
	b := make([]byte, 6)
	rand.Read(b)
	name := "bench_" + hex.EncodeToString(b)
	if dialect == "sqlite" {
		path := filepath.Join(c.tmp, name+".db")
		if db, err = sqlite.OpenDB(path); err != nil {
			return nil, nil, err
		}
		drop = func() {}
	} else {
		admin, err := postgres.OpenDB(c.pgAdmin)
		if err != nil {
			return nil, nil, err
		}
		if err := admin.Exec("CREATE DATABASE " + name).Error; err != nil {
			return nil, nil, err
		}
		u, _ := url.Parse(c.pgAdmin)
		u.Path = "/" + name
		if db, err = postgres.OpenDB(u.String()); err != nil {
			return nil, nil, err
		}
		drop = func() {
			admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			if a, err := admin.DB(); err == nil {
				a.Close()
			}
		}
	}
	cleanup := func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
		drop()
	}
	if err := kandevtest.CreateTables(ctx, db, sqlstore.Tables{}); err != nil {
		cleanup()
		return nil, nil, err
	}
	var s *sqlstore.Store
	if dialect == "sqlite" {
		s, err = sqlite.New(db)
	} else {
		s, err = postgres.New(db)
	}
	if err == nil {
		err = s.EnsureSchema(ctx)
	}
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return s, cleanup, nil
}

// seed writes n messages: about 1% subagent tool calls of every provider's
// shape (some duplicated by an earlier message, some malformed), the rest
// other tool calls and chat; each carries about 1 KiB of content, so that
// ≈300k messages make the reference store's 328 MB.
func seed(ctx context.Context, s *sqlstore.Store, n int) (bytes int64, err error) {
	db := s.DB()
	shapes := []core.Payload{
		kandevtest.ClaudeAsyncLaunch, kandevtest.ClaudeAsyncLaunch, kandevtest.ClaudeAsyncLaunch, kandevtest.ClaudeCompleted,
		kandevtest.OpenCodeTask, kandevtest.CursorTask, kandevtest.AuggieSubAgent, kandevtest.CodexChild,
	}
	content := strings.Repeat("Kandev message content, tool output and prose. ", 21) // ≈1 KiB
	other := `{"tool_call_id":"call_%d","status":"completed",` +
		`"normalized":{"kind":"execute","execute":{"command":"go test ./...","exit_code":0}}}`
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const perSession = 1000
	batch := make([]kandevtest.Message, 0, 5000)
	for i := range n {
		sess := fmt.Sprintf("s%d", i/perSession)
		if i%perSession == 0 {
			if err := kandevtest.InsertSession(ctx, db, sqlstore.Tables{}, sess, sess+"-task"); err != nil {
				return 0, err
			}
		}
		var meta string
		switch {
		case i%100 == 7:
			p := shapes[(i/100)%len(shapes)]
			meta = kandevtest.Subagent(fmt.Sprintf("toolu_%d", i), "completed", &p).JSON()
		case i%100 == 8: // an earlier message of the same subagent
			earlier := &core.Payload{SubagentType: "explorer"}
			meta = kandevtest.Subagent(fmt.Sprintf("toolu_%d", i-1), "in_progress", earlier).JSON()
		case i%1000 == 9:
			meta = `{"normalized": {"kind": "subagent_task"` // malformed
		case i%3 == 0:
			meta = fmt.Sprintf(other, i)
		default:
			meta = `{}`
		}
		created := t0.Add(time.Duration(i) * time.Second)
		m := meta
		batch = append(batch, kandevtest.Message{
			ID: fmt.Sprintf("m%09d", i), TaskSessionID: sess, TaskID: sess + "-task", TurnID: fmt.Sprintf("%s-t%d", sess, i/20),
			Content: content, Metadata: &m, CreatedAt: created, UpdatedAt: created,
		})
		bytes += int64(len(content) + len(meta) + 120)
		if len(batch) == cap(batch) || i == n-1 {
			if err := kandevtest.InsertMessages(ctx, db, sqlstore.Tables{}, batch); err != nil {
				return 0, err
			}
			batch = batch[:0]
		}
	}
	if db.Name() == "postgres" {
		err = db.Exec("VACUUM ANALYZE").Error
	}
	return bytes, err
}
