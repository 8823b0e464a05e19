package webview

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/canon"
	"github.com/subagentctx/subagentctx/internal/fanout"
)

// The timeline's geometry, in SVG user units: a label column, the plot,
// one row per subagent.
const (
	labelWidth = 300
	plotWidth  = 620
	rowHeight  = 22
	barHeight  = 14
	axisHeight = 28
	indentStep = 14
	minBar     = 3 // a subagent settled within a blink still shows
	openTail   = 14
)

// turnView is one turn: its timeline and its rows' details, in the same
// (tree) order.
type turnView struct {
	ID            string
	Count         int
	Start, End    time.Time
	Width, Height int
	Ticks         []tick
	Bars          []bar
	Totals        totals
}

// totals are a turn's spend: summed over its top-level subagents only,
// and its nested subagents' apart, never added in — a provider's figure
// for a parent may already include its children's, so a sum over the
// tree could count a token twice.
type totals struct {
	Subagents, Failed, Nested      int
	Tokens, ToolUses, NestedTokens spend
}

type tick struct {
	X     float64
	Label string
}

// bar is one subagent: a bar from observed_at to settled_at, or an open
// bar (not yet settled) that runs to the turn's last instant and on.
type bar struct {
	Row      core.Subagent
	Anchor   string
	Depth    int
	Y, TextY int
	X, W     float64
	LabelX   int
	Label    string
	Class    string // by tool status: ok, failed, cancelled, running
	Open     bool
	Title    string
	// Below is the tokens the subagents nested under this one report,
	// shown beside its own and never added to it (totals).
	Below spend
}

// layout places a turn's subagents: depth first, each under its parent,
// on a time axis from the first observation to the last instant on record.
func layout(t fanout.Turn, index int) turnView {
	v := turnView{ID: t.TurnID, Count: t.Count}
	var order []*fanout.Node
	var walk func(nodes []*fanout.Node)
	walk = func(nodes []*fanout.Node) {
		for _, n := range nodes {
			order = append(order, n)
			walk(n.Children)
		}
	}
	walk(t.Roots)
	below := spendBelow(t.Roots)
	for _, n := range order {
		r := n.Row
		v.Totals.Subagents++
		if canon.Failed(r.ToolStatus, r.AgentStatus) {
			v.Totals.Failed++
		}
		if n.Depth == 0 {
			v.Totals.Tokens.add(r.TotalTokens)
			v.Totals.ToolUses.add(r.ToolUseCount)
		} else {
			v.Totals.Nested++
			v.Totals.NestedTokens.add(r.TotalTokens)
		}
	}
	for i, n := range order {
		r := n.Row
		if i == 0 || r.ObservedAt.Before(v.Start) {
			v.Start = r.ObservedAt
		}
		end := r.ObservedAt
		if r.SettledAt != nil && r.SettledAt.After(end) {
			end = *r.SettledAt
		}
		if end.After(v.End) {
			v.End = end
		}
	}
	// In seconds as floats: a time.Duration saturates at 292 years, and a
	// quarter of a span over 73 years would overflow it.
	span := seconds(v.Start, v.End)
	if span <= 0 {
		span = 1
	}
	x := func(at time.Time) float64 {
		return tenth(labelWidth + seconds(v.Start, at)/span*plotWidth)
	}
	for i := range 5 {
		v.Ticks = append(v.Ticks, tick{X: labelWidth + float64(i)*plotWidth/4, Label: since(span * float64(i) / 4)})
	}
	for i, n := range order {
		r := n.Row
		b := bar{Row: r, Anchor: fmt.Sprintf("t%d-%d", index, i), Depth: n.Depth,
			Y: axisHeight + i*rowHeight + (rowHeight-barHeight)/2, TextY: axisHeight + i*rowHeight + rowHeight/2 + 4,
			LabelX: 4 + n.Depth*indentStep, Class: statusClass(r.ToolStatus), Open: r.SettledAt == nil}
		b.X = x(r.ObservedAt)
		if b.Open {
			b.W = tenth(labelWidth + plotWidth - b.X + openTail)
		} else {
			b.W = tenth(max(x(*r.SettledAt)-b.X, minBar))
		}
		b.Below = below[n]
		b.Label = label(r, n.Depth)
		b.Title = title(r)
		v.Bars = append(v.Bars, b)
	}
	v.Width = labelWidth + plotWidth + openTail + 8
	v.Height = axisHeight + len(order)*rowHeight + 4
	return v
}

