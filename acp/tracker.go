// Package acp turns Agent Client Protocol traffic into subagentctx frames,
// for any host that speaks ACP (docs/CONTRACT.md §7). A Tracker takes the
// agent's traffic as raw JSON — session/update notifications, Cursor's
// cursor/task, session/load's bounds — with the host's identity for it
// (ACP carries no task session, task, turn or execution id), and returns
// the frames of the subagent tool calls among them, recognised by each
// provider's rules (providers.go). Tap reads it off the agent's output
// stream on its way to whatever reads it (an SDK's connection), exact to
// the last digit of every integer. It links no ACP SDK: package
// acp/acpsdk is the path from coder/acp-go-sdk's typed notifications. It
// is opt-in: nothing in core or the adapters imports it.
//
// A replayed history (session/load sends a session's past notifications
// again) is recorded as nothing while the tracker knows it is one
// (Tracker.Replay, or Line seeing the session/load request).
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/canon"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// Agent names the agent behind a session, when the host knows it. Only
// Codex needs it: its frames are recognised only when the host says the
// agent is Codex. A host may give any of the names agentNames knows (the
// agent's own, or its ACP adapter's: "codex-acp" is Codex).
type Agent string

// The agents, by the name the tracker uses for each.
const (
	AgentClaudeCode Agent = "claude-code"
	AgentOpenCode   Agent = "opencode"
	AgentCursor     Agent = "cursor"
	AgentAuggie     Agent = "auggie"
	AgentCodex      Agent = "codex"
)

// agentNames are the names hosts use for the agents: each agent's own and
// its ACP adapter's (docs/CONTRACT.md §7's table); any of them followed by
// "-acp" names the same agent (the reference host's claude-acp, cursor-acp
// and codex-acp among them).
var agentNames = map[string]Agent{
	"claude-code": AgentClaudeCode, "claude": AgentClaudeCode, "claude-agent": AgentClaudeCode,
	"opencode": AgentOpenCode,
	"cursor":   AgentCursor, "cursor-agent": AgentCursor,
	"auggie": AgentAuggie,
	"codex":  AgentCodex,
}

// agentOf is the agent a name stands for (case aside, "-acp" aside).
func agentOf(name string) (Agent, bool) {
	name = strings.ToLower(name)
	a, ok := agentNames[name]
	if !ok {
		a, ok = agentNames[strings.TrimSuffix(name, "-acp")]
	}
	return a, ok
}

// ParseAgent reads an agent's name as hosts give it ("" when the host does
// not know the agent); an unknown name is an error listing the known ones,
// never a silent loss of the agent's rules.
func ParseAgent(name string) (Agent, error) {
	if name == "" {
		return "", nil
	}
	if a, ok := agentOf(name); ok {
		return a, nil
	}
	known := make([]string, 0, len(agentNames))
	for n := range agentNames {
		known = append(known, n)
	}
	slices.Sort(known)
	return "", liberr.Errorf("acp: unknown agent %q: want one of %s, each also with -acp (codex-acp)", name,
		strings.Join(known, ", "))
}

// canonical is the agent a name a host gave stands for.
func (a Agent) canonical() Agent {
	if c, ok := agentOf(string(a)); ok {
		return c
	}
	return a
}

// Identity is the host's identity for one notification: what ACP does not
// carry. A tool call keeps the identity of the notification that first
// showed it.
type Identity struct {
	TaskSessionID, TaskID, TurnID, ExecutionID string
	Agent                                      Agent
}

// Default bounds of a Tracker's memory.
const (
	// DefaultMaxCalls is how many tool calls one ACP session keeps; past
	// it the oldest is forgotten (a session the host never ends).
	DefaultMaxCalls = 4096
	// DefaultMaxSessions is how many ACP sessions are kept; past it the
	// least recently used is forgotten.
	DefaultMaxSessions = 1024
	// DefaultMaxBytes bounds the memory the kept calls hold (WithMaxBytes).
	DefaultMaxBytes = 64 << 20
)

