package zkrecipes

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The size limit's count is checked against the bytes ZooKeeper counts,
// encoded here by hand from zookeeper.jute (ZooKeeper 3.8): the create
// request as a client sends it after its 4-byte length, and the
// transaction it becomes, which a server logs and sends its followers.

func juteInt(b []byte, v int32) []byte  { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func juteLong(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func juteBuf(b, v []byte) []byte        { return append(juteInt(b, int32(len(v))), v...) }
func juteString(b []byte, s string) []byte {
	return juteBuf(b, []byte(s))
}

func juteACL(b []byte, acl []zk.ACL) []byte {
	b = juteInt(b, int32(len(acl)))
	for _, a := range acl {
		b = juteInt(b, a.Perms)
		b = juteString(b, a.Scheme)
		b = juteString(b, a.ID)
	}
	return b
}

// createRequest is RequestHeader + CreateRequest; path is as sent (without
// a sequential node's suffix).
func createRequest(path string, data []byte, acl []zk.ACL, flags int32) []byte {
	b := juteInt(nil, 7)     // xid
	b = juteInt(b, opCreate) // type
	b = juteString(b, path)  // path
	b = juteBuf(b, data)     // data
	b = juteACL(b, acl)      // acl
	return juteInt(b, flags) // flags
}

// createTxn is TxnHeader + CreateTxn + TxnDigest; path is as stored, and
// acl as the server stores it ("auth" replaced by the session's
// identities).
func createTxn(path string, data []byte, acl []zk.ACL) []byte {
	b := juteLong(nil, 0x1234) // clientId
	b = juteInt(b, 7)          // cxid
	b = juteLong(b, 1<<40)     // zxid
	b = juteLong(b, 1<<41)     // time
	b = juteInt(b, opCreate)   // type
	b = juteString(b, path)
	b = juteBuf(b, data)
	b = juteACL(b, acl)
	b = append(b, 1)       // ephemeral
	b = juteInt(b, 3)      // parentCVersion
	b = juteInt(b, 2)      // digest version
	return juteLong(b, 99) // treeDigest
}

func sessionWith(opts ...SessionOption) *Session {
	cfg, err := buildConfig(opts)
	if err != nil {
		panic(err)
	}
	return &Session{cfg: cfg}
}

func TestCreateSizeCoversTheRequestAndItsTransaction(t *testing.T) {
	const dir = "/app/locks/a"
	data := []byte("some data")
	cases := []struct {
		name string
		opts []SessionOption
		// stored is the ACL as the server stores it.
		stored []ACL
	}{
		{"open ACL", nil, OpenACL()},
		{"two entries", []SessionOption{WithACL([]ACL{DigestACL("bob", "x", PermAll), {Perms: PermRead, Scheme: "world", ID: "anyone"}})},
			[]ACL{DigestACL("bob", "x", PermAll), {Perms: PermRead, Scheme: "world", ID: "anyone"}}},
		{"creator ACL, two credentials", []SessionOption{WithACL(CreatorACL()), WithDigestAuth("alice", "pw"), WithDigestAuth("a-much-longer-user-name", "pw2")},
			[]ACL{DigestACL("alice", "pw", PermAll), DigestACL("a-much-longer-user-name", "pw2", PermAll)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := sessionWith(c.opts...)
			sent := joinPath(dir, protectedName(newUUID(), "lock-"))
			stored := sent + "0000000042"
			got := s.createSize(protectedNode(dir, "lock-"), len(data))
			req := createRequest(sent, data, toZKACL(s.cfg.acl), zk.FlagEphemeral|zk.FlagSequence)
			txn := createTxn(stored, data, toZKACL(c.stored))
			assert.GreaterOrEqual(t, got, len(req), "the request as sent")
			assert.GreaterOrEqual(t, got, len(txn), "the transaction as logged and proposed")
			assert.LessOrEqual(t, got, len(txn)+128, "no more margin than createOverhead's")
		})
	}
}

func TestProtectedNodeHasTheLengthOfEveryNodeARecipeCreates(t *testing.T) {
	for _, name := range []string{"lock-", "latch-", semLeaseName, writeName, readName} {
		made := joinPath("/x/y", protectedName(newUUID(), name)) + fmt.Sprintf("%010d", 2147483647)
		assert.Len(t, protectedNode("/x/y", name), len(made), name)
	}
	assert.Equal(t, len(readName), len(writeName), "a downgraded read node is as long as a writer's")
}

func TestDataTooLargeErrorSaysWhatAndMatchesTheSentinel(t *testing.T) {
	s := sessionWith()
	err := s.checkNodeData("/locks/a", make([]byte, 2<<20), protectedNode("/locks/a", "lock-"))
	require.ErrorIs(t, err, ErrDataTooLarge)
	var e *DataTooLargeError
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "/locks/a", e.Path)
	assert.Equal(t, 2<<20, e.Size)
	assert.Equal(t, 1048575, e.Limit)
	assert.Equal(t, 1048575-s.createSize(protectedNode("/locks/a", "lock-"), 0), e.Max)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "zkrecipes: node data too large: 2097152 bytes at /locks/a"), msg)
	for _, want := range []string{"1048575", fmt.Sprint(e.Max), "jute.maxbuffer", "WithMaxRequestSize"} {
		assert.Contains(t, msg, want)
	}
	assert.Equal(t, strings.ToLower(msg[:30]), msg[:30])

	tiny := sessionWith(WithMaxRequestSize(100))
	err = tiny.checkNodeData("/locks/a", nil, protectedNode("/locks/a", "lock-"))
	require.True(t, errors.As(err, &e))
	assert.Negative(t, e.Max)
	assert.Contains(t, err.Error(), "the path and ACL alone exceed the request size limit of 100 bytes")
}

