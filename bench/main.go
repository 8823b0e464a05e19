// Command bench measures subagentctx against what a user would otherwise
// write by hand, in one run, on SQLite and on PostgreSQL, and prints a
// table of medians with pass/fail against the targets (docs/performance.md):
//
//	scripts/bench -size full      # starts a throw-away PostgreSQL, then go run ./bench
//
// Nothing here is asserted by the test suite; CI runs -size tiny only so the
// code cannot rot.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
)

type config struct {
	sessions int   // recorder throughput: sessions of kandevtest.Stream (28 frames each)
	stores   []int // backfill/health: message counts
	operate  int   // health windows, export and sizes: messages and rows
	runs     int
	dialects []string
	pgAdmin  string
	tmp      string
	tiny     bool
	scale    int // the reads at scale: rows on Citus (half on one server); 0: not measured
}

var sizes = map[string]config{
	"tiny":  {sessions: 10, stores: []int{2000}, operate: 2000, runs: 1, tiny: true},
	"small": {sessions: 300, stores: []int{10_000, 100_000}, operate: 100_000, runs: 3},
	"full":  {sessions: 1200, stores: []int{10_000, 100_000, 300_000}, operate: 1_000_000, runs: 5},
	// The reads at scale only, on a Citus cluster beside one server.
	"large": {sessions: 1000, scale: 10_000_000, runs: 3},
}

func main() {
	size := flag.String("size", "small", "tiny, small, full (full includes a ≈330 MB message store) or large "+
		"(the reads at scale: 10M rows on a Citus cluster beside 5M on one server, ≈30 GB of disk)")
	scale := flag.Int("scale", 0, "rows on Citus for -size large (default 10,000,000; one server holds half)")
	runs := flag.Int("runs", 0, "runs per figure (default: the size's)")
	dialects := flag.String("dialects", "sqlite,postgres", "comma-separated")
	only := flag.String(
		"only", "", "comma-separated measures to run: record, view, transcript, throughput, upsert, history, operate "+
			"(default all; -size large runs its own measure alone)",
	)
	rowsOut := flag.Bool("rows", false, "print the measured rows as JSON instead of the table "+
		"(how a run without cgo hands its SQLite figures to the table)")
	flag.Parse()
	c, ok := sizes[*size]
	if !ok {
		log.Fatalf("-size %q: want tiny, small, full or large", *size)
	}
	if *scale < 0 || *scale > 0 && c.scale == 0 {
		log.Fatalf("-scale %d: want a positive number of rows, with -size large", *scale)
	}
	if *scale > 0 {
		c.scale = *scale
	}
	if *runs > 0 {
		c.runs = *runs
	}
	c.dialects = strings.Split(*dialects, ",")
	c.pgAdmin = os.Getenv("SUBAGENTCTX_TEST_POSTGRES_DSN")
	if slices.Contains(c.dialects, "postgres") && c.pgAdmin == "" {
		log.Fatal("PostgreSQL needs SUBAGENTCTX_TEST_POSTGRES_DSN: run scripts/bench, which starts a server")
	}
	want := func(m string) bool { return *only == "" || slices.Contains(strings.Split(*only, ","), m) }
	var err error
	if c.tmp, err = os.MkdirTemp("", "subagentctx-bench-"); err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(c.tmp)
	ctx := context.Background()
	var rows []result
	if c.scale > 0 {
		if !slices.Contains(c.dialects, "postgres") {
			log.Fatal("-size large runs on PostgreSQL and Citus: -dialects must include postgres")
		}
		r, err := benchScale(ctx, c)
		if err != nil {
			log.Fatalf("scale: %v", err)
		}
		printTable(r, *size, c)
		return
	}
	if want("record") {
		rows = append(rows, benchRecord(c)...)
	}
	if want("view") {
		rows = append(rows, benchView())
	}
	if want("transcript") {
		r, err := benchTranscript(c)
		if err != nil {
			log.Fatalf("transcript: %v", err)
		}
		rows = append(rows, r...)
	}
	for _, d := range c.dialects {
		if want("throughput") {
			for _, writers := range []int{1, 8} {
				r, err := benchThroughput(ctx, c, d, writers)
				if err != nil {
					log.Fatalf("throughput %s/%d: %v", d, writers, err)
				}
				rows = append(rows, r...)
			}
		}
		if want("upsert") {
			r, err := benchUpsertRule(ctx, c, d)
			if err != nil {
				log.Fatalf("upsert %s: %v", d, err)
			}
			rows = append(rows, r)
			if d == "postgres" {
				if r, err = benchStaleStatistics(ctx, c); err != nil {
					log.Fatalf("upsert on stale statistics: %v", err)
				}
				rows = append(rows, r)
			}
		}
		if want("operate") {
			rs, err := benchOperate(ctx, c, d)
			if err != nil {
				log.Fatalf("operate %s: %v", d, err)
			}
			rows = append(rows, rs...)
		}
		if want("history") {
			rs, err := benchHistory(ctx, c, d)
			if err != nil {
				log.Fatalf("backfill %s: %v", d, err)
			}
			rows = append(rows, rs...)
		}
	}
	for i := range rows {
		if rows[i].Dialect == "sqlite" {
			rows[i].Dialect = "sqlite/" + map[string]string{"sqlite3": "go-sqlite3", "sqlite": "modernc"}[sqlite.DriverName]
		}
	}
	if *rowsOut {
		if err := json.NewEncoder(os.Stdout).Encode(rows); err != nil {
			log.Fatal(err)
		}
		return
	}
	if slices.Contains(c.dialects, "sqlite") && sqlite.DriverName == "sqlite3" {
		// The SQLite figures of the build without cgo, beside go-sqlite3's.
		pure, err := pureGoRows(os.Args[1:])
		if err != nil {
			log.Fatalf("the SQLite figures without cgo: %v", err)
		}
		rows = append(rows, pure...)
	}
	printTable(rows, *size, c)
}

