//go:build linux

package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Config says what New sets up.
type Config struct {
	// Suite names the client binary ("<suite>-client") and the messages
	// about building it.
	Suite string
	// Seed seeds Fleet.Rng, the source of the whole fault schedule.
	Seed uint64
	// Keep, when set, is where the shared log is copied after the test.
	Keep string
	// Prefix names the processes StartNext starts: Prefix1, Prefix2, ...
	Prefix string
	// Args returns the command line of client id, given the addresses of
	// its proxies joined by commas (its -servers).
	Args func(id, servers string) []string
}

// Fleet is one run of a suite: a 3-server ensemble, the client processes
// that use it, each behind proxies of its own, the shared log they all
// append to, and the seeded random source of the fault schedule. Its
// methods are for the test goroutine only.
type Fleet struct {
	Ens     *zktest.Cluster
	Dir     string     // the test's temporary directory: the shared log, the session files
	LogPath string     // the shared log's path, in Dir
	Log     *chaos.Log // the shared log, open for appending
	Rng     *rand.Rand // seeded with Config.Seed
	Procs   []*Proc    // every process started, in the order started
	// Keep is where the run's artifacts are kept if the test fails (see
	// New); "" when it could not be made.
	Keep string
	bin  string
	cfg  Config
}

// Seed returns seed, or a seed from the clock when seed is 0.
func Seed(seed uint64) uint64 {
	if seed == 0 {
		return uint64(time.Now().UnixNano())
	}
	return seed
}

// New builds the suite's ./client (skipping the test, or failing it when
// the environment variable CI is set, without the go tool), starts a
// 3-server ensemble (zktest.Start) and opens the shared log in a fresh
// temporary directory; what it starts is stopped by t.Cleanup. The build
// is bounded by ctx and by 5 minutes. Call it from the test goroutine
// only.
//
// It also makes Keep, a directory outside the test's temporary ones
// (under $ZKRECIPES_<SUITE>_DIR, else os.TempDir()): once the test has
// failed, and its processes are stopped, every file of Dir and each
// client's stdout and stderr are copied there and its path logged; once
// the test has passed, it is removed.
func New(ctx context.Context, t testing.TB, cfg Config) *Fleet {
	t.Helper()
	f := &Fleet{cfg: cfg, Dir: t.TempDir(), Rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	f.Keep = keepDir(t, cfg.Suite, cfg.Seed)
	t.Cleanup(func() { f.keep(t) }) // after the processes are stopped (their cleanups are registered later)
	f.bin = buildClient(ctx, t, cfg.Suite)
	f.Ens = zktest.Start(t, zktest.WithSize(3))
	f.LogPath = filepath.Join(f.Dir, "shared.log")
	var err error
	f.Log, err = chaos.OpenLog(f.LogPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Log.Close() })
	t.Cleanup(func() {
		if cfg.Keep != "" {
			if b, err := os.ReadFile(f.LogPath); err == nil {
				_ = os.WriteFile(cfg.Keep, b, 0o644)
			}
		}
	})
	return f
}

// StartNext starts the next client process, Config.Prefix followed by one
// more than the number of processes started so far, and adds it to Procs.
func (f *Fleet) StartNext(t testing.TB) *Proc {
	t.Helper()
	p := startProc(t, f.bin, fmt.Sprintf("%s%d", f.cfg.Prefix, len(f.Procs)+1), f.Ens.Servers(), f.cfg.Args)
	f.Procs = append(f.Procs, p)
	return p
}

// Between returns a random duration in [lo, hi) from Rng.
func (f *Fleet) Between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(f.Rng.Int64N(int64(hi-lo)))
}

// Live returns the processes that run, in the order started.
func (f *Fleet) Live() []*Proc {
	var out []*Proc
	for _, p := range f.Procs {
		if p.Alive() {
			out = append(out, p)
		}
	}
	return out
}

// AnyLive returns a live process picked with Rng. There must be one.
func (f *Fleet) AnyLive() *Proc {
	live := f.Live()
	return live[f.Rng.IntN(len(live))]
}

// Inject runs the fault schedule: the kinds one at a time, in an order
// drawn from Rng, each kind once per round, rounds until d has passed
// (at least one whole round), with a gap drawn from [gapLo, gapHi) after
// each. inject injects and heals one fault of the kind it is given, within
// a context that ends 2 minutes after the call, or with ctx. Inject
// returns early, with ctx's error, once ctx ends.
func (f *Fleet) Inject(ctx context.Context, d time.Duration, kinds []string, gapLo, gapHi time.Duration, inject func(ctx context.Context, kind string)) error {
	start := time.Now()
	for round := 0; round == 0 || time.Since(start) < d; round++ {
		for _, i := range f.Rng.Perm(len(kinds)) {
			if round > 0 && time.Since(start) >= d {
				break
			}
			func() {
				fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel() // also when inject ends the test
				inject(fctx, kinds[i])
			}()
			// A random gap in the schedule, not ordering.
			if err := Sleep(ctx, f.Between(gapLo, gapHi)); err != nil {
				return err
			}
		}
	}
	return nil
}

