package zkrecipes

import (
	"context"
	"strings"
	"time"
)

// WithNodeTTL sets the time to live of the node a PersistentNode keeps in
// a TTL mode (ModePersistentWithTTL, ModePersistentSequentialWithTTL): the
// server deletes the node once it has had no children and no change for
// ttl, and the PersistentNode, while it runs, creates it again. It must be
// between 1ms and 2^40-1 ms (ZooKeeper's bounds), and is refused with
// ErrInvalidArgument by Start with any other mode, as a TTL mode without
// it is. The servers must run with zookeeper.extendedTypesEnabled=true, or
// they refuse the create: WaitInPlace then returns ErrTTLUnsupported.
// Default: none.
func WithNodeTTL(ttl time.Duration) PersistentNodeOption {
	return func(c *persistentNodeConfig) {
		if ttl < time.Millisecond || ttl > maxTTL {
			c.err = invalidArg("ttl %v must be between 1ms and %v", ttl, maxTTL)
		}
		c.ttl = ttl
	}
}

// checkTTL checks the mode and the TTL together.
func (c persistentNodeConfig) checkTTL() error {
	_, isTTL := createFlags(c.mode)
	switch {
	case isTTL && c.ttl == 0:
		return invalidArg("%v needs WithNodeTTL", c.mode)
	case !isTTL && c.ttl != 0:
		return invalidArg("WithNodeTTL needs a TTL mode (ModePersistentWithTTL, ModePersistentSequentialWithTTL), not %v", c.mode)
	}
	return nil
}

// createKept makes one create of the node a PersistentNode keeps, in
// mode m (with ttl in a TTL mode); as create, a node made after the
// caller gave up is deleted in the background.
func (s *Session) createKept(ctx context.Context, path string, data []byte, m CreateMode, ttl time.Duration) (string, error) {
	flags, isTTL := createFlags(m)
	if !isTTL {
		return s.create(ctx, path, data, flags)
	}
	return call(ctx, s, "create", path, func() (string, error) {
		return s.sendCreateTTL(path, data, flags, ttl)
	}, func(p string, err error) {
		if err == nil {
			s.deleteEventually(p, 0) // a TTL node is persistent
		}
	})
}

// ttlRefusal types a server's refusal of a TTL create: go-zookeeper has no
// error for UNIMPLEMENTED (-6), which a server with extended types off
// answers, and reports it as "unknown error: -6".
func ttlRefusal(err error) error {
	if err != nil && strings.HasSuffix(err.Error(), "error: -6") {
		return &alsoErr{ErrTTLUnsupported, err}
	}
	return err
}

// alsoErr is kind, also matching cause.
type alsoErr struct{ kind, cause error }

func (e *alsoErr) Error() string        { return e.kind.Error() + " (" + e.cause.Error() + ")" }
func (e *alsoErr) Is(target error) bool { return target == e.kind }
func (e *alsoErr) Unwrap() error        { return e.cause }
