package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes"
)

const inspectHelp = `usage: zkr inspect PATH [--json] [flags]

Shows what holds PATH and who waits: every contender node in queue order with
its role, data, owning session, fencing token (czxid) and age. Recognises
Curator's mutex, read-write lock, semaphore (V2), leader latch and selector,
and kazoo's and go-zookeeper's locks.

A semaphore shows its lease nodes, then the queue of its internal lock
(locks/): the first there is "acquiring" (it creates its lease, and waits
while the leases are all taken; its pending lease node is listed among the
leases), the rest are "waiting" for that lock.

flags:
`

// entry is one contender node.
type entry struct {
	Node    string    `json:"node"`
	Role    string    `json:"role"` // holder, leader, write-holder, read-holder, lease, acquiring, waiting
	Data    string    `json:"data"`
	Session string    `json:"session"`
	Token   int64     `json:"token"`
	Created time.Time `json:"created"`
	AgeMs   int64     `json:"age_ms"`
}

type report struct {
	Path  string  `json:"path"`
	Kind  string  `json:"kind"` // mutex, read-write lock, semaphore, leader latch, none
	Nodes []entry `json:"nodes"`
}

func cmdInspect(args []string) int {
	fs := newFlagSet("zkr inspect", inspectHelp)
	var c common
	c.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, argv, code, ok := parseOrExit(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 || argv != nil {
		return usageErr(fs.Name(), "want exactly one PATH")
	}
	ctx, s, done, code := c.request(fs.Name())
	if s == nil {
		return code
	}
	defer done()
	rep, err := inspect(ctx, s, pos[0], time.Now())
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Println(string(b))
		return 0
	}
	printReport(rep)
	return 0
}

func inspect(ctx context.Context, s *zkrecipes.Session, path string, now time.Time) (report, error) {
	rep := report{Path: path, Kind: "none", Nodes: []entry{}}
	kids, _, err := s.GetChildren(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	rep.Kind = kindOf(kids)
	if rep.Kind == "semaphore" {
		// The maximum is not on the server (but in each client): every
		// lease node is shown as a lease.
		ps, err := zkrecipes.NewSemaphore(s, path, math.MaxInt32).Participants(ctx)
		if err != nil {
			return rep, err
		}
		leases := make([]entry, len(ps))
		for i, p := range ps {
			leases[i] = entry{Node: "leases/" + p.Node, Role: "lease", Data: string(p.Data),
				Session: fmt.Sprintf("0x%x", p.SessionID), Token: p.Token, Created: p.Created,
				AgeMs: now.Sub(p.Created).Milliseconds()}
		}
		lockq, err := read(ctx, s, path+"/locks", now)
		if err != nil {
			return rep, err
		}
		for i := range lockq {
			lockq[i].Role = "waiting"
			lockq[i].Node = "locks/" + lockq[i].Node
		}
		if len(lockq) > 0 {
			// The first holds the semaphore's internal lock: it is
			// creating its lease, or waiting for the count to let it hold.
			lockq[0].Role = "acquiring"
		}
		rep.Nodes = append(leases, lockq...)
		return rep, nil
	}
	nodes, err := read(ctx, s, path, now)
	if err != nil {
		return rep, err
	}
	for i := range nodes {
		nodes[i].Role = "waiting"
	}
	switch rep.Kind {
	case "read-write lock":
		for i := range nodes {
			w := strings.Contains(nodes[i].Node, "__WRIT__")
			if w && i == 0 {
				nodes[i].Role = "write-holder"
			}
			if w {
				break
			}
			nodes[i].Role = "read-holder"
		}
	case "leader latch":
		if len(nodes) > 0 {
			nodes[0].Role = "leader"
		}
	default:
		if len(nodes) > 0 {
			nodes[0].Role = "holder"
		}
	}
	rep.Nodes = nodes
	return rep, nil
}

// kindOf recognises the recipe from its node names.
func kindOf(kids []string) string {
	for _, k := range kids {
		switch {
		case k == "leases" || k == "locks":
			return "semaphore"
		case strings.Contains(k, "__READ__") || strings.Contains(k, "__WRIT__"):
			return "read-write lock"
		case strings.Contains(k, "-latch-"):
			return "leader latch"
		}
	}
	if len(kids) == 0 {
		return "none"
	}
	return "mutex"
}

// read reads every child of dir, in queue order: by the 10-digit sequence
// every recipe node ends with (the order Curator and kazoo use for these
// layouts), names without one last.
func read(ctx context.Context, s *zkrecipes.Session, dir string, now time.Time) ([]entry, error) {
	kids, _, err := s.GetChildren(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	sort.Slice(kids, func(i, j int) bool {
		a, b := seqOf(kids[i]), seqOf(kids[j])
		if a != b {
			return a < b
		}
		return kids[i] < kids[j]
	})
	out := make([]entry, 0, len(kids))
	for _, k := range kids {
		data, st, err := s.GetData(ctx, dir+"/"+k)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", dir, k, err)
		}
		out = append(out, entry{Node: k, Data: string(data), Session: fmt.Sprintf("0x%x", st.EphemeralOwner),
			Token: st.Czxid, Created: st.Created, AgeMs: now.Sub(st.Created).Milliseconds()})
	}
	return out, nil
}

// seqOf returns the trailing 10-digit sequence of a node name, or a value
// above every sequence.
func seqOf(name string) string {
	if len(name) >= 10 {
		tail := name[len(name)-10:]
		if strings.Trim(tail, "0123456789") == "" {
			return tail
		}
	}
	return "~" + name
}

func printReport(r report) {
	if len(r.Nodes) == 0 {
		fmt.Printf("%s: no holder, nobody waiting\n", r.Path)
		return
	}
	fmt.Printf("%s (%s, %d node(s))\n", r.Path, r.Kind, len(r.Nodes))
	w := 0
	for _, e := range r.Nodes {
		w = max(w, len(e.Role))
	}
	for _, e := range r.Nodes {
		age := (time.Duration(e.AgeMs) * time.Millisecond).Round(100 * time.Millisecond)
		fmt.Printf("  %-*s  token %-12d session %-18s age %-8v data %q  %s\n", w, e.Role, e.Token, e.Session, age, e.Data, e.Node)
	}
}