// Tracker follows ACP sessions' tool calls across notifications. It is
// safe for concurrent use.
type Tracker struct {
	mu          sync.Mutex
	sessions    map[string]*session
	tick        uint64 // last-use clock for the sessions' eviction
	maxCalls    int
	maxSessions int
	maxBytes    int
	bytes       int                    // what the tracker keeps, as Bytes reports it
	content     bool                   // WithContent: frames carry the call's content
	readable    func(path string) bool // WithContent's check of an output file
	now         func() time.Time
	// replaying are the ACP sessions whose traffic is a replay (Replay);
	// loads, the session/load requests Line has seen unanswered, by their
	// JSON-RPC id, oldest first (at most maxSessions).
	replaying map[string]bool
	loads     []load
	// cursor holds cursor/task params that name no ACP session (Cursor's
	// do not) for tool calls not seen yet, by tool call id (at most
	// maxCalls), oldest first in cursorOrder (ids no longer held are
	// skipped there).
	cursor      map[string]pending
	cursorOrder []string
	// natives are the native subagent sessions (native.go), by their ACP
	// session id (at most maxSessions).
	natives map[string]*child
}

// pending is cursor/task metadata waiting for its tool call, and the JSON
// it arrived in.
type pending struct {
	meta jsonMap
	size int
}

// correlationBytes is what one kept Codex correlation (a child thread's
// row, or its furthest state) counts toward the byte bound besides its
// strings: a map entry's own weight.
const correlationBytes = 64

// load is a session/load request awaiting its response.
type load struct{ rpcID, session string }

// Option configures a Tracker.
type Option func(*Tracker)

// WithMaxCalls bounds the tool calls kept per ACP session (at least 1).
func WithMaxCalls(n int) Option { return func(t *Tracker) { t.maxCalls = max(n, 1) } }

// WithMaxBytes bounds everything the tracker keeps, over every session
// (default DefaultMaxBytes, at least 1): tool calls' inputs, outputs and
// metadata, cursor/task metadata waiting for its tool call, Codex's
// correlations of child threads to rows. Past it, cursor/task metadata
// that named no session is forgotten first, oldest first, then the
// oldest calls of the least recently used session, then that session. A
// call's size, and metadata's, is the heap its decoded JSON holds,
// estimated from above (at least the JSON's length): a payload of tiny
// values costs many times its length once decoded, and the bound bounds
// memory whatever the payload's shape.
func WithMaxBytes(n int) Option { return func(t *Tracker) { t.maxBytes = max(n, 1) } }

// WithMaxSessions bounds the ACP sessions kept (at least 1).
func WithMaxSessions(n int) Option { return func(t *Tracker) { t.maxSessions = max(n, 1) } }

// WithClock sets the clock that stamps frames (default time.Now).
func WithClock(now func() time.Time) Option { return func(t *Tracker) { t.now = now } }

