package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/subagentctx/subagentctx/claude"
)

// benchTranscript measures claude.ReadTranscript over generated subagent
// transcripts of growing size, beside what a user would write by hand to
// read the same lines: a bare JSON-lines scan decoding each line's type
// and usage (no request counted once, no instants, no models). Its
// throughput must be at least half the scan's, and the heap it holds
// (live after a collection nine tenths of the way through the read) flat
// from 1 MB up.
func benchTranscript(c config) ([]result, error) {
	sizes := []int64{1 << 20, 100 << 20}
	switch {
	case c.tiny:
		sizes = []int64{1 << 20, 8 << 20}
	case c.operate >= 1_000_000: // -size full
		sizes = append(sizes, 1<<30)
	}
	var out []result
	var firstHeld uint64
	for _, size := range sizes {
		var lib, hand []time.Duration
		var held uint64
		for range c.runs {
			src := &heldAt{r: newTranscript(size), at: size * 9 / 10}
			runtime.GC()
			base := liveHeap()
			start := time.Now()
			tr, err := claude.ReadTranscript(src)
			took := time.Since(start)
			if err == nil && tr.Requests == 0 {
				err = errors.New("no request read")
			}
			if err != nil {
				return nil, err
			}
			p := src.live - min(src.live, base)
			lib, held = append(lib, took), max(held, p)
			start = time.Now()
			if err := bareScan(newTranscript(size)); err != nil {
				return nil, err
			}
			hand = append(hand, time.Since(start))
		}
		if firstHeld == 0 {
			firstHeld = held
		}
		l, b := median(lib), median(hand)
		mb := float64(size) / (1 << 20)
		label := fmt.Sprintf("%.0f MB", mb)
		out = append(out, result{
			What: "transcript reader (claude.ReadTranscript)", Dialect: "-", Size: label,
			Library:  fmt.Sprintf("%.0f MB/s", mb/l.Seconds()),
			Baseline: fmt.Sprintf("%.0f MB/s (a bare JSON-lines scan)", mb/b.Seconds()),
			Ratio:    l.Seconds() / b.Seconds(), Target: "≤ 2 (at least half the scan's speed)",
			Pass: l.Seconds() <= 2*b.Seconds(),
		}, result{
			What: "transcript reader, heap held", Dialect: "-", Size: label,
			Library:  fmt.Sprintf("%.0f KiB", float64(held)/(1<<10)),
			Baseline: fmt.Sprintf("%.0f KiB (at 1 MB)", float64(firstHeld)/(1<<10)),
			Ratio:    float64(held) / float64(firstHeld), Target: "≤ 2 (flat whatever the size)",
			Pass: held <= 2*firstHeld,
		})
	}
	return out, nil
}

// bareScan is the hand-written reading: each line decoded for its type
// and usage, the usage summed.
func bareScan(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 16<<20)
	var sum int64
	for sc.Scan() {
		var l struct {
			Type    string `json:"type"`
			Message struct {
				Usage *struct {
					InputTokens  int64 `json:"input_tokens"`
					OutputTokens int64 `json:"output_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message.Usage != nil {
			sum += l.Message.Usage.InputTokens + l.Message.Usage.OutputTokens
		}
	}
	if sum == 0 {
		return errors.New("the bare scan read no usage")
	}
	return sc.Err()
}

// heldAt reads r, and once at bytes in collects the garbage and notes the
// heap still live: what the reader holds mid-read.
type heldAt struct {
	r        io.Reader
	n, at    int64
	live     uint64
	measured bool
}

func (h *heldAt) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if h.n += int64(n); !h.measured && h.n >= h.at {
		h.measured = true
		runtime.GC()
		h.live = liveHeap()
	}
	return n, err
}

// liveHeap is the Go heap's allocated bytes (after a collection: its live
// ones).
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// transcript generates a subagent transcript of about size bytes in
// Claude Code's shape, a request at a time: a tool result (a user line of
// 2 KB), then the request's two content blocks — text, then a tool use —
// on lines of their own repeating its usage.
type transcript struct {
	left int64
	n    int
	buf  []byte
}

func newTranscript(size int64) *transcript { return &transcript{left: size} }

func (t *transcript) Read(p []byte) (int, error) {
	if len(t.buf) == 0 {
		if t.left <= 0 {
			return 0, io.EOF
		}
		t.n++
		at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC).Add(time.Duration(t.n) * time.Second).Format(time.RFC3339Nano)
		usage := fmt.Sprintf(`"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,`+
			`"cache_creation_input_tokens":%d}`, 3+t.n%5, 100+t.n%300, 20_000+t.n, 512)
		head := fmt.Sprintf(`{"type":"assistant","requestId":"req_%08d","timestamp":"%s","message":{"id":"msg_%08d",`+
			`"model":"claude-sonnet-4-5","role":"assistant",`, t.n, at, t.n)
		t.buf = fmt.Appendf(t.buf[:0], `{"type":"user","timestamp":"%s","message":{"role":"user","content":[`+
			`{"type":"tool_result","tool_use_id":"toolu_%08d","content":"%s"}]}}`+"\n", at, t.n-1, filler[:2048])
		t.buf = fmt.Appendf(t.buf, `%s"content":[{"type":"text","text":"%s"}],"stop_reason":null,%s}}`+"\n",
			head, filler[:200], usage)
		t.buf = fmt.Appendf(t.buf, `%s"content":[{"type":"tool_use","id":"toolu_%08d","name":"Grep",`+
			`"input":{"pattern":"%s"}}],"stop_reason":"tool_use",%s}}`+"\n", head, t.n, filler[:300], usage)
		t.left -= int64(len(t.buf))
	}
	n := copy(p, t.buf)
	t.buf = t.buf[n:]
	return n, nil
}

// filler is text of the kind transcripts hold.
var filler = func() string {
	const words = "the subagent reads the failing test and the code it covers then reports what it found "
	b := make([]byte, 0, 4096)
	for len(b) < 4096 {
		b = append(b, words...)
	}
	return string(b[:4096])
}()
