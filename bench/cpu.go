package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
)

// A CPU ratio says what the work cost where it runs, apart from waiting:
// SQLite's engine runs in this process, so its CPU is the process's;
// PostgreSQL's is its server's, the postmaster and every process it
// started (the backends and the writers they wake), read from /proc on
// this machine.

// clockTick is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTick = 100

// cpuMeter reads the CPU time the dialect's side has spent so far.
type cpuMeter func() (time.Duration, error)

// newCPUMeter returns the meter of the store's side.
func newCPUMeter(ctx context.Context, s *sqlstore.Store, dialect string) (cpuMeter, error) {
	if dialect == "sqlite" {
		return func() (time.Duration, error) {
			var u syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
				return 0, err
			}
			return time.Duration(u.Utime.Nano() + u.Stime.Nano()), nil
		}, nil
	}
	var dir string
	if err := s.DB().WithContext(ctx).Raw(`SHOW data_directory`).Scan(&dir).Error; err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	postmaster, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	return func() (time.Duration, error) { return serverCPU(postmaster) }, nil
}

// serverCPU sums the CPU time of the postmaster and its children.
func serverCPU(postmaster int) (time.Duration, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := os.Open(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // the process ended
		}
		line, _ := bufio.NewReader(f).ReadString('\n')
		f.Close()
		// The fields after the command's closing parenthesis: state, ppid,
		// …, utime (the 12th), stime (the 13th).
		i := strings.LastIndexByte(line, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(line[i+1:])
		if len(fields) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); pid != postmaster && ppid != postmaster {
			continue
		}
		u, _ := strconv.ParseInt(fields[11], 10, 64)
		st, _ := strconv.ParseInt(fields[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * time.Second / clockTick, nil
}

// measured runs fn and returns its wall and CPU time.
func measured(meter cpuMeter, fn func() error) (wall, cpu time.Duration, err error) {
	c0, err := meter()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := fn(); err != nil {
		return 0, 0, err
	}
	wall = time.Since(start)
	c1, err := meter()
	return wall, c1 - c0, err
}

// cpuRatio is the ratio of two series' median CPU times (0, unmeasured,
// when the baseline's is below the clock's resolution).
func cpuRatio(library, baseline []time.Duration) float64 {
	if b := median(baseline); b > 0 {
		return median(library).Seconds() / b.Seconds()
	}
	return 0
}
