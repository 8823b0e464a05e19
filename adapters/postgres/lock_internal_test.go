package postgres

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

// TestLocalLockTakesTurnsAndKeepsNoPool: passes on one pool take turns in
// this process; one that gives up waiting (its context ends) leaves, and
// once nobody holds or awaits a pool's turn nothing of it is kept (a
// closed pool is not held for ever).
func TestLocalLockTakesTurnsAndKeepsNoPool(t *testing.T) {
	pool := new(sql.DB) // a key only: never connected
	release, err := localLock(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := localLock(ctx, pool); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second pass on the pool while the first holds its turn: %v, want it to wait", err)
	}
	release()
	again, err := localLock(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	again()
	localPasses.Lock()
	defer localPasses.Unlock()
	if _, kept := localPasses.byPool[pool]; kept {
		t.Error("the pool is kept after every pass on it left")
	}
}
