package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// OpKind says what an Op of a transaction does.
type OpKind int

// The kinds of Op.
const (
	OpCheck OpKind = iota + 1
	OpCreate
	OpSet
	OpDelete
)

func (k OpKind) String() string {
	switch k {
	case OpCheck:
		return "check"
	case OpCreate:
		return "create"
	case OpSet:
		return "setData"
	case OpDelete:
		return "delete"
	}
	return fmt.Sprintf("OpKind(%d)", int(k))
}

// Op is one operation of a transaction (Session.Multi), made by CheckOp,
// CreateOp, SetOp, DeleteOp or Lease.Check. Its path is relative to the
// namespace of the Session that runs it, but for Lease.Check's, which
// names the lease's own node wherever it runs. An Op holding bad input
// (an invalid path, an option its kind does not take) makes Multi fail
// with that error before anything is sent. The zero Op is invalid.
type Op struct {
	kind  OpKind
	path  string // as given
	abs   string // Lease.Check's: the lease's node, absolute
	data  []byte
	cfg   nodeConfig
	lease bool
	item  bool   // a WorkItem.Check
	uuid  string // a protected create's
	err   error
}

// Kind returns what the op does.
func (o Op) Kind() OpKind { return o.kind }

// Path returns the op's path, as given (for Lease.Check, the lease's node
// relative to its Session's namespace).
func (o Op) Path() string { return o.path }

func newOp(kind OpKind, path string, data []byte, opts []NodeOption, takes ...string) Op {
	o := Op{kind: kind, path: path, data: append([]byte(nil), data...)}
	if o.err = validatePath(path); o.err == nil {
		o.cfg, o.err = buildNodeConfig(kind.String()+" op", opts, takes...)
	}
	return o
}

// CheckOp is an op that succeeds only while the node at path exists, and
// with WithVersion(v) only while its data version is v. It changes
// nothing: it makes the transaction conditional.
func CheckOp(path string, opts ...NodeOption) Op {
	return newOp(OpCheck, path, nil, opts, "WithVersion")
}

// CreateOp is an op that creates the node at path holding data (nil: 0
// bytes) under the Session's ACL, as Create does, in a persistent or
// ephemeral mode, sequential or not (WithMode; containers and TTL nodes
// are made with Create alone). With WithProtection its name carries a
// UUID, as Create's, which lets Multi tell whether a transaction whose
// reply was lost was applied.
func CreateOp(path string, data []byte, opts ...NodeOption) Op {
	o := newOp(OpCreate, path, data, opts, "WithMode", "WithProtection")
	if o.err == nil && o.cfg.mode > ModePersistentSequential {
		o.err = invalidArg("a transaction cannot create a %v node; use Create", o.cfg.mode)
	}
	return o
}

// SetOp is an op that writes data (nil: 0 bytes) to the node at path, with
// WithVersion(v) only while its data version is v.
func SetOp(path string, data []byte, opts ...NodeOption) Op {
	return newOp(OpSet, path, data, opts, "WithVersion")
}

// DeleteOp is an op that deletes the node at path, with WithVersion(v)
// only while its data version is v.
func DeleteOp(path string, opts ...NodeOption) Op {
	return newOp(OpDelete, path, nil, opts, "WithVersion")
}

// OpResult is the result of one op of a transaction.
type OpResult struct {
	Kind OpKind
	// Path is the op's node relative to the Session's namespace: for a
	// create, the path the server gave it ("" for an unprotected
	// sequential create of a transaction found applied after its reply
	// was lost).
	Path string
	// Stat is a set's node's new Stat; nil for the other kinds, and for a
	// set of a transaction found applied after its reply was lost.
	Stat *NodeStat
	// Err is nil when the transaction was applied. When it was not, it
	// is the error of the op that failed (ErrNoNode, ErrNodeExists,
	// ErrBadVersion, ErrNotEmpty...; for a Lease.Check, also ErrLockLost)
	// for that op, and ErrTxnAborted for the others.
	Err error
}

// ErrTxnAborted is the OpResult.Err of each op of a transaction that was
// not applied because another of its ops failed.
var ErrTxnAborted = errors.New("zkrecipes: op not applied: another op of the transaction failed")

