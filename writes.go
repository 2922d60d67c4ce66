package zkrecipes

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// The writes. Every create, setData and multi this module sends is one of
// the three methods below, the only code that calls the connection's write
// methods (TestEveryWriteGoesThroughTheSizeCheck fails otherwise), so that
// no recipe, present or future, skips what they do before sending:
//
//   - count the request against the Session's limit (WithMaxRequestSize,
//     requestsize.go) and refuse one past it with a *DataTooLargeError,
//     sending nothing: a server drops the connection for a request past its
//     jute.maxbuffer, which would put every lease of the Session in doubt,
//     and a keeper that sent it again would do so forever;
//   - send nil data as 0 bytes, never as null (data length -1): Curator
//     writes bytes (containers, members) and its readers fail on a null.
//
// They send as go-zookeeper does, synchronously: call them inside call,
// send or traced.

// sendCreate creates path with data and flags under the Session's ACL: a
// container when flags is zk.FlagContainer.
func (s *Session) sendCreate(path string, data []byte, flags int32) (string, error) {
	if err := s.checkWrite(path, len(data), s.createSize(storedPath(path, flags), len(data))); err != nil {
		return "", err
	}
	data = notNull(data)
	if flags == zk.FlagContainer {
		return s.conn.CreateContainer(path, data, flags, toZKACL(s.cfg.acl))
	}
	return s.conn.Create(path, data, flags, toZKACL(s.cfg.acl))
}

// sendCreateTTL creates path as a TTL node (flags zk.FlagTTL, with
// zk.FlagSequence for a sequential one) with data, under the Session's ACL.
func (s *Session) sendCreateTTL(path string, data []byte, flags int32, ttl time.Duration) (string, error) {
	if err := s.checkWrite(path, len(data), s.createSize(storedPath(path, flags), len(data))); err != nil {
		return "", err
	}
	p, err := s.conn.CreateTTL(path, notNull(data), flags, toZKACL(s.cfg.acl), ttl)
	return p, ttlRefusal(err)
}

// sendSetACL sets path's ACL if its ACL version is version (-1: any).
func (s *Session) sendSetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	if err := s.checkWrite(path, 0, s.setSize(path, 0)+s.aclSize(acl)); err != nil {
		return nil, err
	}
	return s.conn.SetACL(path, acl, version)
}

// sendSet sets path's data if its version is version (-1: any).
func (s *Session) sendSet(path string, data []byte, version int32) (*zk.Stat, error) {
	if err := s.checkWrite(path, len(data), s.setSize(path, len(data))); err != nil {
		return nil, err
	}
	return s.conn.Set(path, notNull(data), version)
}

// sendMulti runs ops (*zk.CreateRequest, *zk.SetDataRequest,
// *zk.DeleteRequest, *zk.CheckVersionRequest) in one transaction; path
// names it in a *DataTooLargeError. The ops are not modified.
func (s *Session) sendMulti(path string, ops ...any) ([]zk.MultiResponse, error) {
	size, dataLen := s.multiSize(ops)
	if err := s.checkWrite(path, dataLen, size); err != nil {
		return nil, err
	}
	sent := make([]any, len(ops))
	for i, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			c := *o
			c.Data = notNull(c.Data)
			op = &c
		case *zk.SetDataRequest:
			c := *o
			c.Data = notNull(c.Data)
			op = &c
		}
		sent[i] = op
	}
	return s.conn.Multi(sent...)
}

// checkWrite is checkSize for a write to path (absolute), naming the
// node under the namespace.
func (s *Session) checkWrite(path string, dataLen, size int) error {
	return s.checkSize(s.rel(path), dataLen, size)
}

// notNull returns data, or 0 bytes for nil (go-zookeeper sends nil as
// null).
func notNull(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}
