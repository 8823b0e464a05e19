package subagentctx_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/subagentctx/subagentctx/core"
)

// TestReadmeSnippetsAreCompiledCode: every Go snippet of the README and
// of the pages under docs/ is preceded by a marker naming the region of
// an example it shows (<!-- snippet: examples/x/main.go#name -->), and is
// that region's code, word for word. The examples are compiled and run by
// their own tests, so a snippet that stops compiling or working fails the
// suite.
func TestReadmeSnippetsAreCompiledCode(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	snippet := regexp.MustCompile("(?s)(<!-- snippet: ([^#]+)#(\\w+) -->\n)?```go\n(.*?)```")
	var blocks [][]string
	for _, page := range append([]string{"README.md"}, pages...) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, snippet.FindAllStringSubmatch(string(text), -1)...)
	}
	if len(blocks) == 0 {
		t.Fatal("the README has no Go snippet")
	}
	for _, b := range blocks {
		file, region, code := b[2], b[3], b[4]
		if file == "" {
			t.Errorf("a Go snippet without a snippet marker:\n%s", code)
			continue
		}
		source, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("snippet %s#%s: %v", file, region, err)
			continue
		}
		want, ok := regionOf(string(source), region)
		if !ok {
			t.Errorf("%s has no region %q (// README: %s … // README: end)", file, region, region)
			continue
		}
		if strings.TrimSpace(code) != strings.TrimSpace(want) {
			t.Errorf(
				"the README's snippet %s#%s differs from the code:\n--- README\n%s\n--- %s\n%s", file, region, code, file, want,
			)
		}
	}
}

// regionOf returns the lines between "// README: name" and the next
// "// README: end", without their common indentation.
func regionOf(source, name string) (string, bool) {
	var lines []string
	in := false
	for _, line := range strings.Split(source, "\n") {
		switch strings.TrimSpace(line) {
		case "// README: " + name:
			in = true
			continue
		case "// README: end":
			if in {
				return dedent(lines), true
			}
		}
		if in {
			lines = append(lines, line)
		}
	}
	return "", false
}

func dedent(lines []string) string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "\t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n")
}

// TestChangelogNamesTheVersion: CHANGELOG.md's first entry is the version
// the module says it is (core.Version, printed by subagentctl version).
func TestChangelogNamesTheVersion(t *testing.T) {
	b, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	first := regexp.MustCompile(`(?m)^## (v\S+)`).FindStringSubmatch(string(b))
	if first == nil || first[1] != core.Version {
		t.Errorf("CHANGELOG.md's first entry %v, core.Version %s", first, core.Version)
	}
}
