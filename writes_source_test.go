package zkrecipes

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// zkWrites are the methods of go-zookeeper's *zk.Conn that send node data,
// a path or an ACL to be stored: the requests a server drops the
// connection for when they exceed its jute.maxbuffer.
var zkWrites = []string{"Create", "CreateContainer", "CreateTTL", "CreateProtectedEphemeralSequential", "Set", "SetACL", "Multi"}

// writesFile is the one file allowed to call them: the writes, each
// checked against the Session's request size limit before it is sent.
const writesFile = "writes.go"

// Every create, setData and multi the module sends passes through the
// size check, today's recipes and tomorrow's: no non-test file of the
// module other than writes.go calls a write method of *zk.Conn, whatever
// the expression that holds the connection (the packages are type-checked,
// so a copy of s.conn in a variable is caught too).
func TestEveryWriteGoesThroughTheSizeCheck(t *testing.T) {
	bad, allowed := zkConnCallsOutside(t, zkWrites, writesFile)
	require.Empty(t, bad, "writes sent around the size check of %s: send them through its Session methods", writesFile)
	require.Positive(t, allowed, "%s calls no write method of *zk.Conn: the check found nothing to look for", writesFile)
}

// zkConnCallsOutside type-checks the module's non-test packages and
// returns the calls of the methods named in methods on a *zk.Conn made
// outside file (a file of the root package), as "file:line: Method", and
// the count of those made in file.
func zkConnCallsOutside(t *testing.T, methods []string, file string) (bad []string, allowed int) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to type-check the module: %v", err)
	}
	exports := goList(t, "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", "./...")
	export := map[string]string{}
	for _, l := range exports {
		path, file, _ := strings.Cut(l, "\t")
		export[path] = file
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := export[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	wd, err := os.Getwd()
	require.NoError(t, err)
	for _, l := range goList(t, "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", "./...") {
		f := strings.Split(l, "\t")
		pkgPath, dir, names := f[0], f[1], strings.Fields(f[2])
		var files []*ast.File
		for _, n := range names {
			file, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, 0)
			require.NoError(t, err)
			files = append(files, file)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
		_, err := (&types.Config{Importer: imp}).Check(pkgPath, fset, files, info)
		require.NoError(t, err, "type-check %s", pkgPath)
		for sel, s := range info.Selections {
			if s.Kind() != types.MethodVal || !isZKConn(s.Recv()) || !slices.Contains(methods, sel.Sel.Name) {
				continue
			}
			pos := fset.Position(sel.Pos())
			if pkgPath == "github.com/zkrecipes/zkrecipes" && filepath.Base(pos.Filename) == file {
				allowed++
				continue
			}
			rel, err := filepath.Rel(wd, pos.Filename)
			if err != nil {
				rel = pos.Filename
			}
			bad = append(bad, fmt.Sprintf("%s:%d: %s", rel, pos.Line, sel.Sel.Name))
		}
	}
	sort.Strings(bad)
	return bad, allowed
}

// isZKConn reports whether t is *zk.Conn (or zk.Conn) of go-zookeeper.
func isZKConn(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Name() == "Conn" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "github.com/go-zookeeper/zk"
}

// goList runs go list with args in the module's root and returns its
// output's lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}