// spend is a sum of one metric over some rows: the reported values'
// exact sum and how many rows did not report it.
type spend struct {
	Sum                  *big.Int
	Reported, Unreported int64
}

func (s *spend) add(v *int64) {
	if v == nil {
		s.Unreported++
		return
	}
	if s.Sum == nil {
		s.Sum = new(big.Int)
	}
	s.Sum.Add(s.Sum, big.NewInt(*v))
	s.Reported++
}

func (s *spend) merge(o spend) {
	if o.Sum != nil {
		if s.Sum == nil {
			s.Sum = new(big.Int)
		}
		s.Sum.Add(s.Sum, o.Sum)
	}
	s.Reported += o.Reported
	s.Unreported += o.Unreported
}

// spendBelow is, per node, the tokens its descendants report: each
// node's is its children's own and theirs, summed bottom-up, so it is
// linear in the rows however deep the nesting.
func spendBelow(roots []*fanout.Node) map[*fanout.Node]spend {
	out := map[*fanout.Node]spend{}
	var visit func(n *fanout.Node) spend
	visit = func(n *fanout.Node) spend {
		var below spend
		for _, c := range n.Children {
			below.merge(visit(c))
			below.add(c.Row.TotalTokens)
		}
		out[n] = below
		return below
	}
	for _, r := range roots {
		visit(r)
	}
	return out
}

// statusClass colours a bar by its tool status.
func statusClass(s *string) string {
	if s == nil {
		return "running"
	}
	switch *s {
	case "complete", "completed", "success":
		return "ok"
	case "error", "failed":
		return "failed"
	case "cancelled":
		return "cancelled"
	}
	return "running"
}

// label is the row's name in the label column, cut to fit beside its
// indentation.
func label(r core.Subagent, depth int) string {
	parts := []string{}
	if r.SubagentType != nil {
		parts = append(parts, *r.SubagentType)
	}
	if r.Description != nil {
		parts = append(parts, *r.Description)
	}
	if len(parts) == 0 {
		parts = append(parts, r.ToolCallID)
	}
	s := strings.Join(parts, ": ")
	if r.IsAsync {
		s = "⟳ " + s
	}
	limit := max(44-depth*2, 12)
	if utf8.RuneCountInString(s) > limit {
		s = string([]rune(s)[:limit-1]) + "…"
	}
	return s
}

// title is the bar's tooltip.
func title(r core.Subagent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s)", r.ToolCallID, text(r.ToolStatus))
	if r.IsAsync {
		b.WriteString(", async")
	}
	if r.SettledAt == nil {
		b.WriteString(", not settled")
	} else {
		fmt.Fprintf(&b, ", settled after %s", strings.TrimPrefix(since(seconds(r.ObservedAt, *r.SettledAt)), "+"))
	}
	fmt.Fprintf(
		&b, "; tokens %s, tool uses %s, duration_ms %s", num(r.TotalTokens), num(r.ToolUseCount), num(r.DurationMs),
	)
	return b.String()
}

// seconds is b - a in seconds, for any two instants of years 1-9999.
func seconds(a, b time.Time) float64 {
	return float64(b.Unix()-a.Unix()) + float64(b.Nanosecond()-a.Nanosecond())/1e9
}

// tenth rounds a coordinate to a tenth of a unit: finer than any screen,
// and short in the page.
func tenth(v float64) float64 { return math.Round(v*10) / 10 }
