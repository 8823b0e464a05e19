package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"github.com/subagentctx/subagentctx/core"
)

// Tap returns a reader of r — the agent's output stream (its stdout), on
// its way to the host's ACP connection — that hands every line to the
// tracker first (Line, under the identity the host gives for the line's
// ACP session, "" for a message that names none) and each frame it
// implies to record, then passes the line on unchanged. It is how a host
// receives what its connection does not route to it: the SDK's
// ClientSideConnection answers Cursor's cursor/task request with "method
// not found" and never hands it over; and it reads every integer to the
// last digit, where a typed notification has them as float64. A line that
// is not JSON passes on, unread.
//
//	conn := sdk.NewClientSideConnection(client, agentStdin, acp.Tap(agentStdout, tracker, identity, record))
func Tap(r io.Reader, t *Tracker, identity func(acpSession string) Identity, record func(core.Frame)) io.Reader {
	return &tap{r: bufio.NewReader(r), t: t, identity: identity, show: func(c Card) { record(c.Frame) }}
}

// Card is what one line of the agent's stream did to a subagent call,
// for a host's UI: the call's ACP session, the frame the line implied
// (what a recorder writes: this notification's fields), and the card —
// the call as the tracker holds it now (Tracker.Current), each field the
// latest that reported it, content included where WithContent fills it.
type Card struct {
	ACPSession string
	Frame      core.Frame
	Current    core.Frame
}

// TapCards is Tap for a host that shows its subagents: show receives,
// for each frame, its Card. The card is the call's merged state on a
// tracker made WithContent (which keeps it); on another, the frame.
func TapCards(r io.Reader, t *Tracker, identity func(acpSession string) Identity, show func(Card)) io.Reader {
	return &tap{r: bufio.NewReader(r), t: t, identity: identity, show: show, cards: true}
}

type tap struct {
	r        *bufio.Reader
	t        *Tracker
	identity func(string) Identity
	show     func(Card)
	cards    bool   // show wants the card (Current), not the frame alone
	pending  []byte // the rest of the line being passed on
	err      error  // the stream's error, after the last line
}

func (p *tap) Read(b []byte) (int, error) {
	for len(p.pending) == 0 {
		if p.err != nil {
			return 0, p.err
		}
		line, err := p.r.ReadBytes('\n')
		p.pending, p.err = line, err
		if len(line) > 0 {
			p.take(line)
		}
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	return n, nil
}

// take hands one line to the tracker.
func (p *tap) take(line []byte) {
	var m struct {
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return
	}
	frames, err := p.t.Line(p.identity(m.Params.SessionID), line)
	if err != nil {
		return
	}
	for _, f := range frames {
		c := Card{ACPSession: m.Params.SessionID, Frame: f}
		if p.cards {
			c.Current = f
			for _, cur := range p.t.Current(c.ACPSession, f.ToolCallID) {
				if cur.ToolCallID == f.ToolCallID {
					c.Current = cur
				}
			}
		}
		p.show(c)
	}
}

// TapWrites returns a writer to w — the host's stream to the agent (its
// stdin) — that hands every line the host writes to the tracker first
// (Line), then writes it on unchanged: so that a session/load request the
// host sends marks its session's replay before the agent can answer, and
// the history the agent replays (read through Tap) records nothing, as
// Line does for a capture holding both directions. With Tap on the
// agent's output it is the whole of a host's wiring:
//
//	conn := sdk.NewClientSideConnection(client, acp.TapWrites(agentStdin, tracker), acp.Tap(agentStdout, …))
func TapWrites(w io.Writer, t *Tracker) io.Writer { return &tapWrites{w: w, t: t} }

type tapWrites struct {
	w        io.Writer
	t        *Tracker
	partial  []byte // the line being written, until its newline
	skipping bool   // the line being written is too long to follow
}

func (p *tapWrites) Write(b []byte) (int, error) {
	for rest := b; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if p.partial = append(p.partial, rest...); len(p.partial) > maxRequestLine {
				p.partial, p.skipping = p.partial[:0], true
			}
			break
		}
		if line := append(p.partial, rest[:i+1]...); !p.skipping && isRequest(line) {
			// A request names no subagent: the tracker only follows it.
			_, _ = p.t.Line(Identity{}, line)
		}
		p.partial, p.skipping, rest = p.partial[:0], false, rest[i+1:]
	}
	return p.w.Write(b)
}

// isRequest reports whether a line the host writes is a request (or a
// notification): it has a method. The host's responses to the agent's own
// requests are not followed: their ids are the agent's, and one equal to
// the id of the host's pending session/load would read as its answer and
// end the replay early.
func isRequest(line []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(line, &m) == nil && m.Method != ""
}

// maxRequestLine bounds the line TapWrites holds until its newline: a
// session/load request is small; a longer line (a prompt with large
// content) is passed on without being read.
const maxRequestLine = 1 << 20