// NewTracker returns an empty tracker.
func NewTracker(opts ...Option) *Tracker {
	t := &Tracker{
		sessions:    map[string]*session{},
		replaying:   map[string]bool{},
		cursor:      map[string]pending{},
		natives:     map[string]*child{},
		maxCalls:    DefaultMaxCalls,
		maxBytes:    DefaultMaxBytes,
		maxSessions: DefaultMaxSessions,
		now:         time.Now,
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

// session is one ACP session's state.
type session struct {
	calls    map[string]*call
	order    []string           // tool call ids, oldest first, for the cap
	cursor   map[string]pending // cursor/task params waiting for their tool call
	waiting  []string           // cursor's ids, oldest first (ids no longer held are skipped)
	children map[string]string  // Codex: child thread id → its row's tool call id
	rows     map[string]string  // Codex: a row's tool call id → whose row it is (session.reserve)
	statuses map[string]string  // Codex: a child's furthest status, by thread id (or row)
	used     uint64
	maxCalls int
	// current is each row's frame as its frames so far make it (Current),
	// by the row's tool call id.
	current map[string]core.Frame
	// kept is what the session holds besides its calls (its pending
	// cursor/task metadata, its correlations, its current frames), toward
	// the byte bound.
	kept int
}

// call is one tool call, as its notifications have shown it so far.
type call struct {
	id       Identity
	provider provider // nil until recognised
	title    string
	name     string // ACP's programmatic tool name (the tool-call name draft), when the agent sends it
	status   string
	input    jsonMap
	output   any
	meta     jsonMap
	cursor   jsonMap  // merged cursor/task params
	threads  []string // Codex: the child threads it names, in order
	size     int      // the JSON its updates arrived in, while it keeps them
	// Codex reads each notification on its own (a spawn, an activity, a
	// result), not the call's merged view: the latest update's _meta and
	// rawInput (nil when it had none).
	lastMeta, lastInput jsonMap
}

// update is one tool_call or tool_call_update, decoded.
type update struct {
	toolCallID string
	title      *string
	name       *string
	status     *string
	// sessions are the sessions the call's content references (the
	// subagent draft's {"type": "session", "sessionId": …}).
	sessions []string
	input    any
	output   any
	meta     jsonMap
	size     int // the heap its decoded JSON holds (footprint)
}

// ErrNotParams is returned for raw params that are not a JSON object.
var ErrNotParams = errors.New("acp: params are not a JSON object")

// UpdateJSON takes the raw params of one session/update notification
// ({"sessionId":…,"update":{…}}) and returns the frames it implies.
func (t *Tracker) UpdateJSON(id Identity, params []byte) ([]core.Frame, error) {
	p, err := decodeObject(params)
	if err != nil {
		return nil, err
	}
	return t.updateParams(id, p, max(len(params), footprint(p))), nil
}

// updateParams is UpdateJSON on decoded params, which arrived in size
// bytes of JSON.
func (t *Tracker) updateParams(id Identity, p jsonMap, size int) []core.Frame {
	upd := p.object("update")
	kind := upd.str("sessionUpdate")
	if nativeKinds[kind] {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.replaying[p.str("sessionId")] {
			return nil
		}
		return t.nativeUpdate(id, p.str("sessionId"), upd)
	}
	if kind != "tool_call" && kind != "tool_call_update" {
		return nil
	}
	u := update{toolCallID: upd.str("toolCallId"), title: upd.strPtr("title"), name: upd.strPtr("name"),
		status: upd.strPtr("status"), input: upd["rawInput"], output: upd["rawOutput"], meta: upd.object("_meta"),
		size: size}
	if content, ok := upd["content"].([]any); ok {
		for _, item := range content {
			if m, ok := item.(map[string]any); ok && m["type"] == "session" {
				if ref, ok := m["sessionId"].(string); ok && ref != "" {
					u.sessions = append(u.sessions, ref)
				}
			}
		}
	}
	return t.apply(id, p.str("sessionId"), u)
}

// CursorTask takes the raw params of Cursor's cursor/task request, its
// metadata for a task tool call (toolCallId, agentId, description, model),
// and merges it into that tool call whether the call has been seen yet or
// not. It returns the frames that implies (none until the call is seen).
func (t *Tracker) CursorTask(id Identity, params []byte) ([]core.Frame, error) {
	p, err := decodeObject(params)
	if err != nil {
		return nil, err
	}
	return t.cursorParams(p, max(len(params), footprint(p))), nil
}

// cursorParams is CursorTask on decoded params, which arrived in size
// bytes of JSON.
func (t *Tracker) cursorParams(p jsonMap, size int) []core.Frame {
	tool := p.str("toolCallId")
	if tool == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var s *session
	if sess := p.str("sessionId"); sess != "" {
		if t.replaying[sess] {
			return nil
		}
		s = t.session(sess)
	} else if s = t.sessionOfCall(tool); s == nil {
		// Cursor's params name no session: they wait for their tool call
		// in whichever session it comes.
		prev, held := t.cursor[tool]
		if !held {
			for len(t.cursor) >= t.maxCalls {
				t.dropOldestCursor() // metadata for calls that never came
			}
			t.cursorOrder = append(compact(t.cursorOrder, t.cursor), tool)
		}
		t.cursor[tool] = pending{mergeMaps(prev.meta, p), prev.size + size}
		t.bytes += size
		t.shrink()
		return nil
	}
	c := s.calls[tool]
	if c == nil {
		if _, held := s.cursor[tool]; !held && len(s.cursor) >= t.maxCalls {
			t.bytes -= s.clearCursor() // metadata for calls that never came
		}
		prev, held := s.cursor[tool]
		if !held {
			s.waiting = append(compact(s.waiting, s.cursor), tool)
		}
		s.cursor[tool] = pending{mergeMaps(prev.meta, p), prev.size + size}
		s.kept += size
		t.bytes += size
		t.shrink()
		return nil
	}
	c.cursor = mergeMaps(c.cursor, p)
	c.size += size
	t.bytes += size
	frames := t.frames(s, tool, c)
	t.shrink()
	return frames
}

// sessionOfCall is the session that holds the tool call, the most
// recently used first; nil when none does. t.mu is held.
func (t *Tracker) sessionOfCall(tool string) *session {
	var found *session
	for _, s := range t.sessions {
		if s.calls[tool] != nil && (found == nil || s.used > found.used) {
			found = s
		}
	}
	return found
}

// EndTurn releases what a finished turn leaves behind in an ACP session:
// every tool call that is settled or not a subagent. Open subagent calls
// stay (their results may come later), within the cap.
func (t *Tracker) EndTurn(acpSessionID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sessions[acpSessionID]
	if s == nil {
		return
	}
	kept := s.order[:0]
	for _, id := range s.order {
		c := s.calls[id]
		if c.provider == nil || canon.IsTerminalToolStatus(c.status) {
			t.bytes -= c.size
			delete(s.calls, id)
			continue
		}
		kept = append(kept, id)
	}
	s.order = kept
	t.bytes -= s.clearCursor()
}

// Lost reports that the host lost its connection to the agent behind an
// ACP session: it returns, for each subagent of the session whose agent
// may still be running as far as the session's traffic showed (a
// background launch, a tool call not over, a native child not idle), a
// frame whose agent status is unknown (storekit.AgentStatusUnknown),
// ordered by tool call id. Recorded, they mark the rows without inventing
// an outcome: unknown is no end, never replaces the status of an agent
// that has ended (by any source), and a later real state replaces it
// (docs/CONTRACT.md §3.4).
func (t *Tracker) Lost(acpSessionID string) []core.Frame {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	unknown := func(f core.Frame) core.Frame {
		return core.Frame{TaskSessionID: f.TaskSessionID, TaskID: f.TaskID, TurnID: f.TurnID,
			ExecutionID: f.ExecutionID, ToolCallID: f.ToolCallID, ObservedAt: now,
			Payload: &core.Payload{Status: storekit.AgentStatusUnknown}}
	}
	var out []core.Frame
	if s := t.sessions[acpSessionID]; s != nil {
		for _, f := range s.current {
			if f.Settled || f.Payload.IsAsync || !canon.IsTerminalToolStatus(f.ToolStatus) {
				out = append(out, unknown(f))
			}
		}
	}
	for session, c := range t.natives {
		if c.parent == acpSessionID && c.key != "" && (!c.snapshots || c.ended.IsZero()) &&
			nativeTerminal[c.state] == "" {
			for _, f := range t.nativeRow(session, c) {
				out = append(out, unknown(f))
			}
		}
	}
	slices.SortFunc(out, func(a, b core.Frame) int { return strings.Compare(a.ToolCallID, b.ToolCallID) })
	return out
}

// EndSession releases everything kept for an ACP session.
func (t *Tracker) EndSession(acpSessionID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(acpSessionID)
}

// forget drops an ACP session's state. t.mu is held.
func (t *Tracker) forget(acpSessionID string) {
	if s := t.sessions[acpSessionID]; s != nil {
		for _, c := range s.calls {
			t.bytes -= c.size
		}
		t.bytes -= s.kept
		delete(t.sessions, acpSessionID)
	}
}

// Bytes reports the JSON the kept calls hold (WithMaxBytes bounds it).
func (t *Tracker) Bytes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bytes
}

// Calls reports how many tool calls are kept, over every session (to
// check the bounds).
func (t *Tracker) Calls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.sessions {
		n += len(s.calls)
	}
	return n
}

