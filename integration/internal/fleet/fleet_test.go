//go:build linux

package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRequiredMessageNamesEveryFlag(t *testing.T) {
	assert.Equal(t, "client: -servers, -id, -log, -store and -session-file are required",
		requiredMessage([]string{"servers", "id", "log", "store", "session-file"}))
	assert.Equal(t, "client: -servers, -id, -log and -session-dir are required",
		requiredMessage([]string{"servers", "id", "log", "session-dir"}))
	assert.Equal(t, "client: -id is required", requiredMessage([]string{"id"}))
}

func TestReadSessionReadsWhatSaveSessionWrites(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c1.session")
	require.NoError(t, os.WriteFile(file, []byte("1a2b 00ff10\n"), 0o644))
	id, pw, err := ReadSession(file)
	require.NoError(t, err)
	assert.Equal(t, int64(0x1a2b), id)
	assert.Equal(t, []byte{0x00, 0xff, 0x10}, pw)

	require.NoError(t, os.WriteFile(file, []byte("1a2b\n"), 0o644))
	_, _, err = ReadSession(file)
	assert.ErrorContains(t, err, "session file "+file)
	_, _, err = ReadSession(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestErrTextAndSortedCountsAreOneField(t *testing.T) {
	assert.Equal(t, "ok", ErrText(nil))
	assert.Equal(t, "zk:_connection_closed", ErrText(errors.New("zk: connection closed")))
	assert.Equal(t, "a=2 b=1 c=3", SortedCounts(map[string]int{"c": 3, "a": 2, "b": 1}))
	assert.Equal(t, "", SortedCounts(nil))
}

func TestInjectRunsAWholeRoundInSeededOrder(t *testing.T) {
	kinds := []string{"a", "b", "c", "d"}
	var got []string
	f := &Fleet{Rng: rand.New(rand.NewPCG(7, 7))}
	err := f.Inject(context.Background(), 0, kinds, 0, 1, func(ctx context.Context, kind string) {
		_, ok := ctx.Deadline()
		assert.True(t, ok, "the fault's context has no deadline")
		got = append(got, kind)
	})
	require.NoError(t, err)
	assert.ElementsMatch(t, kinds, got, "one whole round, each kind once")

	var again []string
	g := &Fleet{Rng: rand.New(rand.NewPCG(7, 7))}
	require.NoError(t, g.Inject(context.Background(), 0, kinds, 0, 1, func(_ context.Context, kind string) { again = append(again, kind) }))
	assert.True(t, slices.Equal(got, again), "the same seed gives the same order: %v, %v", got, again)
}

func TestLoopbackAcceptsOnly127Slash8(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:2181": true, "127.3.4.5:1": true,
		"10.0.0.1:2181": false, "localhost:2181": false, "[::1]:2181": false, "127.0.0.1": false, "": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// failedTB is a testing.TB whose Failed reports failed, with its logs
// collected.
type failedTB struct {
	testing.TB
	failed bool
	logs   []string
}

func (f *failedTB) Failed() bool { return f.failed }
func (f *failedTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func TestAFailedRunKeepsItsFilesAndClientOutputWhereItSaysAndAPassedOneNone(t *testing.T) {
	t.Setenv(KeepEnv("demo"), t.TempDir())
	for _, failed := range []bool{true, false} {
		tb := &failedTB{TB: t, failed: failed}
		f := &Fleet{Dir: t.TempDir(), Keep: keepDir(tb, "demo", 42)}
		require.NotEmpty(t, f.Keep)
		assert.Equal(t, os.Getenv(KeepEnv("demo")), filepath.Dir(f.Keep))
		assert.Contains(t, filepath.Base(f.Keep), "zkrecipes-demo-42-")
		require.NoError(t, os.WriteFile(filepath.Join(f.Dir, "shared.log"), []byte("1 FAULT x\n"), 0o644))
		p := &Proc{ID: "p1", exited: make(chan struct{})}
		p.stderr.WriteString("client p1: boom\n")
		close(p.exited)
		f.Procs = []*Proc{p}
		f.keep(tb)
		if !failed {
			assert.NoDirExists(t, f.Keep, "a passed run keeps nothing")
			continue
		}
		b, err := os.ReadFile(filepath.Join(f.Keep, "shared.log"))
		require.NoError(t, err)
		assert.Equal(t, "1 FAULT x\n", string(b))
		b, err = os.ReadFile(filepath.Join(f.Keep, "p1.stderr"))
		require.NoError(t, err)
		assert.Equal(t, "client p1: boom\n", string(b))
		require.Len(t, tb.logs, 1)
		assert.Contains(t, tb.logs[0], f.Keep, "the path is printed")
	}
}