func TestMaxRequestSizeDefaultsToJuteMaxbufferAndIsCappedAtTheClients(t *testing.T) {
	assert.Equal(t, 1048575, sessionWith().maxRequest())
	assert.Equal(t, 1048575, (&Session{}).maxRequest())
	assert.Equal(t, 1500000, sessionWith(WithMaxRequestSize(1500000)).maxRequest())
	assert.Equal(t, clientMaxRequest, sessionWith(WithMaxRequestSize(8<<20)).maxRequest())
	assert.Equal(t, 1536*1024-4, clientMaxRequest)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, n := range []int{0, -1} {
		_, err := Connect(ctx, []string{"127.0.0.1:1"}, WithMaxRequestSize(n))
		assert.ErrorIs(t, err, ErrInvalidArgument, n)
	}
}

// recipeWithData makes one recipe with node data of n bytes.
type recipeWithData func(s *Session, n int) built

// built is a recipe's construction error and every one of its methods.
type built struct {
	err     error
	methods map[string]func(context.Context) error
}

var dataRecipes = map[string]recipeWithData{
	"Mutex": func(s *Session, n int) built {
		m := NewMutex(s, "/locks/a", WithNodeData(make([]byte, n)))
		return built{m.err, map[string]func(context.Context) error{
			"Acquire":      func(ctx context.Context) error { _, err := m.Acquire(ctx); return err },
			"TryAcquire":   func(ctx context.Context) error { _, err := m.TryAcquire(ctx); return err },
			"Participants": func(ctx context.Context) error { _, err := m.Participants(ctx); return err },
		}}
	},
	"RWMutex": func(s *Session, n int) built {
		rw := NewRWMutex(s, "/locks/a", WithNodeData(make([]byte, n)))
		return built{rw.err, map[string]func(context.Context) error{
			"WriteLock.Acquire":   func(ctx context.Context) error { _, err := rw.WriteLock().Acquire(ctx); return err },
			"ReadLock.TryAcquire": func(ctx context.Context) error { _, err := rw.ReadLock().TryAcquire(ctx); return err },
			"Participants":        func(ctx context.Context) error { _, err := rw.Participants(ctx); return err },
		}}
	},
	"Semaphore": func(s *Session, n int) built {
		sem := NewSemaphore(s, "/locks/a", 3, WithNodeData(make([]byte, n)))
		return built{sem.err, map[string]func(context.Context) error{
			"Acquire":    func(ctx context.Context) error { _, err := sem.Acquire(ctx, 2); return err },
			"TryAcquire": func(ctx context.Context) error { _, err := sem.TryAcquire(ctx, 1); return err },
		}}
	},
	"Semaphore with a shared count": func(s *Session, n int) built {
		sem := NewSemaphore(s, "/locks/a", 3, WithNodeData(make([]byte, n)), WithSharedCount("/counts/a"))
		return built{sem.err, map[string]func(context.Context) error{
			"Acquire": func(ctx context.Context) error { _, err := sem.Acquire(ctx, 1); return err },
		}}
	},
	"SemaphoreMutex": func(s *Session, n int) built {
		m := NewSemaphoreMutex(s, "/locks/a", WithNodeData(make([]byte, n)))
		return built{m.sem.err, map[string]func(context.Context) error{
			"Acquire":    func(ctx context.Context) error { _, err := m.Acquire(ctx); return err },
			"TryAcquire": func(ctx context.Context) error { _, err := m.TryAcquire(ctx); return err },
		}}
	},
	"MultiLock": func(s *Session, n int) built {
		ml := NewMultiLock(NewMutex(s, "/locks/b"), NewMutex(s, "/locks/a", WithNodeData(make([]byte, n))))
		return built{ml.err, map[string]func(context.Context) error{
			"Acquire":    func(ctx context.Context) error { _, err := ml.Acquire(ctx); return err },
			"TryAcquire": func(ctx context.Context) error { _, err := ml.TryAcquire(ctx); return err },
		}}
	},
	"Election": func(s *Session, n int) built {
		return election(s, n)
	},
	"Election/SelectorLayout": func(s *Session, n int) built {
		return election(s, n, WithLayout(SelectorLayout))
	},
	"PersistentNode": func(s *Session, n int) built {
		return persistentNode(s, n)
	},
	"PersistentNode/PersistentSequential": func(s *Session, n int) built {
		return persistentNode(s, n, WithCreateMode(ModePersistentSequential))
	},
	"GroupMember": func(s *Session, n int) built {
		g := NewGroupMember(s, "/groups/a", "member-1", make([]byte, n))
		return built{g.err, map[string]func(context.Context) error{
			"Start":       func(ctx context.Context) error { return g.Start(ctx) },
			"WaitInPlace": func(ctx context.Context) error { return g.WaitInPlace(ctx) },
			"SetData":     func(ctx context.Context) error { return g.SetData(ctx, make([]byte, n)) },
		}}
	},
}

