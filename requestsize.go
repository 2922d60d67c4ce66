package zkrecipes

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// The size of the requests that write nodes (create, setData, multi),
// checked against the Session's limit (WithMaxRequestSize) before each is
// sent (writes.go), and when a recipe is made, for an error that names the
// recipe: no request is sent that a server would answer by closing the
// connection.
//
// A ZooKeeper server reads a request's length first and closes the
// connection when it exceeds jute.maxbuffer (ZooKeeper 3.8's
// NIOServerCnxn.readLength, "Len error"; the 4-byte length itself is not
// counted). The transaction a create becomes is larger than the request:
// servers before 3.6 refuse a proposal or a log entry above jute.maxbuffer
// too (ZOOKEEPER-3496), and a server restarting reads its log back under
// that limit. So the count covers the transaction, with a margin.

const (
	// defaultMaxRequest is ZooKeeper's default jute.maxbuffer, 0xfffff.
	defaultMaxRequest = 1<<20 - 1

	// clientMaxRequest is the largest request go-zookeeper can send: it
	// encodes each one, after its 4-byte length, into a 1536 KiB buffer,
	// and fails a larger one with zk.ErrShortBuffer.
	clientMaxRequest = 1536<<10 - 4

	// createOverhead is what a create counts beyond its path, data and ACL
	// entries. The request (RequestHeader and CreateRequest) has 24 bytes
	// besides them: xid, type, the lengths of path, data and ACL list, and
	// the flags. Its transaction has 61: TxnHeader (clientId, cxid, zxid,
	// time, type: 32), CreateTxn (the three lengths, ephemeral, the
	// parent's cversion: 17) and the digest 3.6+ servers append (12). The
	// rest is margin, for an identity the server puts in place of an
	// "auth" ACL entry that this package cannot see (a TLS client
	// certificate's, say).
	createOverhead = 128

	// aclEntryOverhead is what an ACL entry counts beyond its scheme and
	// id: its permissions and the two lengths.
	aclEntryOverhead = 12

	// digestIDHash is the length of the hash in a digest identity
	// ("user:" + base64 of a SHA-1).
	digestIDHash = 28

	// seqSuffix stands for the suffix the server appends to a sequential
	// node's name.
	seqSuffix = "0000000000"
)

// storedPath is path as the server stores a node created there with
// flags: with a sequential node's suffix.
func storedPath(path string, flags int32) string {
	if flags&zk.FlagSequence != 0 {
		return path + seqSuffix
	}
	return path
}

// createSize is what creating a node at path (absolute, as the server
// stores it: with a sequential node's suffix) with dataLen bytes of data
// counts against the request size limit.
func (s *Session) createSize(path string, dataLen int) int {
	return createOverhead + len(path) + dataLen + s.aclSize(toZKACL(s.cfg.acl))
}

// aclSize is what acl counts in a create or a setACL, as the server
// stores it.
func (s *Session) aclSize(acl []zk.ACL) int {
	n := 0
	for _, a := range acl {
		n += s.aclEntrySize(a.Scheme, a.ID)
	}
	return n
}

// aclEntrySize is what an ACL entry of a create counts, as the server
// stores it.
func (s *Session) aclEntrySize(scheme, id string) int {
	if scheme != "auth" {
		return aclEntryOverhead + len(scheme) + len(id)
	}
	// The server stores an "auth" entry as one entry per identity the
	// session authenticated as: the digest of each credential.
	n := 0
	for _, cred := range s.cfg.auth {
		user, _, _ := strings.Cut(cred, ":")
		n += aclEntryOverhead + len("digest") + len(user) + 1 + digestIDHash
	}
	return n
}

// setSize is what setting dataLen bytes of data on path counts: as a
// create without ACL, which covers it (the request has 20 bytes besides
// path and data, its transaction 56 with the digest).
func (s *Session) setSize(path string, dataLen int) int {
	return createOverhead + len(path) + dataLen
}

// multiSize is what a multi of ops counts, and the data it carries: each
// op as if sent alone (a delete or a version check as a create of its path
// without data or ACL), plus the headers of one more request. That covers
// the request (9 bytes of header per op and one more) and the transaction
// the server logs (a 48-byte header, and 8 bytes per op over the op's own
// transaction).
func (s *Session) multiSize(ops []any) (size, dataLen int) {
	size = createOverhead
	for _, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			size += s.setSize(storedPath(o.Path, o.Flags), len(o.Data)) + s.aclSize(o.Acl)
			dataLen += len(o.Data)
		case *zk.SetDataRequest:
			size += s.setSize(o.Path, len(o.Data))
			dataLen += len(o.Data)
		case *zk.DeleteRequest:
			size += s.setSize(o.Path, 0)
		case *zk.CheckVersionRequest:
			size += s.setSize(o.Path, 0)
		}
	}
	return size, dataLen
}

