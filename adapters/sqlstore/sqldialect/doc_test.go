package sqldialect_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
)

// TestDialectDocNamesTheOptionalInterfaces: the table in the package's doc
// says, for each optional interface, which dialect implements it — and
// it is so.
func TestDialectDocNamesTheOptionalInterfaces(t *testing.T) {
	implements := map[string]func(d any) bool{
		"PassLocker":        func(d any) bool { _, ok := d.(sqldialect.PassLocker); return ok },
		"PrivilegeChecker":  func(d any) bool { _, ok := d.(sqldialect.PrivilegeChecker); return ok },
		"OnlineIndexer":     func(d any) bool { _, ok := d.(sqldialect.OnlineIndexer); return ok },
		"Placement":         func(d any) bool { _, ok := d.(sqldialect.Placement); return ok },
		"Pipeliner":         func(d any) bool { _, ok := d.(sqldialect.Pipeliner); return ok },
		"Ceiling":           func(d any) bool { _, ok := d.(sqldialect.Ceiling); return ok },
		"BoundedStatements": func(d any) bool { _, ok := d.(sqldialect.BoundedStatements); return ok },
		"DefaultSetter":     func(d any) bool { _, ok := d.(sqldialect.DefaultSetter); return ok },
		"Definer":           func(d any) bool { _, ok := d.(sqldialect.Definer); return ok },
	}
	dialects := []any{sqlite.Dialect{}, postgres.Dialect{}}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "sqldialect.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	p, err := doc.NewFromFiles(fset, []*ast.File{f}, "sqldialect")
	if err != nil {
		t.Fatal(err)
	}
	text := p.Doc
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || implements[fields[0]] == nil {
			continue
		}
		name, marks := fields[0], fields[len(fields)-2:]
		seen[name] = true
		for i, d := range dialects {
			if got, want := implements[name](d), marks[i] == "yes"; got != want {
				t.Errorf("the package's doc says %T implements %s: %v; it does: %v", d, name, want, got)
			}
		}
	}
	for name := range implements {
		if !seen[name] {
			t.Errorf("the package's doc has no line for the optional interface %s", name)
		}
	}
}
