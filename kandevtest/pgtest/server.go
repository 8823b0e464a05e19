package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// Server is a PostgreSQL server of a test's own, which the test may stop and
// start (the shared server of scripts/test must keep running for the other
// packages' tests).
type Server struct {
	bin, data, sockets string
	Port               int
	asPostgres         bool
}

// StartServer initialises and starts a private server; it is stopped at
// cleanup. It needs the binaries scripts/test uses (SUBAGENTCTX_TEST_PG_BIN)
// and skips without them (fails under CI=true).
func StartServer(t testing.TB) *Server {
	t.Helper()
	AdminDSN(t) // skip or fail exactly like the other PostgreSQL tests
	bin := os.Getenv("SUBAGENTCTX_TEST_PG_BIN")
	if bin == "" {
		t.Fatal("SUBAGENTCTX_TEST_PG_BIN is not set: scripts/test exports it with the server's binaries")
	}
	s := newServer(t, bin)
	if out, err := s.run("initdb", "-D", s.data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// StartStandby starts a hot standby of s — a streaming replica, which
// answers reads and refuses writes, a little behind s — stopped at
// cleanup.
func (s *Server) StartStandby(t testing.TB) *Server {
	t.Helper()
	r := newServer(t, s.bin)
	if out, err := r.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "postgres",
		"-D", r.data, "-R", "-X", "stream", "--no-sync"); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// newServer is a server's directory (owned by postgres when run as root)
// and a free port; it is stopped and removed at cleanup.
func newServer(t testing.TB, bin string) *Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "subagentctx-pgserver-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{bin: bin, data: filepath.Join(dir, "data"), sockets: dir, asPostgres: os.Geteuid() == 0}
	t.Cleanup(func() {
		s.run("pg_ctl", "-D", s.data, "-m", "immediate", "stop")
		os.RemoveAll(dir)
	})
	if s.asPostgres {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	return s
}

// DSN is the server's postgres database, with a password (the server trusts
// loopback and ignores it) so tests can check that it never leaks.
func (s *Server) DSN(password string) string {
	return fmt.Sprintf(
		"postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2",
		password,
		s.Port,
	)
}

// Start starts the server and waits until it accepts connections.
func (s *Server) Start() error {
	out, err := s.run("pg_ctl", "-D", s.data, "-l", filepath.Join(s.sockets, "server.log"), "-w", "-t", "60", "start",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.Port, s.sockets))
	if err != nil {
		return fmt.Errorf("pg_ctl start: %v\n%s", err, out)
	}
	return nil
}

// Stop stops the server (fast shutdown: connections are cut).
func (s *Server) Stop() error {
	out, err := s.run("pg_ctl", "-D", s.data, "-m", "fast", "-w", "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.asPostgres {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	return cmd.CombinedOutput()
}