// maxRequest returns the Session's request size limit.
func (s *Session) maxRequest() int {
	if s.cfg.maxReq == 0 { // a Session not made by Connect or NewSession
		return defaultMaxRequest
	}
	return s.cfg.maxReq
}

// checkNodeData reports, as a *DataTooLargeError naming recipePath,
// whether data is too large to create any of nodes (absolute paths, as the
// server stores them) under the Session's request size limit.
func (s *Session) checkNodeData(recipePath string, data []byte, nodes ...string) error {
	fixed := 0 // the largest count of a node without its data
	for _, p := range nodes {
		fixed = max(fixed, s.createSize(p, 0))
	}
	return s.checkSize(recipePath, len(data), fixed+len(data))
}

// checkSize reports, as a *DataTooLargeError naming path, a request of
// size bytes (as counted here) carrying dataLen bytes of data that exceeds
// the Session's limit.
func (s *Session) checkSize(path string, dataLen, size int) error {
	limit := s.maxRequest()
	if size <= limit {
		return nil
	}
	return &DataTooLargeError{Path: path, Size: dataLen, Max: limit - (size - dataLen), Limit: limit}
}

// checkPathLength refuses a recipe path too long for any request naming
// it to fit in the Session's request size limit: a server answers such a
// request (a read too) by closing the connection. (A shorter path whose
// node could still not be created is left to the recipes' data checks,
// ErrDataTooLarge.)
func (s *Session) checkPathLength(path string) error {
	return s.checkPathSize(path, s.abs(path))
}

// checkRequestPath refuses a request naming abs (absolute) that cannot fit
// in the Session's request size limit, before it is sent: every request
// passes it (tracedCtx), so that a recipe given a path it did not check,
// or a name it appends (a discovery query's), costs no connection.
func (s *Session) checkRequestPath(abs string) error {
	return s.checkPathSize(s.rel(abs), abs)
}

func (s *Session) checkPathSize(path, abs string) error {
	if limit := s.maxRequest(); requestOverhead+len(abs) > limit {
		return &PathError{Path: path, Reason: fmt.Sprintf("%d bytes long: no request naming it fits in the "+
			"request size limit of %d bytes; use a shorter path", len(path), limit)}
	}
	return nil
}

// requestOverhead is what a request naming one path counts beyond it:
// xid, type, the path's length, a watch flag, with a margin.
const requestOverhead = 16

// checkConfigSizes refuses a namespace, ACL or digest credentials that by
// themselves exceed the request size limit: every request naming a node
// (or every create, or the authentication) would then be one the server
// answers by closing the connection.
func checkConfigSizes(cfg sessionConfig) error {
	s := &Session{cfg: cfg}
	limit := s.maxRequest()
	if ns := cfg.namespace; requestOverhead+len(ns) > limit {
		return &PathError{Path: ns, Reason: fmt.Sprintf("namespace: %d bytes long: no request naming a node under it "+
			"fits in the request size limit of %d bytes", len(ns), limit)}
	}
	if acl := s.createSize("", 0) - createOverhead; acl > limit {
		return invalidArg("an ACL of %d bytes exceeds the request size limit of %d bytes: no create could carry it", acl, limit)
	}
	for _, cred := range cfg.auth {
		if requestOverhead+len("digest")+4+len(cred) > limit { // the scheme and its length too
			user, _, _ := strings.Cut(cred, ":")
			return invalidArg("digest credentials of %d bytes (user %.40q) exceed the request size limit of %d bytes",
				len(cred), user, limit)
		}
	}
	return nil
}

// mostListed is the most children with protected names made for name
// (as protectedNode) that one getChildren reply can list within the
// Session's request size limit, which a Java client also applies to the
// replies it reads (jute.maxbuffer): a reply header and a count (20 bytes),
// then each name with its 4-byte length.
func (s *Session) mostListed(name string) int {
	return (s.maxRequest() - 20) / (4 + len(baseName(protectedNode("/", name))))
}

// protectedNode is the path, as the server stores it, of a node that
// createProtected makes in dir under name: the longest any such node has,
// "_c_" + UUID + "-" + name + a 10-digit sequence number. A read-write
// lock's downgraded read node, named with its writer's sequence number,
// has the same length.
func protectedNode(dir, name string) string {
	return joinPath(dir, protectedName("00000000-0000-0000-0000-000000000000", name)) + seqSuffix
}