// KillLeader injects the fault kind that SIGKILLs the ensemble's leader:
// it logs "FAULT <kind> server <i>", waits until the survivors elect a
// leader, lets 1 to 3 s drawn from Rng pass and restarts the server.
func (f *Fleet) KillLeader(ctx context.Context, kind string) error {
	leader, err := f.Ens.WaitLeader(ctx)
	if err != nil {
		return err
	}
	if err := f.Ens.Kill(leader); err != nil {
		return err
	}
	f.Log.Add(chaos.Fault, kind, "server", leader)
	if _, err := f.Ens.WaitLeader(ctx); err != nil {
		return fmt.Errorf("the survivors elect a leader: %w", err)
	}
	slept := Sleep(ctx, f.Between(time.Second, 3*time.Second)) // the fault's random length
	return errors.Join(f.Ens.Restart(leader), slept)
}

// StopFollower injects the fault kind that SIGSTOPs a follower drawn from
// Rng: it logs "FAULT <kind> server <i>", lets a time drawn from [lo, hi)
// pass, sends SIGCONT and waits until the server serves again.
func (f *Fleet) StopFollower(ctx context.Context, kind string, lo, hi time.Duration) error {
	leader, err := f.Ens.WaitLeader(ctx)
	if err != nil {
		return err
	}
	i := (leader + 1 + f.Rng.IntN(2)) % 3
	if err := f.Ens.Stop(i); err != nil {
		return err
	}
	f.Log.Add(chaos.Fault, kind, "server", i)
	slept := Sleep(ctx, f.Between(lo, hi))
	if err := f.Ens.Cont(i); err != nil {
		return err
	}
	if err := f.Ens.WaitServing(ctx, i); err != nil {
		return err
	}
	return slept
}

// Blackhole injects the fault kind that cuts p off for d: it blackholes
// p's proxies, logs "FAULT <kind> <p> <detail...> <d>", waits d and heals
// p's proxies, also when ctx ends first.
func (f *Fleet) Blackhole(ctx context.Context, kind string, p *Proc, d time.Duration, detail ...any) error {
	p.Blackhole()
	f.Log.Add(chaos.Fault, kind, append(append([]any{p.ID}, detail...), d)...)
	defer p.Heal()
	return Sleep(ctx, d)
}

// Replace injects the fault kind that SIGKILLs p: it waits until p has
// exited, logs "KILLED <p>" and "FAULT <kind> <p> <detail...>", lets pause
// pass and starts the next process in p's place.
func (f *Fleet) Replace(ctx context.Context, t testing.TB, kind string, p *Proc, pause time.Duration, detail ...any) error {
	t.Helper()
	if err := p.kill(ctx); err != nil {
		return err
	}
	f.Log.Add(chaos.Killed, p.ID)
	f.Log.Add(chaos.Fault, kind, append([]any{p.ID}, detail...)...)
	if err := Sleep(ctx, pause); err != nil {
		return err
	}
	f.StartNext(t)
	return nil
}

// Expire injects the fault kind that ends session id from the server
// side, as ZooKeeper expires a session, on the server the client is
// connected to (found with "cons"): the reattach closes the client's
// connection there, then the session is closed. It logs "FAULT <kind>
// <actor> 0x<id> server <i> <ok|error>" (i is -1 when no server lists the
// session); an expiry that fails is logged, not returned: a fault that did
// not happen.
//
// Closing the session from another server while the client's connection
// stays up would be a different fault, a third party's kill of a healthy
// session: the holder of a lock and its successor then learn of it from
// the same commit, at the same moment, and no client can order the two
// (see the README's reliability section); the suites do not inject it.
func (f *Fleet) Expire(ctx context.Context, kind, actor string, id int64, pw []byte) {
	srv, err := expire(ctx, f.Ens, id, pw)
	f.Log.Add(chaos.Fault, kind, actor, fmt.Sprintf("0x%x", id), "server", srv, ErrText(err))
}

func expire(ctx context.Context, ens *zktest.Cluster, id int64, pw []byte) (int, error) {
	sid := fmt.Sprintf("sid=0x%x,", id)
	for i, s := range ens.Servers() {
		out, err := zktest.FourLetterWord(ctx, s, "cons")
		if err != nil || !strings.Contains(out, sid) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return i, zktest.ExpireSession(sctx, s, id, pw)
	}
	return -1, errors.New("session_not_connected_to_any_server")
}

// SortedCounts formats m as "k1=n1 k2=n2 ...", keys in order.
func SortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// Quiet is a zk.Logger that discards everything, for the test's own
// go-zookeeper connections.
type Quiet struct{}

// Printf discards its arguments.
func (Quiet) Printf(string, ...any) {}
