package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

const electHelp = `usage: zkr elect PATH [flags] [-- CMD [ARGS...]]
       zkr elect PATH --listen [flags]

Campaigns for leadership on PATH (a Curator LeaderLatch, or with --selector a
LeaderSelector) and prints "leader <id> token <T>" once it leads. Without CMD
it then leads until Ctrl-C (it resigns and exits 0) or until leadership is
lost (exit 74). With CMD it runs CMD while leading, exactly as zkr lock does.
With --listen it campaigns not, and prints every change of leader until
Ctrl-C.

flags:
`

func cmdElect(args []string) int {
	fs := newFlagSet("zkr elect", electHelp)
	var c common
	c.register(fs)
	listen := fs.Bool("listen", false, "print leader changes instead of campaigning")
	host, _ := os.Hostname()
	id := fs.String("id", fmt.Sprintf("%s-%d", host, os.Getpid()), "participant id stored in the node")
	selector := fs.Bool("selector", false, "use Curator's LeaderSelector layout (a mutex on PATH) instead of LeaderLatch")
	grace := fs.Duration("grace", 10*time.Second, "with CMD: after SIGTERM on leadership loss, SIGKILL after this long")
	loseOn := fs.String("lose-on", "suspended", "when leadership counts as lost: suspended or lost")
	pos, argv, code, ok := parseOrExit(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1:
		return usageErr(fs.Name(), "want exactly one PATH, got %d", len(pos))
	case *listen && argv != nil:
		return usageErr(fs.Name(), "--listen takes no CMD")
	case argv != nil && (len(argv) == 0 || argv[0] == ""):
		return usageErr(fs.Name(), "empty CMD after --")
	case c.servers == "":
		return usageErr(fs.Name(), "no servers: use --servers or set ZK_SERVERS")
	case *grace <= 0:
		return usageErr(fs.Name(), "--grace must be positive")
	}
	policy, err := lossPolicy(*loseOn)
	if err != nil {
		return usageErr(fs.Name(), "%v", err)
	}
	path := pos[0]
	layout := zkrecipes.LatchLayout
	if *selector {
		layout = zkrecipes.SelectorLayout
	}

	w, err := c.startWaiting(policy)
	defer w.close()
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	ctx, cancel, sigs := w.ctx, w.cancel, w.sigs
	e := zkrecipes.NewElection(w.s, path, zkrecipes.WithParticipantID(*id), zkrecipes.WithLayout(layout))
	if *listen {
		return listenLeaders(ctx, e, sigs)
	}

	lease, err := interruptible(ctx, cancel, sigs, e.Campaign)
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	fmt.Printf("leader %s token %d\n", *id, lease.Token())
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	if argv != nil {
		code := runChild(argv, path, lease, sigs, *grace)
		_ = e.Resign(rctx)
		return code
	}
	select {
	case <-lease.Done():
		fmt.Fprintf(os.Stderr, "zkr elect: %v\n", lease.Err())
		return exitLost
	case s := <-sigs:
		fmt.Fprintf(os.Stderr, "zkr elect: %v: resigning\n", s)
		if err := e.Resign(rctx); err != nil && !errors.Is(err, zkrecipes.ErrLockLost) {
			fmt.Fprintf(os.Stderr, "zkr elect: resign: %v\n", err)
		}
		return 0
	}
}

// listenLeaders prints every change of leader until a signal.
func listenLeaders(ctx context.Context, e *zkrecipes.Election, sigs <-chan os.Signal) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes, err := e.Subscribe(ctx)
	if err != nil {
		return zkErr("zkr elect", err)
	}
	for {
		select {
		case ch, ok := <-changes:
			if !ok {
				fmt.Fprintln(os.Stderr, "zkr elect: session closed")
				return exitUnavailable
			}
			ts := ch.At.Format("15:04:05.000")
			if !ch.HasLeader {
				fmt.Printf("%s no leader\n", ts)
				continue
			}
			l := ch.Leader
			fmt.Printf("%s leader %s token %d session 0x%x node %s\n", ts, l.Data, l.Token, l.SessionID, l.Node)
		case <-sigs:
			return 0
		}
	}
}
