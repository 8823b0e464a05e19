package subagentctx_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHostSurface: a host's packages show, in go doc -short, what a host
// calls and nothing else: each fits one screen (at most 50 lines; the SQL
// store, whose dialect interface lives in adapters/sqlstore/sqldialect, at
// most 33: half of what it showed with it), exports
// no variable a host could change (errors and fx modules aside) and no
// function taking two or more booleans by position; on core and
// core/report every name shown is used by an example or the command line.
// What only a store needs lives in core/storekit, whose doc says so.
func TestHostSurface(t *testing.T) {
	var uses strings.Builder
	for _, root := range []string{"examples", "cmd"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") ||
				root == "cmd" && strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			uses.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	shown := regexp.MustCompile(`^\s*(?:const|var|func|type) (\w+)`)
	mutable := regexp.MustCompile(`^var (\w+)`)
	// a signature's parameters (after the name; a method's receiver skipped)
	params := regexp.MustCompile(`^func (?:\([^)]*\) )?\w+(?:\[[^]]*\])?\(([^)]*)\)`)
	bools := regexp.MustCompile(`\bbool\b`)
	grouped := regexp.MustCompile(`\w+, \w+(?:, \w+)* bool\b`)
	for _, pkg := range []string{"core", "core/report", "adapters/memory", "adapters/sqlstore", "adapters/sqlite",
		"adapters/postgres", "adapters/auto", "migration", "fxmodule", "acp", "webview", "otelbridge", "claude"} {
		out, err := exec.Command("go", "doc", "-short", "./"+pkg).Output()
		if err != nil {
			t.Fatalf("go doc -short ./%s: %v", pkg, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if most := map[bool]int{true: 33, false: 50}[pkg == "adapters/sqlstore"]; len(lines) > most {
			t.Errorf("go doc -short ./%s is %d lines, want at most %d", pkg, len(lines), most)
		}
		qualifier := filepath.Base(pkg) + "."
		for _, line := range lines {
			m := shown.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s: a line of go doc -short names nothing: %q", pkg, line)
				continue
			}
			if v := mutable.FindStringSubmatch(line); v != nil && !strings.HasPrefix(v[1], "Err") &&
				!strings.Contains(line, "fx.Module(") {
				t.Errorf("%s%s is an exported variable a host could change: want a function or a constant",
					qualifier, v[1])
			}
			if p := params.FindStringSubmatch(line); p != nil &&
				(len(bools.FindAllString(p[1], -1)) > 1 || grouped.MatchString(p[1])) {
				t.Errorf("%s%s takes booleans by position: %s", qualifier, m[1], line)
			}
			host := pkg == "core" || pkg == "core/report"
			if host && !regexp.MustCompile(`\b`+regexp.QuoteMeta(qualifier+m[1])+`\b`).MatchString(uses.String()) {
				t.Errorf("%s%s is on the host surface, but no example and no command uses it", qualifier, m[1])
			}
		}
	}
	doc, err := exec.Command("go", "doc", "./core/storekit").Output()
	if err != nil || !strings.Contains(string(doc), "store-author SPI") {
		t.Errorf("go doc ./core/storekit does not say it is the store-author SPI: %v\n%s", err, doc)
	}
	doc, err = exec.Command("go", "doc", "./adapters/sqlstore/sqldialect").Output()
	if err != nil || !strings.Contains(strings.Join(strings.Fields(string(doc)), " "),
		"for authors of a dialect, not for hosts") {
		t.Errorf("go doc ./adapters/sqlstore/sqldialect does not say whom it is for: %v\n%s", err, doc)
	}
}
