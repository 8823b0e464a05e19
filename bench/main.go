// Command bench measures subagentctx against what a user would otherwise
// write by hand, in one run, on SQLite and on PostgreSQL, and prints a
// table of medians with pass/fail against the targets (README,
// "Performance"):
//
//	scripts/bench -size full      # starts a throw-away PostgreSQL, then go run ./bench
//
// Nothing here is asserted by the test suite; CI runs -size tiny only so the
// code cannot rot.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
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
}

var sizes = map[string]config{
	"tiny":  {sessions: 10, stores: []int{2000}, operate: 2000, runs: 1, tiny: true},
	"small": {sessions: 300, stores: []int{10_000, 100_000}, operate: 100_000, runs: 3},
	"full":  {sessions: 1200, stores: []int{10_000, 100_000, 300_000}, operate: 1_000_000, runs: 5},
}

func main() {
	size := flag.String("size", "small", "tiny, small or full (full includes a ≈330 MB message store)")
	runs := flag.Int("runs", 0, "runs per figure (default: the size's)")
	dialects := flag.String("dialects", "sqlite,postgres", "comma-separated")
	only := flag.String(
		"only", "", "comma-separated measures to run: record, view, throughput, upsert, history, operate (default all)",
	)
	flag.Parse()
	c, ok := sizes[*size]
	if !ok {
		log.Fatalf("-size %q: want tiny, small or full", *size)
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
	if want("record") {
		rows = append(rows, benchRecord(c)...)
	}
	if want("view") {
		rows = append(rows, benchView())
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
	printTable(rows, *size, c)
}

// result is one line of the table.
type result struct {
	what, dialect, size string
	library, baseline   string // figures, formatted
	ratio               float64
	target              string
	pass                bool
	note                string
}

func printTable(rows []result, size string, c config) {
	fmt.Printf(
		"subagentctx benchmark, -size %s, median of %d run(s), %s\n\n", size, c.runs, time.Now().UTC().Format(time.DateOnly),
	)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tdialect\tsize\tlibrary\tbaseline\tratio\ttarget\tresult\tnote")
	for _, r := range rows {
		verdict := "pass"
		switch {
		case c.tiny:
			verdict = "n/a (tiny)"
		case r.target == "":
			verdict = "-"
		case !r.pass:
			verdict = "MISSED"
		}
		ratio := "-"
		if r.ratio > 0 {
			ratio = fmt.Sprintf("%.2f", r.ratio)
		}
		fmt.Fprintf(
			tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.what, r.dialect, r.size, r.library, r.baseline, ratio, r.target,
			verdict, r.note,
		)
	}
	tw.Flush()
}

func median(xs []time.Duration) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