// Multi runs ops as one transaction: ZooKeeper applies them all, in order,
// or none. Paths are relative to the Session's namespace (a Lease.Check
// names its lease's node). On success it returns one OpResult per op, in
// order, and nil. When an op fails, nothing is applied: it returns the
// results (each with its Err) and an error naming the failing op that
// matches its OpResult.Err (ErrBadVersion...; for a Lease.Check on a lost
// lease, ErrLockLost and ErrNoNode).
//
// When its reply is lost with the connection, Multi finds out, once
// connected again, whether the transaction was applied if it holds a
// protected CreateOp (WithProtection) or a versioned SetOp or DeleteOp
// alone on its path: applied, it returns the results (OpResult says what
// they lack); not applied, it sends it again under the Session's retry
// policy. Otherwise, or when ctx ends while it is on its way, it returns
// an error matching ErrOutcomeUnknown and its cause: it may have been
// applied. It fails before sending with
// ErrInvalidArgument (no op, a nil ctx, an invalid Op), ErrInvalidPath,
// ErrDataTooLarge, ErrNilSession or ErrClosed.
func (s *Session) Multi(ctx context.Context, ops ...Op) ([]OpResult, error) {
	if s == nil {
		return nil, ErrNilSession
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	if len(ops) == 0 {
		return nil, invalidArg("a transaction of no op")
	}
	reqs := make([]any, len(ops))
	ops = append([]Op(nil), ops...)
	for i := range ops {
		o := &ops[i]
		switch {
		case o.kind == 0:
			return nil, invalidArg("op %d: the zero Op", i)
		case o.err != nil:
			return nil, fmt.Errorf("op %d (%s %s): %w", i, o.kind, o.path, o.err)
		}
		if o.abs == "" {
			o.abs = s.abs(o.path)
			if err := s.checkPathLength(o.path); err != nil {
				return nil, err
			}
		}
		reqs[i] = s.opRequest(o)
	}
	size, dataLen := s.multiSize(reqs)
	if err := s.checkWrite(ops[0].abs, dataLen, size); err != nil {
		return nil, err // before waiting for a connection (sendMulti checks again)
	}
	bo := s.cfg.retry()
	for {
		sent, _, err := s.awaitConnected(ctx)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return nil, err
		}
		res, err := s.multi(ctx, ops[0].abs, reqs...)
		switch {
		case err == ErrClosed: // closed before it was sent
			return nil, err
		case err == nil:
			return s.opResults(ops, res), nil
		case len(res) == len(ops) && !replyLost(ctx, err):
			return s.failedResults(ops, res, err)
		case !replyLost(ctx, err):
			return nil, s.nodeErr("multi", ops[0].abs, err)
		}
		unknown := outcomeUnknown("multi", s.rel(ops[0].abs), err)
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return nil, unknown
		}
		applied, notApplied := s.settleMulti(ctx, ops, sent)
		switch {
		case applied != nil:
			return applied, nil
		case !notApplied:
			return nil, unknown
		}
		if err := backOff(ctx, bo, "", unknown); err != nil {
			if ctx.Err() != nil {
				return nil, unknown
			}
			return nil, err
		}
	}
}

// opRequest is o as go-zookeeper's request; a protected create gets its
// name (and o its UUID).
func (s *Session) opRequest(o *Op) any {
	v := o.cfg.version
	switch o.kind {
	case OpCheck:
		return &zk.CheckVersionRequest{Path: o.abs, Version: v}
	case OpSet:
		return &zk.SetDataRequest{Path: o.abs, Data: o.data, Version: v}
	case OpDelete:
		return &zk.DeleteRequest{Path: o.abs, Version: v}
	}
	p := o.abs
	if o.cfg.protected {
		o.uuid = newUUID()
		p = joinPath(parentPath(p), protectedName(o.uuid, baseName(p)))
	}
	return &zk.CreateRequest{Path: p, Data: o.data, Acl: toZKACL(s.cfg.acl), Flags: o.cfg.mode.flags()}
}

// opResults are the results of an applied transaction.
func (s *Session) opResults(ops []Op, res []zk.MultiResponse) []OpResult {
	out := make([]OpResult, len(ops))
	for i, o := range ops {
		out[i] = OpResult{Kind: o.kind, Path: s.rel(o.abs)}
		if i >= len(res) {
			continue
		}
		switch o.kind {
		case OpCreate:
			out[i].Path = s.rel(res[i].String)
			if o.cfg.mode.ephemeral() {
				s.own(res[i].String)
			}
		case OpSet:
			out[i].Stat = newNodeStat(res[i].Stat)
		case OpDelete:
			s.disown(o.abs)
		}
	}
	return out
}