// pureGoRows runs this benchmark built without cgo (SQLite on
// modernc.org/sqlite) on SQLite alone, with the same flags, and returns its
// rows.
func pureGoRows(args []string) ([]result, error) {
	args = append([]string{"run", "./bench"}, args...)
	cmd := exec.Command("go", append(args, "-dialects", "sqlite", "-rows")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var rows []result
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(rows, func(r result) bool { return !strings.HasPrefix(r.Dialect, "sqlite") }), nil
}

// result is one line of the table.
type result struct {
	What, Dialect, Size string
	Library, Baseline   string // figures, formatted
	Ratio               float64
	// CPURatio is the ratio of the CPU the work cost on its side (cpu.go),
	// where measured.
	CPURatio float64
	Target   string
	Pass     bool
	Note     string
}

func printTable(rows []result, size string, c config) {
	fmt.Printf(
		"subagentctx benchmark, -size %s, median of %d run(s), %s\n\n", size, c.runs, time.Now().UTC().Format(time.DateOnly),
	)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tdialect\tsize\tlibrary\tbaseline\tratio\tcpu ratio\ttarget\tresult\tnote")
	for _, r := range rows {
		verdict := "pass"
		switch {
		case c.tiny:
			verdict = "n/a (tiny)"
		case r.Target == "":
			verdict = "-"
		case !r.Pass:
			verdict = "MISSED"
		}
		ratio, cpu := "-", "-"
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		if r.CPURatio > 0 {
			cpu = fmt.Sprintf("%.2f", r.CPURatio)
		}
		fmt.Fprintf(
			tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.What, r.Dialect, r.Size, r.Library, r.Baseline, ratio, cpu,
			r.Target, verdict, r.Note,
		)
	}
	tw.Flush()
}

func median(xs []time.Duration) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
