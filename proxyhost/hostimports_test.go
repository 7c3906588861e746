package proxyhost

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The metric host functions the wasm build imports itself (metrics_wasm.go) are
// declared as the SDK declares them (proxywasm/internal): the same import,
// and parameters and results of the same basic types, its named types
// (MetricType, Status) read as what they name.
func TestHostImportsAsTheSDKs(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/proxy-wasm/proxy-wasm-go-sdk").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sdk := parseFiles(t, filepath.Join(strings.TrimSpace(string(out)), "proxywasm", "internal", "*.go"))
	named := map[string]string{}
	for _, f := range sdk {
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if id, ok := ts.Type.(*ast.Ident); ok {
					named[ts.Name.Name] = id.Name
				}
			}
			return true
		})
	}
	want := imports(sdk, named)
	ours := imports(parseFiles(t, "metrics_wasm.go"), nil)
	if len(ours) == 0 {
		t.Fatal("no //go:wasmimport of ours found")
	}
	for name, sig := range ours {
		if w, ok := want[name]; !ok || w != sig {
			t.Errorf("%s: ours %s, the SDK's %s", name, sig, w)
		}
	}
}

func parseFiles(t *testing.T, pattern string) []*ast.File {
	t.Helper()
	names, _ := filepath.Glob(pattern)
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// imports maps each //go:wasmimport's module and name to its signature,
// named types resolved through named.
func imports(files []*ast.File, named map[string]string) map[string]string {
	sigs := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Doc == nil {
				continue
			}
			for _, c := range fn.Doc.List {
				if name, ok := strings.CutPrefix(c.Text, "//go:wasmimport "); ok {
					sigs[name] = signature(fn.Type, named)
				}
			}
		}
	}
	return sigs
}

func signature(ft *ast.FuncType, named map[string]string) string {
	list := func(fl *ast.FieldList) string {
		var s []string
		if fl == nil {
			return ""
		}
		for _, f := range fl.List {
			typ := typeName(f.Type, named)
			for range max(len(f.Names), 1) {
				s = append(s, typ)
			}
		}
		return strings.Join(s, ", ")
	}
	return "(" + list(ft.Params) + ") " + list(ft.Results)
}

func typeName(e ast.Expr, named map[string]string) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + typeName(e.X, named)
	case *ast.Ident:
		if b, ok := named[e.Name]; ok {
			return b
		}
		return e.Name
	}
	return "?"
}
