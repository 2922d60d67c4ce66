package zkrecipes

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
)

// Participant is one contender of a recipe, as its node shows it.
type Participant struct {
	Node      string    // node name
	Data      []byte    // node data: by default the creator's host address
	SessionID int64     // the ZooKeeper session that owns the node
	Token     int64     // the node's czxid (its Lease.Token can differ: see there)
	Created   time.Time // when the node was created
	Holder    bool      // whether it holds (for a semaphore: one of the holders)
}

// participants lists the nodes under dir in queue order, each marked as a
// holder when holds says so for its place in the order listed.
func (s *Session) participants(ctx context.Context, dir string, markers []string, holds func(nodes []queueNode, i int) bool) ([]Participant, error) {
	kids, err := s.children(ctx, dir)
	if err == zk.ErrNoNode {
		return nil, nil
	}
	if err != nil {
		return nil, s.opError("list", dir, err)
	}
	nodes := sortNodes(kids, markers)
	out := make([]Participant, 0, len(nodes))
	seen := make([]queueNode, 0, len(nodes)) // the nodes still there, in order
	for _, n := range nodes {
		data, st, err := s.get(ctx, joinPath(dir, n.name))
		if err == zk.ErrNoNode {
			continue
		}
		if err != nil {
			return nil, s.opError("read", joinPath(dir, n.name), err)
		}
		seen = append(seen, n)
		out = append(out, Participant{Node: n.name, Data: data, SessionID: st.EphemeralOwner, Token: st.Czxid,
			Created: time.UnixMilli(st.Ctime), Holder: holds(seen, len(seen)-1)})
	}
	return out, nil
}

// firstHolds marks the first n nodes as holders.
func firstHolds(n int) func([]queueNode, int) bool {
	return func(_ []queueNode, i int) bool { return i < n }
}