// Replay marks an ACP session's traffic as a replay (on) or as live again
// (off). While it is on, the tracker records nothing from the session and
// keeps nothing of it: an agent answering session/load replays the
// session's history as session/update notifications, whose tool calls
// recorded under the new execution would be second rows of invocations
// already on record (the backfill recovers history; the record is the
// live traffic). A host calls it around its session/load request; Line
// does so itself when the traffic holds the request and its response.
func (t *Tracker) Replay(acpSessionID string, on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.replay(acpSessionID, on)
}

// replay is Replay with t.mu held.
func (t *Tracker) replay(acpSessionID string, on bool) {
	if on {
		t.replaying[acpSessionID] = true
		t.forget(acpSessionID) // what the replay repeats is not live state
		return
	}
	delete(t.replaying, acpSessionID)
}

// rpc follows the session/load requests of a line of JSON-RPC traffic: a
// request starts its session's replay, and the response with its id (a
// result or an error) ends it. Past maxSessions unanswered requests the
// oldest is taken as answered (its session live again: a lost response
// must not silence a session for ever).
func (t *Tracker) rpc(m jsonMap) {
	id, ok := m["id"]
	if !ok || id == nil {
		return
	}
	key := fmt.Sprintf("%T:%v", id, id)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch method := m.str("method"); {
	case method == "session/load":
		sess := m.object("params").str("sessionId")
		if sess == "" {
			return
		}
		if len(t.loads) >= t.maxSessions {
			t.replay(t.loads[0].session, false)
			t.loads = t.loads[1:]
		}
		t.loads = append(t.loads, load{key, sess})
		t.replay(sess, true)
	case method == "" && (m["result"] != nil || m["error"] != nil):
		for i, l := range t.loads {
			if l.rpcID == key {
				t.replay(l.session, false)
				t.loads = append(t.loads[:i], t.loads[i+1:]...)
				return
			}
		}
	}
}

