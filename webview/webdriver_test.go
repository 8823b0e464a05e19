package webview_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/webview"
)

// chromedriver finds Chromium's WebDriver: $SUBAGENTCTX_TEST_CHROMEDRIVER
// (scripts/test installs Debian's chromium-driver and sets it), else
// chromedriver on the PATH.
func chromedriver(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SUBAGENTCTX_TEST_CHROMEDRIVER"); p != "" {
		return p
	}
	if p, err := exec.LookPath("chromedriver"); err == nil {
		return p
	}
	t.Skip("form test skipped: no chromedriver (scripts/test installs Debian's chromium-driver when it can)")
	return ""
}

// webDriver is a W3C WebDriver session on a headless Chromium: the few
// commands a person's use of a form takes.
type webDriver struct {
	t       *testing.T
	base    string // the driver's URL, with the session
	element string // the key W3C names an element reference by
}

func (d *webDriver) call(method, path string, body any) any {
	d.t.Helper()
	var in bytes.Buffer
	if body != nil {
		json.NewEncoder(&in).Encode(body)
	}
	req, err := http.NewRequest(method, d.base+path, &in)
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Value any `json:"value"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 {
		d.t.Fatalf("webdriver %s %s: %d %v %+v", method, path, res.StatusCode, err, out.Value)
	}
	return out.Value
}

// text is a command's answer that is text (the page's address, its
// source).
func (d *webDriver) text(path string) string {
	d.t.Helper()
	s, _ := d.call("GET", path, nil).(string)
	return s
}

// find is the element a CSS selector names.
func (d *webDriver) find(css string) string {
	d.t.Helper()
	v, _ := d.call("POST", "/element", map[string]string{"using": "css selector", "value": css}).(map[string]any)
	return fmt.Sprint(v[d.element])
}

// startDriver runs chromedriver on a free loopback port and opens a
// session on a headless Chromium; both end with the test.
func startDriver(t *testing.T) *webDriver {
	bin, driver := chromium(t), chromedriver(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(driver, fmt.Sprintf("--port=%d", port), "--allowed-ips=127.0.0.1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	d := &webDriver{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port),
		element: "element-6066-11e4-a52e-4f735466cecf"}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get(d.base + "/status"); err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("chromedriver did not start")
		}
	}
	v, _ := d.call("POST", "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"goog:chromeOptions": map[string]any{"binary": bin, "args": []string{"--headless", "--no-sandbox",
			"--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--disable-quic", "--user-data-dir=" + t.TempDir()}},
	}}}).(map[string]any)
	d.base += "/session/" + fmt.Sprint(v["sessionId"])
	t.Cleanup(func() { d.call("DELETE", "", nil) })
	return d
}

// TestFormSubmitsInBrowser: in a real Chromium, under the view's own
// Content-Security-Policy, a person types into the overview's filter and
// submits it: the page that loads is the filtered one (its address holds
// the prefix, its sessions start with it, the others are gone).
func TestFormSubmitsInBrowser(t *testing.T) {
	s := memory.New()
	testenv.Record(t, s, kandevtest.Stream("demo-", t0))
	testenv.Record(t, s, kandevtest.Stream("other-", t0))
	const prefix = "/admin/subagents"
	mux := http.NewServeMux()
	mux.Handle(prefix+"/", webview.New(s, webview.WithPrefix(prefix), webview.WithClock(clock)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	d := startDriver(t)
	d.call("POST", "/url", map[string]string{"url": srv.URL + prefix + "/?range=all"})
	if src := d.text("/source"); !strings.Contains(src, "other-sess") {
		t.Fatalf("the unfiltered overview lacks other-sess:\n%.2000s", src)
	}
	d.call("POST", "/element/"+d.find(`form.filter input[name="q"]`)+"/value", map[string]string{"text": "demo-"})
	d.call("POST", "/element/"+d.find(`form.filter button`)+"/click", map[string]any{})
	var url, src string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if url = d.text("/url"); strings.Contains(url, "q=demo-") {
			src = d.text("/source")
			break
		}
	}
	if !strings.Contains(url, prefix+"/?") || !strings.Contains(url, "q=demo-") || !strings.Contains(url, "range=all") {
		t.Fatalf("the form did not submit under the view's CSP: at %s", url)
	}
	if !strings.Contains(src, `href="`+prefix+`/session?id=demo-sess"`) || strings.Contains(src, "other-sess") ||
		!strings.Contains(src, `value="demo-"`) {
		t.Errorf("the submitted page is not the filtered overview:\n%.3000s", src)
	}
}

// TestRunningSessionMoves: in a real Chromium, the page of a session with
// a subagent in flight follows it without a script (it reloads itself):
// the subagent's settling shows by itself; once every subagent has
// settled the page stops — a row recorded afterwards does not appear
// until someone reloads.
func TestRunningSessionMoves(t *testing.T) {
	s := memory.New()
	frame := func(tool, status string, at time.Duration) core.Frame {
		return core.Frame{TaskSessionID: "live-sess", TaskID: "t", TurnID: "turn-1", ExecutionID: "e",
			ToolCallID: tool, ToolStatus: status, ObservedAt: t0.Add(at), Payload: &core.Payload{SubagentType: "explorer"}}
	}
	testenv.Record(t, s, []core.Frame{frame("toolu_run", "in_progress", 0)})
	srv := httptest.NewServer(webview.New(s, webview.WithClock(clock), webview.WithRefresh(time.Second),
		webview.WithStaleAfter(24*time.Hour)))
	defer srv.Close()
	d := startDriver(t)
	d.call("POST", "/url", map[string]string{"url": srv.URL + "/session?id=live-sess"})
	if src := d.text("/source"); !strings.Contains(src, `http-equiv="refresh"`) {
		t.Fatalf("a session in flight does not follow itself:\n%.2000s", src)
	}
	testenv.Record(t, s, []core.Frame{frame("toolu_run", "completed", time.Second)})
	settled := false
	for deadline := time.Now().Add(10 * time.Second); !settled && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		settled = !strings.Contains(d.text("/source"), `http-equiv="refresh"`)
	}
	if !settled {
		t.Fatal("the page did not follow the subagent's settling")
	}
	testenv.Record(t, s, []core.Frame{frame("toolu_late", "completed", 2*time.Second)})
	time.Sleep(2500 * time.Millisecond) // over two refresh periods
	if strings.Contains(d.text("/source"), "toolu_late") {
		t.Error("a settled session's page reloaded itself")
	}
}

// TestChartsReadableInBrowser: in a real Chromium at a laptop's width, the
// overview's first chart renders at the plot's full size (at least 700 by
// 150 px, where it was a 200 px thumbnail), its time axis labelled in the
// window's unit (hours for a day), and its screenshot shows the bars: the
// plot holds pixels of the bars' colour.
func TestChartsReadableInBrowser(t *testing.T) {
	s := memory.New()
	testenv.Record(t, s, kandevtest.Stream("demo-", t0))
	srv := httptest.NewServer(webview.New(s, webview.WithClock(clock)))
	defer srv.Close()
	d := startDriver(t)
	d.call("POST", "/window/rect", map[string]int{"width": 1280, "height": 1100})
	d.call("POST", "/url", map[string]string{"url": srv.URL + "/?range=24h"})
	svg := d.find("figure.chart svg")
	rect, _ := d.call("GET", "/element/"+svg+"/rect", nil).(map[string]any)
	if w, h := rect["width"].(float64), rect["height"].(float64); w < 700 || h < 150 {
		t.Errorf("the chart renders %vx%v px, want at least 700x150", w, h)
	}
	labels := d.text("/element/" + d.find("figure.chart") + "/text")
	for _, want := range []string{"Subagents per hour", "08:00", "Nov 30"} {
		if !strings.Contains(labels, want) {
			t.Errorf("the chart's text lacks %q: %q", want, labels)
		}
	}
	shot, _ := d.call("GET", "/element/"+svg+"/screenshot", nil).(string)
	raw, err := base64.StdEncoding.DecodeString(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	bars := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); b > r+0x2000 && b > g { // the bars' blue
				bars++
			}
		}
	}
	if bars < 100 {
		t.Errorf("the chart's screenshot (%v) shows %d pixels of bars", img.Bounds().Size(), bars)
	}
}
