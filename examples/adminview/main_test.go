package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountedBehindTheHostsAuth: the view answers under the host's prefix
// only to whoever the host's middleware lets by; its stylesheet and its
// session links resolve under the prefix.
func TestMountedBehindTheHostsAuth(t *testing.T) {
	h, err := adminServer(context.Background(), filepath.Join(t.TempDir(), "host.db"), "admin", "pw")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string, auth bool) (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if auth {
			req.SetBasicAuth("admin", "pw")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := get("/admin/subagents/", false); code != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", code)
	}
	code, page := get("/admin/subagents/", true)
	if code != 200 || !strings.Contains(page, `href="/admin/subagents/style.css"`) ||
		!strings.Contains(page, `href="/admin/subagents/session?id=demo-sess"`) {
		t.Fatalf("the overview under the prefix: %d\n%s", code, page)
	}
	for _, path := range []string{"/admin/subagents/style.css", "/admin/subagents/session?id=demo-sess"} {
		if code, _ := get(path, true); code != 200 {
			t.Errorf("%s: %d", path, code)
		}
	}
}
