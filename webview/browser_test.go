package webview_test

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/webview"
)

// The screenshots the README and docs/webview.md show are written with
//
//	go test ./webview -run TestInBrowser -screenshots ../docs
var screenshots = flag.String("screenshots", "",
	"write overview.png and session.png of the demo data into this directory")

// chromium finds a headless-capable Chromium: $SUBAGENTCTX_TEST_CHROMIUM
// (scripts/test installs Debian's and sets it), else chromium on the PATH.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the browser tests run a real Chromium")
	}
	if p := os.Getenv("SUBAGENTCTX_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("browser test skipped: no Chromium (scripts/test installs Debian's chromium with apt-get when it can)")
	return ""
}

// headless runs Chromium on url with the flags a closed, root-run CI
// machine needs, plus extra, and returns its stdout.
func headless(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir()}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, errOut.String())
	}
	return out.Bytes()
}

// TestInBrowser loads the pages in a real headless Chromium and checks the
// document it built: the timeline's bars and turns are there, the hostile
// texts are text nodes (no element of theirs, no handler run: a handler
// would have rewritten the title), and the stylesheet was allowed while
// scripts were not.
func TestInBrowser(t *testing.T) {
	bin := chromium(t)
	s := memory.New()
	frames := kandevtest.Stream("demo-", t0)
	testenv.Record(t, s, frames)
	testenv.Record(t, s, hostileFrames("evil"))
	// Mounted as a host mounts it: below a prefix of its own server.
	const prefix = "/admin/subagents"
	mux := http.NewServeMux()
	mux.Handle(prefix+"/", webview.New(s, webview.WithPrefix(prefix), webview.WithClock(clock)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	page := func(id string) string { return srv.URL + prefix + "/session?id=" + url.QueryEscape(id) }

	dom := string(headless(t, bin, page("demo-sess"), "--dump-dom", "--virtual-time-budget=2000"))
	rows, _ := s.ListBySession(context.Background(), "demo-sess", pageAll)
	if n := strings.Count(dom, `<rect class="bar"`); n != len(rows) {
		t.Errorf("the browser's document has %d bars for %d rows", n, len(rows))
	}
	for _, want := range []string{
		"<title>demo-sess · subagentctx</title>", "Turn <span class=\"id\">demo-turn-3</span>", "not reported", "⟳",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the browser's document lacks %q", want)
		}
	}

	// Hostile texts: a handler that ran would have set the title to pwned.
	for _, h := range []string{
		`"><img src=x onerror="document.title='pwned'">`, `<script>document.title='pwned'</script>`,
	} {
		sess := "pwn-" + regexp.MustCompile(`\W`).ReplaceAllString(h, "")[:8]
		testenv.Record(t, s, hostileTitle(sess, h))
		dom := string(headless(t, bin, page(sess), "--dump-dom", "--virtual-time-budget=2000"))
		if strings.Contains(dom, "pwned</title>") || !strings.Contains(dom, "<title>"+sess) {
			t.Errorf("%q ran in the browser: the title changed", h)
		}
		for _, tag := range tags.FindAllString(dom, -1) {
			if l := strings.ToLower(tag); strings.HasPrefix(l, "<img") || strings.HasPrefix(l, "<script") ||
				handlerAttr.MatchString(tag) {
				t.Errorf("%q became markup in the browser: %s", h, tag)
			}
		}
	}
	// The overview shows every stored text too (the hostile types, models
	// and statuses above): a handler that ran would have set its title.
	dom = string(headless(t, bin, srv.URL+prefix+"/?range=all", "--dump-dom", "--virtual-time-budget=2000"))
	if !strings.Contains(dom, `href="`+prefix+`/session?id=demo-sess"`) ||
		!strings.Contains(dom, "<title>overview · subagentctx</title>") {
		t.Error("the overview in the browser lacks its title or the session's link")
	}
	if !strings.Contains(dom, "By subagent type") || !strings.Contains(dom, "&lt;script&gt;") {
		t.Error("the overview in the browser lacks its breakdowns or the hostile texts as text")
	}
	for _, tag := range tags.FindAllString(dom, -1) {
		if l := strings.ToLower(tag); strings.HasPrefix(l, "<img") || strings.HasPrefix(l, "<script") ||
			handlerAttr.MatchString(tag) {
			t.Errorf("a stored text became markup in the overview: %s", tag)
		}
	}

	if *screenshots != "" {
		shoot(t, bin, *screenshots)
	}
}

// shoot writes the screenshots (README, docs/webview.md) of the demo data alone: the
// overview and the demo session's page.
func shoot(t *testing.T, bin, dir string) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := memory.New()
	testenv.Record(t, s, kandevtest.Stream("demo-", t0))
	srv := httptest.NewServer(webview.New(s, webview.WithClock(clock)))
	defer srv.Close()
	for name, path := range map[string]string{"overview.png": "/", "session.png": "/session?id=demo-sess"} {
		out := filepath.Join(dir, name)
		headless(t, bin, srv.URL+path, "--screenshot="+out, "--window-size=1280,1100")
		if st, err := os.Stat(out); err != nil || st.Size() == 0 {
			t.Fatalf("no screenshot at %s: %v", out, err)
		}
	}
}
