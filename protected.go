package zkrecipes

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// protectedPrefix starts every node name a recipe creates, as in Curator:
// "_c_" + a canonical UUID + "-" + the recipe's name.
const protectedPrefix = "_c_"

// newUUID returns a random (version 4) UUID in its canonical 36-character
// form.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("zkrecipes: crypto/rand failed: " + err.Error()) // never fails on Linux
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// protectedName returns the node name prefix for a protected create.
func protectedName(uuid, name string) string { return protectedPrefix + uuid + "-" + name }

// ownNode is a node a recipe created and owns.
type ownNode struct {
	path string      // absolute path, namespace included
	gen  *generation // the ZooKeeper session it belongs to
}

// createProtected creates an EPHEMERAL_SEQUENTIAL node dir/_c_<uuid>-name,
// creating missing parents as containers. If the reply is lost to a
// connection failure (ZOOKEEPER-1262: the create may have succeeded), it
// looks for its node by the UUID once the connection is back and adopts it
// only if the node belongs to the current session; a node of an older
// session is deleted, never adopted (CURATOR-498). Connection loss and
// session expiry are retried under the Session's retry policy.
func (s *Session) createProtected(ctx context.Context, dir, name string, data []byte) (ownNode, error) {
	return s.createProtectedMode(ctx, dir, newUUID(), name, data, zk.FlagEphemeral|zk.FlagSequence)
}

// createProtectedMode is createProtected with the node's UUID (newUUID)
// and the create flags given:
// zk.FlagEphemeral alone creates dir/_c_<uuid>-name exactly (the read node
// of a read-write lock downgrade, which carries the writer's sequence).
func (s *Session) createProtectedMode(ctx context.Context, dir, uuid, name string, data []byte, flags int32) (ownNode, error) {
	n, err := s.createProtectedNode(ctx, protectedCreate{dir: dir, uuid: uuid, name: name, data: data, flags: flags, parents: true})
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrRetriesExhausted) {
		err = fmt.Errorf("zkrecipes: create %s: %w", joinPath(dir, protectedName(uuid, name)), err)
	}
	return n, err
}

// protectedCreate is what createProtectedNode creates: dir/_c_<uuid>-name
// with data, flags (and ttl in a TTL mode), creating missing parents as
// containers when parents is set.
type protectedCreate struct {
	dir, uuid, name string
	data            []byte
	flags           int32
	ttl             time.Duration
	parents         bool
}

func (c protectedCreate) ephemeral() bool { return c.flags&zk.FlagEphemeral != 0 }

// createProtectedNode is the protected create of the recipes and of Create
// WithProtection, under the Session's retry policy.
//
// Once a create may have reached the server without its reply coming back
// (a lost connection; NodeExists for a node without a sequence), the node
// is looked for by its UUID before any new create, and a failed search is
// retried, never skipped: one call never makes two nodes
// (Curator's findProtectedNodeInForeground). A persistent node found is
// ours whatever session made it; an ephemeral one only if the current
// session's. When the call gives up (ctx ends, retries run out, a lasting
// error) after such a create, or while a create is in flight, whatever it
// may have made is removed in the background (cleanupProtected,
// deleteEventually).
func (s *Session) createProtectedNode(ctx context.Context, c protectedCreate) (n ownNode, err error) {
	path := joinPath(c.dir, protectedName(c.uuid, c.name))
	uncertain := false // a create may have made a node we have not found
	defer func() {
		if err != nil && uncertain {
			s.cleanupProtected(c.dir, c.uuid)
		}
	}()
	bo := s.cfg.retry()
	for {
		n, err = s.tryCreateProtected(ctx, c, path, &uncertain)
		switch {
		case err == nil:
			return n, nil
		case err == zk.ErrNoNode && c.parents:
			if err = s.ensureParents(ctx, c.dir); err == nil {
				continue
			}
		case err == zk.ErrNodeExists && c.flags&zk.FlagSequence == 0:
			uncertain = true // our own create, retried: search at once
			continue
		}
		if cerr := ctx.Err(); cerr != nil {
			return ownNode{}, cerr
		}
		if !lostConnection(err) || errors.Is(err, ErrClosed) { // closed: no connection comes back
			return ownNode{}, err
		}
		if err := backOff(ctx, bo, "create "+s.rel(path), err); err != nil {
			return ownNode{}, err
		}
	}
}