// session returns an ACP session's state, creating it (and evicting the
// least recently used one past the cap). t.mu is held.
func (t *Tracker) session(id string) *session {
	t.tick++
	s := t.sessions[id]
	if s == nil {
		if len(t.sessions) >= t.maxSessions {
			var oldest string
			for k, v := range t.sessions {
				if oldest == "" || v.used < t.sessions[oldest].used {
					oldest = k
				}
			}
			t.forget(oldest)
		}
		s = &session{
			calls:    map[string]*call{},
			cursor:   map[string]pending{},
			children: map[string]string{},
			rows:     map[string]string{},
			current:  map[string]core.Frame{},
			statuses: map[string]string{},
			maxCalls: t.maxCalls,
		}
		t.sessions[id] = s
	}
	s.used = t.tick
	return s
}

// apply merges one update into its tool call and returns the frames the
// call now implies.
func (t *Tracker) apply(id Identity, acpSession string, u update) []core.Frame {
	if u.toolCallID == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.replaying[acpSession] {
		return nil
	}
	if ch := t.natives[acpSession]; ch != nil {
		return t.nativeChildCall(acpSession, ch, u)
	}
	refs := t.nativeReferences(u)
	s := t.session(acpSession)
	c := s.calls[u.toolCallID]
	if c == nil {
		if len(s.order) >= t.maxCalls {
			t.bytes -= s.calls[s.order[0]].size
			delete(s.calls, s.order[0])
			s.order = s.order[1:]
		}
		c = &call{id: id}
		s.calls[u.toolCallID] = c
		s.order = append(s.order, u.toolCallID)
		// Waiting metadata joins its call, and its bytes the call's.
		if p, ok := s.cursor[u.toolCallID]; ok {
			c.cursor, c.size = p.meta, p.size
			s.kept -= p.size
			delete(s.cursor, u.toolCallID)
		} else if p, ok := t.cursor[u.toolCallID]; ok {
			c.cursor, c.size = p.meta, p.size
			delete(t.cursor, u.toolCallID)
		}
	}
	if u.title != nil {
		c.title = *u.title
	}
	if u.name != nil {
		c.name = *u.name
	}
	if u.status != nil {
		c.status = *u.status
	}
	in := (jsonMap{"in": u.input}).object("in")
	if in != nil {
		c.input = in // ACP: an update replaces the raw input
	}
	c.lastMeta, c.lastInput = u.meta, in
	if u.output != nil {
		c.output = u.output
	}
	// _meta namespaces are merged key by key: a provider sends its tool's
	// name once and its result later.
	if c.meta == nil && len(u.meta) > 0 {
		c.meta = jsonMap{}
	}
	for k, v := range u.meta {
		if sub, ok := v.(map[string]any); ok {
			c.meta[k] = mergeMaps(c.meta.object(k), sub)
		} else {
			c.meta[k] = v
		}
	}
	c.size += u.size
	t.bytes += u.size
	frames := t.frames(s, u.toolCallID, c)
	if c.provider == nil && canon.IsTerminalToolStatus(c.status) {
		// A finished call that is no subagent keeps nothing of its
		// payload: a turn of large file reads must not be held to its end.
		t.bytes -= c.size
		c.size, c.input, c.output, c.meta, c.cursor, c.lastMeta, c.lastInput = 0, nil, nil, nil, nil, nil, nil
	}
	t.shrink()
	return append(refs, frames...)
}

