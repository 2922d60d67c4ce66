package zkrecipes

import (
	"context"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// A queue's first listing need not wait for the reply to its create:
// ZooKeeper executes one session's requests in the order they arrive, so a
// getChildren sent after the create reaches the wire lists the children as
// the create left them. The wire layer tells when a create's frame is being
// written (wire.Layer.Expect), and the listing is queued on another
// goroutine only then: go-zookeeper's one writing goroutine writes it after
// the create's frame.
//
// Whether a listing came after the create is not taken on trust: it is used
// only when it holds the node the create made, which exists from that
// create on. Any other outcome (the create failed, was retried, or went
// over a connection that broke) falls back to listing after the create.

// createListed creates a protected EPHEMERAL_SEQUENTIAL node
// dir/_c_<uuid>-name (see createProtected) and, when the Session can tell
// that the create is on the wire, lists dir right behind it with list. The
// listing's kids are nil when no such listing holds the node: the caller
// lists then. token is the node's fencing token when known without reading
// the node, 0 otherwise: its czxid, from the zxid of the create's reply
// the wire layer read (createdZxid); else, when the listing shows no
// child created after the node and went over a connection of node's
// session, the parent's pzxid in the listing (listingToken).
//
// It needs the wire layer (s.wire non-nil).
func (s *Session) createListed(ctx context.Context, dir, name string, data []byte, list lister) (node ownNode, l listing, token int64, err error) {
	uuid := newUUID()
	flags := int32(zk.FlagEphemeral | zk.FlagSequence)
	sent, forget := s.wire.Expect(joinPath(dir, protectedName(uuid, name)))
	stop := make(chan struct{})
	lc := make(chan listing, 1)
	// The listing is not cancelled with ctx: it is one request, which the
	// Session waits for in Close.
	bg := context.WithoutCancel(ctx)
	if !s.spawn(func() {
		select {
		case <-sent.Done():
		case <-stop:
		}
		select {
		case <-sent.Done(): // (if stop came too, the create's reply came first)
			lc <- list(s, bg, dir)
		default: // never written: nothing to list behind
			lc <- listing{}
		}
	}) {
		forget()
		return ownNode{}, listing{}, 0, ErrClosed
	}
	node, err = s.createProtectedMode(ctx, dir, uuid, name, data, flags)
	forget()
	close(stop)
	select {
	case l = <-lc:
	case <-ctx.Done():
	}
	if err != nil {
		return node, listing{}, 0, err
	}
	token = createdZxid(sent, node)
	if l.err != nil || !slices.Contains(l.kids, baseName(node.path)) {
		return node, listing{}, token, nil
	}
	// The listing holds the node, so the create's reply came before the
	// listing's, over the connection its frame went out on (sent.Done() has
	// closed: read its session only then).
	if token == 0 && sent.SessionID() == node.gen.id && noneCreatedSince(l.parent, baseName(node.path)) {
		token = listingToken(l.parent)
	}
	return node, l, token, nil
}

// createdZxid is the czxid of node, the node made by the create that sent
// tells of, when the wire layer read that create's successful reply on a
// connection of node's session and the reply names node: a server answers
// a write right after applying it, before any other write, so the reply's
// zxid is the create's (internal/wire/notice.go). 0 when unknown: the
// reply was lost to a connection failure and the node was found by its
// UUID, say. Call it after sent's forget function.
func createdZxid(sent *wire.Sent, node ownNode) int64 {
	z, path := sent.Created()
	if z == 0 || path != node.path || sent.SessionID() != node.gen.id {
		return 0
	}
	return z
}

// noneCreatedSince reports whether parent, the Stat of a listing that holds
// the sequential node own, shows no child created after own. ZooKeeper
// numbers a sequential node by the count of children created under the
// parent before it (the stored cversion), while a Stat's Cversion counts
// creates and deletes: 2×creates − NumChildren, in 32-bit arithmetic. So
// the creates so far, modulo 2³¹, are (Cversion + NumChildren) / 2, and
// none came after own when that is own's sequence number plus one.
func noneCreatedSince(parent *zk.Stat, own string) bool {
	if parent == nil || len(own) < 10 {
		return false
	}
	seq := parseSeq(own[len(own)-10:])
	if seq < 0 {
		return false
	}
	creates := (uint32(parent.Cversion) + uint32(parent.NumChildren)) >> 1
	return creates == uint32(seq+1)&0x7fffffff
}