// failedResults are the results of a transaction the server refused, and
// the error of the op that failed.
func (s *Session) failedResults(ops []Op, res []zk.MultiResponse, err error) ([]OpResult, error) {
	out := make([]OpResult, len(ops))
	var first error
	for i, o := range ops {
		out[i] = OpResult{Kind: o.kind, Path: s.rel(o.abs), Err: ErrTxnAborted}
		e := res[i].Error
		if first != nil || e == nil || strings.HasPrefix(e.Error(), "unknown error") {
			continue // applied before the failure (0), or not tried (RUNTIMEINCONSISTENCY)
		}
		e = s.nodeErr(o.kind.String(), o.abs, s.refusal(o.kind.String(), o.abs, e))
		if o.lease && errors.Is(e, ErrNoNode) {
			e = fmt.Errorf("%w: the lease's node is gone: %w", ErrLockLost, e)
		}
		if o.item && (errors.Is(e, ErrNoNode) || errors.Is(e, ErrBadVersion)) {
			e = fmt.Errorf("%w: %w", ErrItemLost, e)
		}
		out[i].Err = e
		first = fmt.Errorf("zkrecipes: multi: op %d: %w", i, e)
	}
	if first == nil {
		first = s.nodeErr("multi", ops[0].abs, err)
	}
	return out, first
}

// settleMulti tells, once connected again, whether a transaction sent
// under the ZooKeeper session sent, whose reply was lost, was applied (its
// results) or not (notApplied); neither when nothing read can tell. A read
// cut off by another lost connection is tried again, under the Session's
// retry policy, until ctx ends.
func (s *Session) settleMulti(ctx context.Context, ops []Op, sent *generation) (applied []OpResult, notApplied bool) {
	_ = s.retryConnLoss(ctx, "", func() (err error) {
		applied, notApplied, err = s.settleMultiOnce(ctx, ops, sent)
		return err
	})
	return applied, notApplied
}

// settleMultiOnce is one attempt of settleMulti; err is a read's error
// that left the answer open.
func (s *Session) settleMultiOnce(ctx context.Context, ops []Op, sent *generation) (applied []OpResult, notApplied bool, err error) {
	gen, _, err := s.awaitConnected(ctx)
	if err != nil {
		return nil, false, err
	}
	if err := s.sync(ctx, ops[0].abs); err != nil {
		return nil, false, err
	}
	touched := map[string]int{} // how many ops name each path
	for _, o := range ops {
		touched[o.abs]++
	}
	found := map[int]string{}
	for i, o := range ops {
		switch {
		case o.kind == OpCreate && o.cfg.protected:
			p, err := s.findUUID(ctx, parentPath(o.abs), o.uuid)
			switch {
			case err == nil && p != "":
				found[i] = p // any node of ours: only this transaction made it
			case (err == zk.ErrNoNode || err == nil) && (!o.cfg.mode.ephemeral() || gen.id == sent.id):
				// The creates of a transaction are applied with it; an
				// ephemeral node proves nothing by its absence once the
				// session that made it has ended.
				return nil, true, nil
			default:
				return nil, false, err
			}
		case (o.kind == OpSet || o.kind == OpDelete) && o.cfg.version != -1 && touched[o.abs] == 1:
			// (Only an op alone on its path: a transaction that also deletes
			// and creates the node again leaves it at version 0.)
			st, err := s.exists(ctx, o.abs)
			switch {
			case err == nil && st.Version == o.cfg.version:
				return nil, true, nil // the write would have moved the version on
			case err != nil && isRetryable(err):
				return nil, false, err
			}
		}
	}
	if len(found) == 0 {
		return nil, false, nil
	}
	out := make([]OpResult, len(ops))
	for i, o := range ops {
		out[i] = OpResult{Kind: o.kind, Path: s.rel(o.abs)}
		if p, ok := found[i]; ok {
			out[i].Path = s.rel(p)
		} else if o.kind == OpCreate && o.cfg.mode.sequential() {
			out[i].Path = "" // its name is not known
		}
	}
	return out, false, nil
}

// findUUID returns the path of the child of dir whose name carries uuid,
// or "" when there is none.
func (s *Session) findUUID(ctx context.Context, dir, uuid string) (string, error) {
	kids, err := s.children(ctx, dir)
	if err != nil {
		return "", err
	}
	for _, k := range kids {
		if strings.HasPrefix(k, protectedPrefix+uuid) {
			return joinPath(dir, k), nil
		}
	}
	return "", nil
}
