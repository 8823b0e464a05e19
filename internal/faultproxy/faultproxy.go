// Package faultproxy is a TCP proxy for tests that puts a network fault
// between a client and a server: it forwards bytes until told to stall
// (connections stay open, nothing moves either way, as when NAT or a
// firewall loses a connection's state: no reset, no error) or to refuse
// (open connections are reset, new ones are closed at once), and forwards
// again when told to heal.
package faultproxy

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// Mode is what the proxy does with traffic.
type Mode int

const (
	// Pass forwards bytes both ways.
	Pass Mode = iota
	// Stall keeps connections open and moves nothing.
	Stall
	// Refuse resets open connections and closes new ones.
	Refuse
	// Deaf forwards what clients send and drops what the server answers:
	// a statement runs, and its client never hears (an ambiguous commit).
	Deaf
)

// Proxy forwards to one address.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  Mode
	heal  chan struct{} // closed when the mode leaves Stall
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// Start listens on a loopback port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, heal: make(chan struct{}), conns: map[net.Conn]bool{}}
	close(p.heal)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set changes the mode; Refuse resets every open connection.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case m == Stall && p.mode != Stall:
		p.heal = make(chan struct{})
	case m != Stall && p.mode == Stall:
		close(p.heal)
	}
	p.mode = m
	if m == Refuse {
		for c := range p.conns {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, not a clean close
			}
			_ = c.Close()
		}
	}
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Set(Refuse)
	p.Set(Pass) // release the stalled copies
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.mode == Refuse
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.track(c, s)
		p.wg.Add(2)
		go p.copy(s, c, false)
		go p.copy(c, s, true)
	}
}

func (p *Proxy) track(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		p.conns[c] = true
	}
}

// copy forwards from src to dst, holding each chunk while the proxy
// stalls and dropping the server's answers while it is deaf.
func (p *Proxy) copy(dst, src net.Conn, answers bool) {
	defer p.wg.Done()
	defer func() {
		_ = dst.Close()
		_ = src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			heal, deaf := p.heal, p.mode == Deaf && answers
			p.mu.Unlock()
			<-heal // Set leaves Stall, or Close does
			if deaf {
				continue
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF or a closed connection: the other copy ends too
			return
		}
	}
}

// Between starts a proxy to the server of a URL-form DSN for a test,
// closed when the test ends, and returns it with the DSN through it.
func Between(t testing.TB, dsn string) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	u.Host = p.Addr()
	return p, u.String()
}
