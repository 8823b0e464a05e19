package sqltest

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm/logger"
)

// StatementLog is a GORM logger that keeps the statements a handle sends
// while it is on (its zero value is off), for tests that check what a
// store sends.
type StatementLog struct {
	mu         sync.Mutex
	on         bool
	statements []string
}

// Start forgets what was kept and keeps what follows.
func (l *StatementLog) Start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on, l.statements = true, nil
}

// Stop keeps nothing more.
func (l *StatementLog) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
}

// Statements is what was kept, in the order sent.
func (l *StatementLog) Statements() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.statements...)
}

func (l *StatementLog) LogMode(logger.LogLevel) logger.Interface { return l }
func (l *StatementLog) Info(context.Context, string, ...any)     {}
func (l *StatementLog) Warn(context.Context, string, ...any)     {}
func (l *StatementLog) Error(context.Context, string, ...any)    {}
func (l *StatementLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		q, _ := fc()
		l.statements = append(l.statements, q)
	}
}