func persistentNode(s *Session, n int, opts ...PersistentNodeOption) built {
	pn := NewPersistentNode(s, "/nodes/a", make([]byte, n), opts...)
	return built{pn.err, map[string]func(context.Context) error{
		"Start":       func(context.Context) error { return pn.Start(context.Background()) },
		"WaitInPlace": func(ctx context.Context) error { return pn.WaitInPlace(ctx) },
		"SetData":     func(ctx context.Context) error { return pn.SetData(ctx, make([]byte, n)) },
	}}
}

func election(s *Session, n int, opts ...ElectionOption) built {
	e := NewElection(s, "/locks/a", append(opts, WithParticipantID(strings.Repeat("x", n)))...)
	return built{e.err, map[string]func(context.Context) error{
		"Campaign":     func(ctx context.Context) error { _, err := e.Campaign(ctx); return err },
		"Resign":       func(ctx context.Context) error { return e.Resign(ctx) },
		"Leader":       func(ctx context.Context) error { _, err := e.Leader(ctx); return err },
		"Participants": func(ctx context.Context) error { _, err := e.Participants(ctx); return err },
		"Subscribe":    func(ctx context.Context) error { _, err := e.Subscribe(ctx); return err },
		"Run": func(ctx context.Context) error {
			return e.Run(ctx, func(context.Context, *Lease) error { return nil })
		},
	}}
}

// Data too large is refused by every method, before any ZooKeeper call
// (the Session has no connection: a call would panic), and the limit is
// exact: the most data the error says fits is accepted, one byte more is
// not, whatever the namespace, ACL and limit.
func TestEveryRecipeRefusesDataTooLargeBeforeAnyCall(t *testing.T) {
	sessions := map[string]*Session{
		"default":           sessionWith(),
		"namespace and ACL": sessionWith(WithNamespace("/some/namespace"), WithACL(CreatorACL()), WithDigestAuth("user", "pw")),
		"raised limit":      sessionWith(WithMaxRequestSize(1500000)),
		"lowered limit":     sessionWith(WithMaxRequestSize(4096)),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for sname, s := range sessions {
		for rname, r := range dataRecipes {
			t.Run(sname+"/"+rname, func(t *testing.T) {
				b := r(s, 4<<20)
				var e *DataTooLargeError
				require.True(t, errors.As(b.err, &e), "construction error %v", b.err)
				assert.Equal(t, 4<<20, e.Size)
				assert.Equal(t, s.maxRequest(), e.Limit)
				for m, call := range b.methods {
					err := callNoPanic(t, func() error { return call(ctx) })
					assert.ErrorIs(t, err, ErrDataTooLarge, m)
				}
				assert.ErrorIs(t, r(s, e.Max+1).err, ErrDataTooLarge, "one byte above the most that fits")
				assert.NoError(t, r(s, e.Max).err, "the most that fits")
			})
		}
	}
}

func TestMostListedLeasesAtTheDefaultLimit(t *testing.T) {
	s := &Session{}
	assert.Equal(t, 17475, s.mostListed(semLeaseName), "as the Semaphore.Acquire doc says")
	assert.Equal(t, 60, 4+len(baseName(protectedNode("/", semLeaseName))))
}
