package zkrecipes

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

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
// A create whose reply was lost and that is retried then fails with
// NodeExists, and the node is looked for by its UUID the same way.
func (s *Session) createProtectedMode(ctx context.Context, dir, uuid, name string, data []byte, flags int32) (ownNode, error) {
	prefix := protectedName(uuid, name)
	bo := s.cfg.retry()
	for {
		gen, _, err := s.awaitConnected(ctx)
		if err != nil {
			return ownNode{}, err
		}
		p, err := s.create(ctx, joinPath(dir, prefix), data, flags)
		switch {
		case err == nil:
			s.own(p)
			return ownNode{path: p, gen: gen}, nil
		case err == zk.ErrNoNode:
			if err = s.ensureParents(ctx, dir); err == nil {
				continue
			}
		case errors.Is(err, zk.ErrConnectionClosed), err == zk.ErrNodeExists && flags&zk.FlagSequence == 0:
			if n, ok, ferr := s.findProtected(ctx, dir, uuid); ferr == nil && ok {
				return n, nil
			} else if ferr != nil {
				err = ferr
			}
		}
		if err := ctx.Err(); err != nil {
			// The create may have succeeded: make sure nothing is left.
			s.cleanupProtected(dir, uuid)
			return ownNode{}, err
		}
		if !isRetryable(err) && err != zk.ErrSessionExpired {
			return ownNode{}, fmt.Errorf("zkrecipes: create %s: %w", joinPath(dir, prefix), err)
		}
		d := bo.NextBackOff()
		if d == Stop {
			s.cleanupProtected(dir, uuid)
			return ownNode{}, fmt.Errorf("%w: create %s: %w", ErrRetriesExhausted, joinPath(dir, prefix), err)
		}
		if err := sleepCtx(ctx, d); err != nil {
			s.cleanupProtected(dir, uuid)
			return ownNode{}, err
		}
	}
}

// findProtected looks for the node carrying uuid under dir once the
// connection is back. A node owned by the current session is adopted; one
// owned by another session is deleted.
func (s *Session) findProtected(ctx context.Context, dir, uuid string) (ownNode, bool, error) {
	gen, _, err := s.awaitConnected(ctx)
	if err != nil {
		return ownNode{}, false, err
	}
	kids, err := s.children(ctx, dir)
	if err != nil {
		return ownNode{}, false, err
	}
	for _, k := range kids {
		if !strings.HasPrefix(k, protectedPrefix+uuid) {
			continue
		}
		p := joinPath(dir, k)
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

// cleanupProtected deletes, in the background, any node under dir carrying
// uuid: the trace of a create whose outcome is unknown.
func (s *Session) cleanupProtected(dir, uuid string) {
	s.goBackground(s.grantedTimeout(), func(ctx context.Context) {
		if _, _, err := s.awaitConnected(ctx); err != nil {
			return
		}
		kids, err := s.children(ctx, dir)
		if err != nil {
			return
		}
		for _, k := range kids {
			if strings.HasPrefix(k, protectedPrefix+uuid) {
				s.deleteEventually(joinPath(dir, k), 0)
			}
		}
	})
}
