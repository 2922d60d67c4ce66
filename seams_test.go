package zkrecipes

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Each optimisation beside the acquisition loop sits behind one seam:
// deleting its file and its one call site leaves a package that builds,
// with the loop in internals.go as it is (the plain behaviour takes over:
// a listing after the create, the own node read beside the first watch,
// a new listing after every deletion). This test takes each one out of a
// copy of the package and builds it.
func TestEachOptimisationComesOutWithItsFileAndOneCallSite(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the package without an optimisation: %v", err)
	}
	for _, tc := range []struct {
		file      string // the optimisation's file
		call, fix string // its one call site in internals.go, and what is left
	}{
		{"listing.go", "\tif q.s.wire != nil {\n\t\treturn q.s.createListed(ctx, q.dir, q.name, data, list)\n\t}\n", ""},
		{"selfwatch.go", "c.self.stat != nil || c.self.deferRead(ctx, q.s, c.node)", "c.self.stat != nil"},
		{"handoff.go", "\tif fast {\n\t\treturn fastHandoff{mark: mark}\n\t}\n", ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			copyLibrary(t, dir)
			if err := os.Remove(filepath.Join(dir, tc.file)); err != nil {
				t.Fatal(err)
			}
			loop := filepath.Join(dir, "internals.go")
			src, err := os.ReadFile(loop)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(src), tc.call); n != 1 {
				t.Fatalf("internals.go calls %s %d times, want once: %q", tc.file, n, tc.call)
			}
			if err := os.WriteFile(loop, []byte(strings.Replace(string(src), tc.call, tc.fix, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(goBin, "build", ".")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("without %s the package does not build: %v\n%s", tc.file, err, out)
			}
		})
	}
}

// copyLibrary copies the library's non-test Go files, its go.mod and
// go.sum, and internal/ into dir.
func copyLibrary(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && path != "internal" && !strings.HasPrefix(path, "internal"+string(filepath.Separator)) {
				return fs.SkipDir
			}
			return os.MkdirAll(filepath.Join(dir, path), 0o755)
		}
		name := d.Name()
		if (strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) || name == "go.mod" || name == "go.sum" {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, path), b, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
