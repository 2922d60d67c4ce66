//go:build linux

package fleet

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keepDir makes the directory a failed run leaves its artifacts in:
// zkrecipes-<suite>-<seed>-<random> under $ZKRECIPES_<SUITE>_DIR, or
// under os.TempDir() when that is not set. It is not a t.TempDir: it
// outlives the test. It returns "" when it cannot be made.
func keepDir(t testing.TB, suite string, seed uint64) string {
	base := os.Getenv(KeepEnv(suite))
	if base == "" {
		base = os.TempDir()
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Logf("no directory for the run's artifacts: %v", err)
		return ""
	}
	dir, err := os.MkdirTemp(base, fmt.Sprintf("zkrecipes-%s-%d-", suite, seed))
	if err != nil {
		t.Logf("no directory for the run's artifacts: %v", err)
		return ""
	}
	return dir
}

// KeepEnv is the environment variable that names where a failed run of
// suite keeps its artifacts: ZKRECIPES_<SUITE>_DIR.
func KeepEnv(suite string) string {
	return "ZKRECIPES_" + strings.ToUpper(suite) + "_DIR"
}

// keep copies, once the test has failed, every file of f.Dir (the shared
// log, the session files, the clients' library logs, the checker's pages
// and histories) and each client's stdout and stderr into f.Keep, and logs
// where they are; once it has passed, it removes f.Keep.
func (f *Fleet) keep(t testing.TB) {
	if f.Keep == "" {
		return
	}
	if !t.Failed() {
		_ = os.RemoveAll(f.Keep)
		return
	}
	var errs []string
	entries, err := os.ReadDir(f.Dir)
	if err != nil {
		errs = append(errs, err.Error())
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if err := copyFile(filepath.Join(f.Dir, e.Name()), filepath.Join(f.Keep, e.Name())); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	for _, p := range f.Procs {
		stdout, stderr := p.output()
		for name, b := range map[string]string{p.ID + ".stdout": stdout, p.ID + ".stderr": stderr} {
			if err := os.WriteFile(filepath.Join(f.Keep, name), []byte(b), 0o644); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	t.Logf("the failed run's artifacts (shared log, histories, porcupine pages, client logs) are kept in %s", f.Keep)
	if len(errs) > 0 {
		t.Logf("some could not be kept: %s", strings.Join(errs, "; "))
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