// shrink forgets what the tracker keeps, oldest first, until it is within
// its bound: cursor/task metadata that named no session, then, in the
// least recently used session, its waiting metadata, its oldest calls,
// and last the session itself (its correlations). t.mu is held.
func (t *Tracker) shrink() {
	for t.bytes > t.maxBytes && len(t.cursor) > 0 {
		t.dropOldestCursor()
	}
	for t.bytes > t.maxBytes {
		var lru string
		var oldest *session
		for id, s := range t.sessions {
			if oldest == nil || s.used < oldest.used {
				lru, oldest = id, s
			}
		}
		if oldest == nil {
			if !t.dropOldestNative() { // what is left: the native child sessions
				return
			}
			continue
		}
		if n := oldest.dropOldestCursor(); n > 0 {
			t.bytes -= n
			continue
		}
		if len(oldest.order) == 0 {
			t.forget(lru)
			continue
		}
		t.bytes -= oldest.calls[oldest.order[0]].size
		delete(oldest.calls, oldest.order[0])
		if oldest.order = oldest.order[1:]; len(oldest.order) == 0 {
			t.forget(lru)
		}
	}
}

// dropOldestCursor forgets the oldest cursor/task metadata that named no
// session. t.mu is held.
func (t *Tracker) dropOldestCursor() {
	for len(t.cursorOrder) > 0 {
		tool := t.cursorOrder[0]
		t.cursorOrder = t.cursorOrder[1:]
		if p, ok := t.cursor[tool]; ok {
			t.bytes -= p.size
			delete(t.cursor, tool)
			return
		}
	}
}

// compact drops from order the ids held no longer (their calls came), once
// they outnumber the held ones: the order stays as small as what it
// orders.
func compact(order []string, held map[string]pending) []string {
	if len(order) <= 2*len(held)+16 {
		return order
	}
	kept := order[:0]
	for _, id := range order {
		if _, ok := held[id]; ok {
			kept = append(kept, id)
		}
	}
	return kept
}

// clearCursor forgets a session's waiting cursor/task metadata and
// returns the bytes it held.
func (s *session) clearCursor() int {
	n := 0
	for _, p := range s.cursor {
		n += p.size
	}
	clear(s.cursor)
	s.waiting = s.waiting[:0]
	s.kept -= n
	return n
}

// dropOldestCursor forgets the session's oldest waiting cursor/task
// metadata and returns the bytes it held (0: none was waiting).
func (s *session) dropOldestCursor() int {
	for len(s.waiting) > 0 {
		tool := s.waiting[0]
		s.waiting = s.waiting[1:]
		if p, ok := s.cursor[tool]; ok {
			delete(s.cursor, tool)
			s.kept -= p.size
			return p.size
		}
	}
	return 0
}

