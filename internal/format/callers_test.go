package format

import (
	"encoding/json"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/redisrate/envoy-redis-ratelimit/"

// Every call in the shipped module to a function of this module that takes
// a format and its arguments (Sprintf, Errorf, config's errAt, …) passes,
// for each verb, a type the package prints as fmt would: what fmt reads
// through reflect (a named int for %d, a named string for %s) must be
// converted by the caller. The module is type-checked as each build
// compiles it: natively, and as both wasm modules.
func TestCallersPassKnownTypes(t *testing.T) {
	calls := 0
	for _, env := range [][]string{nil, {"GOOS=wasip1", "GOARCH=wasm"}, {"GOOS=wasip1", "GOARCH=wasm", "-tags=higress"}} {
		calls += checkBuild(t, env)
	}
	if calls < 100 {
		t.Fatalf("only %d calls checked: the check does not see them", calls)
	}
}

type listed struct {
	ImportPath, Dir, Export string
	GoFiles                 []string
}

// checkBuild type-checks the module's packages of one build, importing
// their dependencies from the compiler's export data, and checks their
// calls; it returns how many calls it checked.
func checkBuild(t *testing.T, env []string) int {
	t.Helper()
	args := []string{"list", "-deps", "-export", "-json=ImportPath,Dir,Export,GoFiles"}
	var vars []string
	for _, e := range env {
		if strings.HasPrefix(e, "-") {
			args = append(args, e)
		} else {
			vars = append(vars, e)
		}
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), vars...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", env, err)
	}
	var pkgs []listed
	exports := map[string]string{}
	for dec := json.NewDecoder(strings.NewReader(string(out))); dec.More(); {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath+"/", module) {
			pkgs = append(pkgs, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) })
	calls := 0
	for _, p := range pkgs {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("%s %v: %v", p.ImportPath, env, err)
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok && checkCall(t, fset, info, call) {
					calls++
				}
				return true
			})
		}
	}
	return calls
}

// checkCall checks call if it passes a format and its arguments to a
// function of the module.
func checkCall(t *testing.T, fset *token.FileSet, info *types.Info, call *ast.CallExpr) bool {
	t.Helper()
	var id *ast.Ident
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		id = fun
	case *ast.SelectorExpr:
		id = fun.Sel
	default:
		return false
	}
	fn, ok := info.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil || !strings.HasPrefix(fn.Pkg().Path()+"/", module) {
		return false
	}
	sig := fn.Type().(*types.Signature)
	params := sig.Params()
	if !sig.Variadic() || params.Len() < 2 || !types.Identical(params.At(params.Len()-1).Type(), types.NewSlice(types.Universe.Lookup("any").Type())) {
		return false
	}
	at := params.Len() - 2
	if b, ok := params.At(at).Type().(*types.Basic); !ok || b.Kind() != types.String {
		return false
	}
	pos := fset.Position(call.Pos())
	if call.Ellipsis.IsValid() {
		return false // a wrapper forwarding its own format
	}
	tv := info.Types[call.Args[at]]
	if tv.Value == nil {
		t.Errorf("%s: the format is not a constant", pos)
		return true
	}
	verbs := verbsOf(constant.StringVal(tv.Value))
	args := call.Args[at+1:]
	if len(verbs) != len(args) {
		t.Errorf("%s: %d verbs, %d arguments", pos, len(verbs), len(args))
		return true
	}
	for i, v := range verbs {
		if typ := info.Types[args[i]].Type; !printable(v, typ) {
			t.Errorf("%s: %%%c of %s: convert it to a basic type or call its String", pos, v, typ)
		}
	}
	return true
}

func verbsOf(format string) []byte {
	var verbs []byte
	for i := 0; i+1 < len(format); i++ {
		if format[i] == '%' {
			i++
			if format[i] != '%' {
				verbs = append(verbs, format[i])
			}
		}
	}
	return verbs
}

// printable mirrors appendValue.
func printable(verb byte, t types.Type) bool {
	t = types.Default(t)
	b, basic := types.Unalias(t).(*types.Basic)
	kind := func(k types.BasicInfo) bool { return basic && b.Info()&k != 0 }
	errType := types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
	isErr := types.Implements(t, errType)
	isStringer := false
	if m, _, _ := types.LookupFieldOrMethod(t, false, nil, "String"); m != nil {
		s, ok := m.Type().(*types.Signature)
		isStringer = ok && s.Params().Len() == 0 && s.Results().Len() == 1 && types.Identical(s.Results().At(0).Type(), types.Typ[types.String])
	}
	slice, _ := types.Unalias(t).(*types.Slice)
	sliceOf := func(k types.BasicKind) bool { return slice != nil && types.Identical(slice.Elem(), types.Typ[k]) }
	text := kind(types.IsString) || isErr || isStringer
	switch verb {
	case 's':
		return text || sliceOf(types.Byte)
	case 'q':
		return text || sliceOf(types.Byte) || kind(types.IsInteger)
	case 'w':
		return isErr
	case 'd':
		return kind(types.IsInteger) || sliceOf(types.Int64)
	case 't':
		return kind(types.IsBoolean)
	case 'v':
		return text || kind(types.IsInteger|types.IsFloat|types.IsBoolean) || sliceOf(types.Int64)
	}
	return false
}
