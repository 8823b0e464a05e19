package claude

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

// Transcript is what a subagent's transcript says of its run
// (docs/CONTRACT.md §3.5): Claude Code writes one per subagent, JSON
// lines, <session>/subagents/agent-<agentId>.jsonl. Each assistant line
// carries message.id, requestId, message.model, timestamp and
// message.usage; the content blocks of one request are written as lines of
// their own repeating its usage, so a request is counted once, by message
// id and request id (the largest reading of each figure, should a line
// repeat it partly).
type Transcript struct {
	// Usage is the run's usage summed over its requests; Requests how
	// many model requests it made.
	Usage    core.Usage
	Requests int64
	// Models are the models its requests named, in order of first use.
	Models []string
	// First and Last are the earliest and latest timestamps of its lines
	// (zero when none has one): the agent's own start, and its latest
	// activity.
	First, Last time.Time
	// Ended says that its last message is an assistant's that ended its
	// turn (a stop reason other than tool_use): the run's end is Last. A
	// transcript still being written, or cut, has not ended.
	Ended bool
	// Lines counts the lines read; Skipped those that are not a JSON
	// object (a partial last line, while the agent still writes, is one),
	// or longer than maxLineBytes.
	Lines, Skipped int64
}

// transcriptLine is what a transcript line is read for.
type transcriptLine struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	RequestID string `json:"requestId"`
	Message   struct {
		ID         string  `json:"id"`
		Model      string  `json:"model"`
		StopReason *string `json:"stop_reason"`
		Usage      *struct {
			InputTokens         int64 `json:"input_tokens"`
			OutputTokens        int64 `json:"output_tokens"`
			CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
			CacheReadTokens     int64 `json:"cache_read_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

// maxLineBytes bounds a transcript line held in memory: a longer one (a
// huge tool result) is read past and skipped, so a transcript of any size
// is read in bounded memory.
const maxLineBytes = 16 << 20

// reading is one request's usage, the largest reading of each figure.
type reading struct{ input, output, cacheRead, cacheWrite int64 }

// requests are a transcript's requests read so far: the latest ones kept
// by key, and those read before them summed, so that memory stays flat
// whatever the transcript's size. A request's lines come together — its
// content blocks, written as it streams — so a request is never seen
// again once keptRequests others came after it.
type requests struct {
	kept  map[[2]string]*reading
	order [][2]string // kept's keys, oldest first
	done  reading     // the requests no longer kept, summed
	n     int64       // requests seen
}

// keptRequests bounds the requests kept by key.
const keptRequests = 64

// read takes a line's reading of the request k.
func (r *requests) read(k [2]string, in, out, cacheRead, cacheWrite int64) {
	q := r.kept[k]
	if q == nil {
		if len(r.order) == keptRequests {
			old := r.kept[r.order[0]]
			r.done = reading{r.done.input + old.input, r.done.output + old.output,
				r.done.cacheRead + old.cacheRead, r.done.cacheWrite + old.cacheWrite}
			delete(r.kept, r.order[0])
			r.order = r.order[1:]
		}
		q = &reading{}
		r.kept[k], r.order, r.n = q, append(r.order, k), r.n+1
	}
	q.input, q.output = max(q.input, in), max(q.output, out)
	q.cacheRead, q.cacheWrite = max(q.cacheRead, cacheRead), max(q.cacheWrite, cacheWrite)
}

// ReadTranscript reads a transcript, streaming: a line that is not a JSON
// object, an unknown type, or a partial last line is read past (Skipped),
// never an error that loses what was read. The error is the reader's
// only, with what was read before it.
func ReadTranscript(r io.Reader) (Transcript, error) {
	var t Transcript
	requests := &requests{kept: map[[2]string]*reading{}}
	br := bufio.NewReaderSize(r, 1<<16)
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if tooLong = tooLong || len(line)+len(chunk) > maxLineBytes; !tooLong {
				line = append(line, chunk...)
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return t.sum(requests), err
		}
		tooLong = tooLong || len(line)+len(chunk) > maxLineBytes
		whole := line
		if !tooLong {
			whole = append(line, chunk...)
		}
		switch {
		case len(whole) == 0 && !tooLong:
		case tooLong:
			t.Lines, t.Skipped = t.Lines+1, t.Skipped+1
		default:
			t.Lines++
			if !t.read(whole, requests) && err != nil {
				t.Ended = false // a partial last line: the agent is still writing
			}
		}
		line, tooLong = line[:0], false
		if err != nil { // io.EOF
			return t.sum(requests), nil
		}
	}
}

// read takes one line into the transcript; false when it is not a JSON
// object (skipped).
func (t *Transcript) read(line []byte, requests *requests) bool {
	var l transcriptLine
	if json.Unmarshal(line, &l) != nil {
		t.Skipped++
		return false
	}
	if at, err := time.Parse(time.RFC3339Nano, l.Timestamp); err == nil {
		if t.First.IsZero() || at.Before(t.First) {
			t.First = at
		}
		if at.After(t.Last) {
			t.Last = at
		}
	}
	switch l.Type {
	case "assistant":
		if m := l.Message.Model; m != "" && !slices.Contains(t.Models, m) {
			t.Models = append(t.Models, m)
		}
		stop := l.Message.StopReason
		t.Ended = stop != nil && *stop != "" && *stop != "tool_use"
		if u := l.Message.Usage; u != nil {
			requests.read([2]string{l.Message.ID, l.RequestID}, u.InputTokens, u.OutputTokens, u.CacheReadTokens,
				u.CacheCreationTokens)
		}
	case "user":
		t.Ended = false // a tool result or a message: the run goes on
	}
	return true
}

// sum is the transcript with its requests' readings summed into its usage
// (nil figures when it made no request: nothing was reported).
func (t Transcript) sum(requests *requests) Transcript {
	if requests.n == 0 {
		return t
	}
	d := requests.done
	in, out, read, write := d.input, d.output, d.cacheRead, d.cacheWrite
	for _, q := range requests.kept {
		in, out, read, write = in+q.input, out+q.output, read+q.cacheRead, write+q.cacheWrite
	}
	t.Requests = requests.n
	n := t.Requests
	t.Usage = core.Usage{InputTokens: &in, OutputTokens: &out, CacheReadTokens: &read, CacheWriteTokens: &write,
		Requests: &n}
	return t
}

// Frame is the frame that writes the transcript's reading over row: the
// run's usage, its start (First) and, when it has ended, its end (Last).
func (t Transcript) Frame(row core.Subagent) core.Frame {
	f := core.Frame{TaskSessionID: row.TaskSessionID, TaskID: row.TaskID, ExecutionID: row.AgentExecutionID,
		ToolCallID: row.ToolCallID, StartedAt: t.First}
	if t.Requests > 0 {
		u := t.Usage
		f.Usage = &u
	}
	if t.Ended {
		f.EndedAt = t.Last
	}
	return f
}
