package zkrecipes

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The one place every write passes: a write past the Session's limit is
// refused before it is sent. The Sessions here have no connection, so a
// write that was sent would panic.

const (
	opDelete  = 2
	opSetData = 5
	opCheck   = 13
	opMulti   = 14
)

func TestWritesPastTheLimitAreRefusedBeforeSending(t *testing.T) {
	for name, s := range map[string]*Session{
		"default":           sessionWith(),
		"namespace and ACL": sessionWith(WithNamespace("/ns"), WithACL(CreatorACL()), WithDigestAuth("user", "pw")),
		"lowered limit":     sessionWith(WithMaxRequestSize(4096)),
	} {
		t.Run(name, func(t *testing.T) {
			limit := s.maxRequest()
			big := make([]byte, limit)
			path := s.abs("/app/node")
			refused := func(what string, size int, err error) *DataTooLargeError {
				t.Helper()
				var e *DataTooLargeError
				require.True(t, errors.As(err, &e), "%s: %v", what, err)
				require.ErrorIs(t, err, ErrDataTooLarge)
				assert.Equal(t, "/app/node", e.Path, "%s: the path under the namespace", what)
				assert.Equal(t, size, e.Size, what)
				assert.Equal(t, limit, e.Limit, what)
				assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: node data too large: "), err.Error())
				return e
			}
			for _, flags := range []int32{0, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeral | zk.FlagSequence, zk.FlagContainer} {
				_, err := callNoPanicV(t, func() (string, error) { return s.sendCreate(path, big, flags) })
				e := refused("create", len(big), err)
				stored := path
				if flags&zk.FlagSequence != 0 {
					stored += "0000000042"
				}
				assert.Equal(t, limit-s.createSize(stored, 0), e.Max, "flags %d: the same count as the recipes' check", flags)
				assert.NoError(t, s.checkWrite(path, e.Max, s.createSize(stored, e.Max)), "the most that fits")
			}
			_, err := callNoPanicV(t, func() (*zk.Stat, error) { return s.sendSet(path, big, -1) })
			refused("setData", len(big), err)

			// A multi counts all its ops: two that fit alone do not together.
			half := make([]byte, limit/2)
			_, err = callNoPanicV(t, func() ([]zk.MultiResponse, error) {
				return s.sendMulti(path,
					&zk.SetDataRequest{Path: path, Data: half, Version: -1},
					&zk.CreateRequest{Path: path + "/c", Data: half, Acl: toZKACL(s.cfg.acl)},
					&zk.DeleteRequest{Path: path, Version: -1})
			})
			refused("multi", 2*len(half), err)
		})
	}
}

// callNoPanicV runs f and fails the test, instead of crashing it, if f
// panics (as sending on a Session without a connection does).
func callNoPanicV[T any](t *testing.T, f func() (T, error)) (v T, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("the write was sent (panicked on the missing connection): %v", r)
		}
	}()
	return f()
}

// Through the request helpers too, whatever the caller: a refused write
// reaches no server and is reported as the helper's error.
func TestRequestHelpersReturnDataTooLarge(t *testing.T) {
	s := sessionWith()
	s.closedCh = make(chan struct{})
	ctx := context.Background()
	big := make([]byte, s.maxRequest())
	_, err := s.create(ctx, "/a", big, zk.FlagEphemeral)
	assert.ErrorIs(t, err, ErrDataTooLarge, "create")
	assert.ErrorIs(t, s.createShared(ctx, "/a", big, true), ErrDataTooLarge, "createShared")
	_, err = s.setVersioned(ctx, "/a", big, -1)
	assert.ErrorIs(t, err, ErrDataTooLarge, "setData")
	_, err = s.multi(ctx, "/a", &zk.SetDataRequest{Path: "/a", Data: big, Version: -1})
	assert.ErrorIs(t, err, ErrDataTooLarge, "multi")
}

func juteBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// txnHeader is a TxnHeader of type op.
func txnHeader(op int32) []byte {
	b := juteLong(nil, 0x1234) // clientId
	b = juteInt(b, 7)          // cxid
	b = juteLong(b, 1<<40)     // zxid
	b = juteLong(b, 1<<41)     // time
	return juteInt(b, op)
}

func txnDigest(b []byte) []byte { return juteLong(juteInt(b, 2), 99) }

// setDataBody is a SetDataRequest's, or SetDataTxn's, fields.
func setDataBody(b []byte, path string, data []byte) []byte {
	return juteInt(juteBuf(juteString(b, path), data), -1)
}

// createBody is CreateTxn's fields.
func createTxnBody(b []byte, path string, data []byte, acl []zk.ACL) []byte {
	b = juteACL(juteBuf(juteString(b, path), data), acl)
	return juteInt(juteBool(b, true), 3)
}

// The count of a setData and of a multi covers the request as sent and
// the transaction the server logs, as the count of a create does
// (TestCreateSizeCoversTheRequestAndItsTransaction).
func TestSetAndMultiSizesCoverTheRequestAndItsTransaction(t *testing.T) {
	s := sessionWith(WithACL(CreatorACL()), WithDigestAuth("alice", "pw"))
	stored := toZKACL([]ACL{DigestACL("alice", "pw", PermAll)})
	path := "/app/locks/a/" + protectedName(newUUID(), "lock-") + "0000000007"
	data := []byte("some data")

	got := s.setSize(path, len(data))
	req := setDataBody(juteInt(juteInt(nil, 7), opSetData), path, data)
	txn := txnDigest(setDataBody(txnHeader(opSetData), path, data))
	assert.GreaterOrEqual(t, got, len(req), "setData: the request as sent")
	assert.GreaterOrEqual(t, got, len(txn), "setData: the transaction")

	// A multi of a create, a setData, a version check and a delete.
	dir := "/app/locks/a"
	sent := dir + "/" + protectedName(newUUID(), "lock-")
	ops := []any{
		&zk.CreateRequest{Path: sent, Data: data, Acl: toZKACL(s.cfg.acl), Flags: zk.FlagEphemeral | zk.FlagSequence},
		&zk.SetDataRequest{Path: path, Data: data, Version: -1},
		&zk.CheckVersionRequest{Path: dir, Version: 3},
		&zk.DeleteRequest{Path: path, Version: -1},
	}
	size, dataLen := s.multiSize(ops)
	assert.Equal(t, 2*len(data), dataLen)
	header := func(b []byte, op int32, done bool) []byte { return juteInt(juteBool(juteInt(b, op), done), -1) }
	req = juteInt(juteInt(nil, 7), opMulti)
	req = header(req, opCreate, false)
	req = juteInt(juteACL(juteBuf(juteString(req, sent), data), toZKACL(s.cfg.acl)), zk.FlagEphemeral|zk.FlagSequence)
	req = setDataBody(header(req, opSetData, false), path, data)
	req = juteInt(juteString(header(req, opCheck, false), dir), 3)
	req = juteInt(juteString(header(req, opDelete, false), path), -1)
	req = header(req, -1, true)
	txn = juteInt(txnHeader(opMulti), 4)
	for _, op := range []struct {
		typ  int32
		body []byte
	}{
		{opCreate, createTxnBody(nil, sent+"0000000042", data, stored)},
		{opSetData, setDataBody(nil, path, data)},
		{opCheck, juteInt(juteString(nil, dir), 3)},
		{opDelete, juteString(nil, path)},
	} {
		txn = juteBuf(juteInt(txn, op.typ), op.body)
	}
	txn = txnDigest(txn)
	assert.GreaterOrEqual(t, size, len(req), "multi: the request as sent")
	assert.GreaterOrEqual(t, size, len(txn), "multi: the transaction")
}
