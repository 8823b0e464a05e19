// Command lint checks the habits the compiler and staticcheck do not:
//
//   - no line of Go longer than 120 characters (a tab counts one);
//   - the library's errors carry the "subagentctx: " prefix once: only
//     liberr.Errorf and core.OpError add it, so no fmt.Errorf spells it, and
//     errors.New spells it only for a package-level sentinel;
//   - every channel receive in test code is bounded: a case of a select
//     that also waits on a deadline (time.After, a timer's or ticker's C,
//     a context's Done) or has a default, or a call of internal/await,
//     so a test that would hang fails instead.
//
// It runs on the module's files given as arguments (scripts/test passes
// git ls-files '*.go') and prints each finding as file:line: message,
// exiting 1 if there is any.
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

const maxLine = 120

func main() {
	var findings []string
	for _, path := range os.Args[1:] {
		f, err := check(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lint:", err)
			os.Exit(2)
		}
		findings = append(findings, f...)
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(os.Stderr, "lint: %d findings\n", len(findings))
		os.Exit(1)
	}
}

func check(path string) ([]string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := longLines(path, string(src))
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	at := func(n ast.Node, msg string) {
		out = append(out, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), msg))
	}
	prefixes(file, at)
	if isTestCode(path) {
		receives(file, at)
	}
	return out, nil
}

func longLines(path, src string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		if l := utf8.RuneCountInString(sc.Text()); l > maxLine {
			out = append(out, fmt.Sprintf("%s:%d: line of %d characters (at most %d)", path, n, l, maxLine))
		}
	}
	return out
}

// isTestCode is a test file or a package of test helpers.
func isTestCode(path string) bool {
	if strings.HasSuffix(path, "_test.go") {
		return true
	}
	helpers := []string{"core/storetest/", "adapters/sqlstore/sqltest/", "internal/testenv/", "kandevtest/"}
	for _, dir := range helpers {
		if strings.Contains(path, dir) {
			return true
		}
	}
	return false
}

// prefixes reports a message that spells the library's prefix where
// liberr.Errorf or core.OpError would add it a second time.
func prefixes(file *ast.File, at func(ast.Node, string)) {
	sentinels := map[ast.Node]bool{}
	for _, d := range file.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
			ast.Inspect(g, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok && isCall(c, "errors", "New") {
					sentinels[c] = true
				}
				return true
			})
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok || len(c.Args) == 0 {
			return true
		}
		msg, ok := literal(c.Args[0])
		if !ok || !strings.HasPrefix(msg, "subagentctx: ") {
			return true
		}
		switch {
		case isCall(c, "fmt", "Errorf"):
			at(c, "fmt.Errorf spells the prefix: use liberr.Errorf, which adds it once")
		case isCall(c, "core", "Errorf"), isCall(c, "", "Errorf"):
			at(c, "Errorf adds the prefix: drop it from the message")
		case isCall(c, "errors", "New") && !sentinels[c]:
			at(c, "errors.New spells the prefix outside a sentinel: use liberr.Errorf")
		}
		return true
	})
}

// receives reports a channel receive that no deadline bounds.
func receives(file *ast.File, at func(ast.Node, string)) {
	bounded := map[ast.Node]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		s, ok := n.(*ast.SelectStmt)
		if !ok || !hasDeadline(s) {
			return true
		}
		for _, cl := range s.Body.List {
			if cc, ok := cl.(*ast.CommClause); ok && cc.Comm != nil {
				ast.Inspect(cc.Comm, func(n ast.Node) bool {
					if u, ok := n.(*ast.UnaryExpr); ok && u.Op == token.ARROW {
						bounded[u] = true
					}
					return true
				})
			}
		}
		return true
	})
	ast.Inspect(file, func(n ast.Node) bool {
		if u, ok := n.(*ast.UnaryExpr); ok && u.Op == token.ARROW && !bounded[u] {
			at(u, "channel receive without a deadline: wait in a select with one, or with internal/await")
		}
		return true
	})
}

// hasDeadline is a select with a default or a case that waits on a
// timer, a ticker or a context.
func hasDeadline(s *ast.SelectStmt) bool {
	for _, cl := range s.Body.List {
		cc := cl.(*ast.CommClause)
		if cc.Comm == nil {
			return true
		}
		found := false
		ast.Inspect(cc.Comm, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if isCall(x, "time", "After") || isMethod(x, "Done") {
					found = true
				}
			case *ast.SelectorExpr:
				if x.Sel.Name == "C" {
					found = true
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

func isCall(c *ast.CallExpr, pkg, name string) bool {
	switch f := c.Fun.(type) {
	case *ast.SelectorExpr:
		id, ok := f.X.(*ast.Ident)
		return ok && id.Name == pkg && f.Sel.Name == name
	case *ast.Ident:
		return pkg == "" && f.Name == name
	}
	return false
}

func isMethod(c *ast.CallExpr, name string) bool {
	f, ok := c.Fun.(*ast.SelectorExpr)
	return ok && f.Sel.Name == name
}

// literal is the value of a string literal, or of the first operand of a
// concatenation that starts with one.
func literal(e ast.Expr) (string, bool) {
	for {
		b, ok := e.(*ast.BinaryExpr)
		if !ok || b.Op != token.ADD {
			break
		}
		e = b.X
	}
	l, ok := e.(*ast.BasicLit)
	if !ok || l.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(l.Value)
	return s, err == nil
}
