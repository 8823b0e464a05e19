package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// nobody is the application's user in these tests: another OS user than
// root, who runs sudo.
const nobody = 65534

// TestPassLockFileAnyUser: the SQLite pass's lock file serves every user
// of the database, as an operator's machine has them — the application
// runs as its own user, an operator runs "sudo subagentctl …". A read
// command run as root makes no lock file; a pass run as root makes it
// owned like the database, readable by all; one made by root as earlier
// builds left it (root's, 0644) does not stop the application's passes; a
// reader able only to read it still waits for a pass holding it; a reader
// that cannot open it at all fails naming it and never prints a "next
// since" it cannot vouch for.
func TestPassLockFileAnyUser(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root: this test switches to another user with setpriv")
		}
		t.Skip("needs root to run commands as another user (CI runs it)")
	}
	root, err := os.MkdirTemp("", "subagentctl-users-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	dir := filepath.Join(root, "d")
	bin := filepath.Join(root, "subagentctl")
	exe, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{os.Chmod(root, 0o755), os.WriteFile(bin, exe, 0o755), os.Mkdir(dir, 0o755)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "host.db")
	db, err := sqlite.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tables := sqlstore.Tables{}.WithDefaults()
	if err := kandevtest.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	if err := kandevtest.InsertSession(ctx, db, tables, "s1", "task-1"); err != nil {
		t.Fatal(err)
	}
	if pool, err := db.DB(); err == nil {
		pool.Close()
	}
	if out, err := exec.Command("chown", "-R", "65534:65534", dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	lock := path + "-subagentctx-pass"
	as := func(uid int, stdin string, args ...string) *exec.Cmd {
		args = append([]string{"--db", "sqlite:" + path}, args...)
		cmd := exec.Command(bin, args...)
		if uid != 0 {
			cmd = exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--",
				bin}, args...)...)
		}
		cmd.Env = append(os.Environ(), "SUBAGENTCTL_DB=")
		cmd.Stdin = strings.NewReader(stdin)
		return cmd
	}
	run := func(uid int, args ...string) result {
		t.Helper()
		cmd := as(uid, "", args...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		r := result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
		if err != nil && r.code < 0 {
			t.Fatalf("%v: %v", args, err)
		}
		return r
	}
	want := func(r result, code int, what string) {
		t.Helper()
		if r.code != code {
			t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, code, r.stdout, r.stderr)
		}
	}

	want(run(0, "migrate"), 0, "sudo migrate")
	fi, err := os.Stat(lock)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != nobody || st.Gid != nobody || fi.Mode().Perm() != 0o644 {
		t.Errorf("root's pass made %s owned %d:%d mode %v, want the database's owner and 0644", lock, st.Uid,
			st.Gid, fi.Mode().Perm())
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	want(run(0, "export"), 0, "export as root")
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("a read command as root left %s (%v)", lock, err)
	}
	want(run(nobody, "migrate"), 0, "the application's pass after sudo migrate")

	// As earlier builds left it: root's, 0644.
	if err := os.Chown(lock, 0, 0); err != nil {
		t.Fatal(err)
	}
	want(run(nobody, "migrate"), 0, "the application's pass beside root's lock file")
	cmd := as(nobody, jsonFrame("s1", "toolu_01", "exec-1", "completed", time.Now().UTC(),
		`{"description":"d","prompt":"","subagent_type":"explorer"}`), "record")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("record as the application: %v\n%s", err, out)
	}

	// A pass holds the lock (this process, as root): the application's
	// export, which can only read the file, waits for it.
	f, err := os.Open(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	export := as(nobody, "", "export")
	var stderr bytes.Buffer
	export.Stdout, export.Stderr = &bytes.Buffer{}, &stderr
	if err := export.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- export.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("export did not wait for the pass holding the lock: %v\n%s", err, stderr.String())
	case <-time.After(500 * time.Millisecond):
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	select {
	case err := <-exited:
		if err != nil || !strings.Contains(stderr.String(), "next since: ") {
			t.Fatalf("export after the pass: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		export.Process.Kill()
		t.Fatal("export still waiting a minute after the pass released its lock")
	}

	// A lock file the application cannot open at all: it cannot tell
	// whether a pass runs, so it says so instead of a next since.
	if err := os.Chmod(lock, 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(nobody, "export")
	if r.code == 0 || !strings.Contains(r.stderr, lock) || strings.Contains(r.stderr, "next since") {
		t.Errorf("export that cannot open the lock file: exit %d\n%s", r.code, r.stderr)
	}
}