// frames recognises the call if it is not yet, and returns its frame: the
// whole call as known so far (the merge rules make repeating a value
// harmless). t.mu is held.
func (t *Tracker) frames(s *session, tool string, c *call) []core.Frame {
	if c.provider == nil {
		c.provider = recognise(c)
		if c.provider == nil {
			return nil
		}
	}
	f := core.Frame{
		TaskSessionID: c.id.TaskSessionID,
		TaskID:        c.id.TaskID,
		TurnID:        c.id.TurnID,
		ExecutionID:   c.id.ExecutionID,
		ToolCallID:    tool,
		ToolStatus:    c.status,
		ObservedAt:    t.now(),
		Payload:       &core.Payload{},
	}
	kept := s.kept
	out := c.provider.rows(s, tool, c, f)
	t.bytes += s.kept - kept // the correlations the call added
	for i := range out {
		if p := out[i].Payload; p.Status == "async_launched" || p.Status == "remote_launched" || p.IsAsync {
			// An async launch returns once the subagent is started: the
			// tool call is over, whatever status ACP reported with it (§7).
			p.IsAsync, out[i].Settled = true, true
		}
		if t.content {
			t.fillContent(c, &out[i])
		}
	}
	for _, f := range out {
		t.bytes += s.remember(f)
	}
	return out
}

// jsonMap is a decoded JSON object.
type jsonMap map[string]any

func decodeObject(b []byte) (jsonMap, error) {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotParams, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, ErrNotParams
	}
	return m, nil
}

func (m jsonMap) object(k string) jsonMap {
	switch v := m[k].(type) {
	case map[string]any:
		return v
	case jsonMap:
		return v
	}
	return nil
}

func (m jsonMap) str(k string) string {
	s, _ := m[k].(string)
	return s
}

func (m jsonMap) strPtr(k string) *string {
	if s, ok := m[k].(string); ok {
		return &s
	}
	return nil
}

// first is the first of keys holding a non-empty string.
func (m jsonMap) first(keys ...string) string {
	for _, k := range keys {
		if s := m.str(k); s != "" {
			return s
		}
	}
	return ""
}

// integer is the first of keys holding an integral JSON number (or a
// numeric string) within 64 bits.
func (m jsonMap) integer(keys ...string) (int64, bool) {
	for _, k := range keys {
		if n, ok := toInt(m[k]); ok {
			return n, true
		}
	}
	return 0, false
}

// flag is the first of keys holding true.
func (m jsonMap) flag(keys ...string) bool {
	for _, k := range keys {
		if b, ok := m[k].(bool); ok && b {
			return true
		}
	}
	return false
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
		if f, err := x.Float64(); err == nil && f == float64(int64(f)) && f < 9.2e18 && f > -9.2e18 {
			return int64(f), true
		}
	case float64:
		if x == float64(int64(x)) && x < 9.2e18 && x > -9.2e18 {
			return int64(x), true
		}
	}
	return 0, false
}

// mergeMaps is a with b's keys over it (a new map; neither is changed).
func mergeMaps(a, b jsonMap) jsonMap {
	out := make(jsonMap, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// Line takes one line of ACP traffic as JSON: a JSON-RPC message (a
// session/update notification, or Cursor's cursor/task request; a
// session/load request and its response bound a replay, as Replay; any
// other message is ignored) or the bare params of a session/update
// ({"sessionId":…,"update":{…}}). It returns the frames the line implies,
// or ErrNotParams for a line that is not a JSON object. JSON-RPC ids are
// the sender's: traffic that interleaves the agent's own requests may end
// a replay at the response to one with the same id, so a host that knows
// when it loads a session calls Replay instead.
func (t *Tracker) Line(id Identity, line []byte) ([]core.Frame, error) {
	m, err := decodeObject(line)
	if err != nil {
		return nil, err
	}
	t.rpc(m)
	params := m.object("params")
	switch method := m.str("method"); {
	case (method == "session/update" || method == "cursor/task") && params == nil:
		return nil, ErrNotParams
	case method == "session/update":
		return t.updateParams(id, params, max(len(line), footprint(params))), nil
	case method == "cursor/task":
		return t.cursorParams(params, max(len(line), footprint(params))), nil
	case method != "" || m["update"] == nil:
		return nil, nil
	}
	return t.updateParams(id, m, max(len(line), footprint(m))), nil
}