// tryCreateProtected makes one attempt: once connected, it searches for
// the node first when *uncertain, then creates it. It sets *uncertain when
// the create's outcome is unknown, and clears it when a search found
// nothing of ours.
func (s *Session) tryCreateProtected(ctx context.Context, c protectedCreate, path string, uncertain *bool) (ownNode, error) {
	gen, _, err := s.awaitConnected(ctx)
	if err != nil {
		return ownNode{}, err
	}
	if *uncertain {
		n, found, err := s.findProtected(ctx, c.dir, c.uuid, c.ephemeral(), gen)
		switch {
		case err == zk.ErrNoNode: // no parent: nothing was made
		case err != nil:
			return ownNode{}, err
		case found:
			return n, nil
		}
		*uncertain = false
	}
	p, err := call(ctx, s, "create", path, func() (string, error) {
		return s.sendCreateFlags(path, c.data, c.flags, c.ttl)
	}, func(p string, err error) { // ctx ended while the create was in flight
		switch {
		case err != nil:
			s.cleanupProtected(c.dir, c.uuid)
		case c.ephemeral():
			s.own(p)
			s.deleteEventually(p, s.conn.SessionID())
		default:
			s.deleteEventually(p, 0)
		}
	})
	switch {
	case err == nil:
		if c.ephemeral() {
			s.own(p)
		}
		return ownNode{path: p, gen: gen}, nil
	case lostConnection(err):
		*uncertain = true
	}
	return ownNode{}, err
}

// findProtected looks under dir for the node carrying uuid, connected
// under gen: a persistent node (not ephemeral) is ours whatever session
// made it; an ephemeral one is adopted if gen's, and deleted if of an
// older session.
func (s *Session) findProtected(ctx context.Context, dir, uuid string, ephemeral bool, gen *generation) (ownNode, bool, error) {
	kids, err := s.children(ctx, dir)
	if err != nil {
		return ownNode{}, false, err
	}
	for _, k := range kids {
		if !strings.HasPrefix(k, protectedPrefix+uuid) {
			continue
		}
		p := joinPath(dir, k)
		if !ephemeral {
			return ownNode{path: p, gen: gen}, true, nil
		}
		st, err := s.exists(ctx, p)
		if err == zk.ErrNoNode {
			continue
		}
		if err != nil {
			return ownNode{}, false, err
		}
		if st.EphemeralOwner == gen.id {
			s.own(p)
			return ownNode{path: p, gen: gen}, true, nil
		}
		s.cfg.log.Warn("zkrecipes: deleting own node left by an older session", "path", p,
			"owner", fmt.Sprintf("0x%x", st.EphemeralOwner), "session", fmt.Sprintf("0x%x", gen.id))
		if err := s.delete(ctx, p); err != nil && err != zk.ErrNoNode {
			return ownNode{}, false, err
		}
	}
	return ownNode{}, false, nil
}

// cleanupProtected deletes, in the background, every node under dir
// carrying uuid: the trace of a create whose outcome is unknown (Curator's
// findAndDeleteProtectedNodeInBackground). It starts once that create is
// over, and keeps trying under the Session's retry policy (then once a
// second) until a listing shows no such node left, or the Session closes.
// An ephemeral node of a ZooKeeper session that has ended is gone already,
// so a listing on a new session finds nothing and ends it. The Tracer sees
// it as operation "cleanup" on dir/_c_<uuid>, with the error that ended it
// (nil when it succeeded).
func (s *Session) cleanupProtected(dir, uuid string) {
	s.goBackground(0, func(ctx context.Context) {
		start := time.Now()
		err := s.removeProtected(ctx, dir, uuid)
		switch {
		case err != nil && s.isClosed():
			err = ErrClosed // the session's ephemeral nodes end with it
		case err != nil:
			s.cfg.log.Warn("zkrecipes: clean-up of an abandoned create stopped", "dir", dir, "uuid", uuid, "err", err)
		}
		s.traceOnly(TraceEvent{Op: "cleanup", Path: joinPath(dir, protectedPrefix+uuid),
			Latency: time.Since(start), Err: err, SessionID: s.conn.SessionID()})
	})
}

// removeProtected is the loop of cleanupProtected. It returns nil once no
// node carrying uuid is left under dir.
func (s *Session) removeProtected(ctx context.Context, dir, uuid string) error {
	bo := s.cfg.retry()
	for {
		err := s.deleteProtected(ctx, dir, uuid)
		if err == nil || !isRetryable(err) {
			return err
		}
		if err := pace(ctx, bo); err != nil {
			return err
		}
	}
}

// deleteProtected lists dir once connected and deletes every child
// carrying uuid.
func (s *Session) deleteProtected(ctx context.Context, dir, uuid string) error {
	if _, _, err := s.awaitConnected(ctx); err != nil {
		return err
	}
	kids, err := s.children(ctx, dir)
	if err == zk.ErrNoNode {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if strings.HasPrefix(k, protectedPrefix+uuid) {
			if err := s.delete(ctx, joinPath(dir, k)); err != nil && err != zk.ErrNoNode {
				return err
			}
		}
	}
	return nil
}
