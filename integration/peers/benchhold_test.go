package peers

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zkbench's exclusion check runs each peer's bench-contended mode with
// --hold-us and counts the overlaps in its log. That check must be able to
// fail: two peers on two different paths share one log here, so they are
// two holders at once all the time, and with each staying 2 ms inside the
// log must show it. A peer that ignored --hold-us would leave sections of
// two log writes, which seldom overlap.
func TestBenchContended_HoldKeepsEachHolderInsideLongEnoughToBeSeen(t *testing.T) {
	servers := zkServers(t)
	for _, kind := range []string{Curator, Kazoo} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			log := filepath.Join(t.TempDir(), "contended.log")
			const hold = 2 * time.Millisecond
			ps := make([]*Process, 2)
			for i := range ps {
				ps[i] = StartSynced(t, kind, "bench-contended", "--sync", "1", "--servers", servers,
					"--path", fmt.Sprintf("%s-%d", uniquePath(t), i), "--id", fmt.Sprintf("%s%d", kind, i),
					"--sessions", "1", "--duration", "3000ms", "--hold-us", strconv.FormatInt(hold.Microseconds(), 10), "--log", log)
			}
			for _, p := range ps {
				_, err := p.WaitLine(ctx, "READY")
				require.NoError(t, err)
			}
			for _, p := range ps {
				require.NoError(t, p.Send("go"))
			}
			total := 0
			for _, p := range ps {
				_, err := p.WaitLine(ctx, "{")
				require.NoError(t, err)
				require.NoError(t, p.CloseStdin())
				sum, err := p.Wait(ctx)
				require.NoError(t, err)
				total += sum.Acquisitions
			}

			rep, err := CheckLog(log)
			require.NoError(t, err)
			assert.Greater(t, total, 50)
			// Without the hold (a peer that ignored --hold-us) this run saw
			// 3 and 11 overlaps in 475 and 761 acquisitions; with it, about
			// two in five acquisitions overlap.
			assert.Greater(t, len(rep.Violations), total/10,
				"two peers on two paths, one log: %d overlaps in %d acquisitions", len(rep.Violations), total)
			t.Logf("%s: %d acquisitions held %v, %d overlaps seen", kind, total, hold, len(rep.Violations))
		})
	}
}
