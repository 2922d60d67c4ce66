package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestPersistentNode_TTLModeAndTTLOptionAreCheckedTogether(t *testing.T) {
	unused := &Session{} // never reached: validation comes first
	for name, opts := range map[string][]PersistentNodeOption{
		"TTL mode without WithNodeTTL":  {WithCreateMode(ModePersistentWithTTL)},
		"sequential TTL mode, no TTL":   {WithCreateMode(ModePersistentSequentialWithTTL)},
		"WithNodeTTL with an ephemeral": {WithNodeTTL(time.Minute)},
		"WithNodeTTL with a container":  {WithCreateMode(ModeContainer), WithNodeTTL(time.Minute)},
		"TTL below 1ms":                 {WithCreateMode(ModePersistentWithTTL), WithNodeTTL(time.Microsecond)},
		"TTL past ZooKeeper's 40 bits":  {WithCreateMode(ModePersistentWithTTL), WithNodeTTL(maxTTL + time.Millisecond)},
		"mode past the TTL modes":       {WithCreateMode(ModePersistentSequentialWithTTL + 1)},
	} {
		if err := NewPersistentNode(unused, "/a", nil, opts...).Start(context.Background()); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: Start = %v, want ErrInvalidArgument", name, err)
		}
	}
	for _, bad := range []time.Duration{0, -time.Second, maxTTL + time.Millisecond} {
		if err := NewPersistentTtlNode(unused, "/a", bad, nil).Start(context.Background()); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("PersistentTtlNode(ttl %v).Start = %v, want ErrInvalidArgument", bad, err)
		}
	}
	if err := NewPersistentTtlNode(nil, "/a", time.Minute, nil).Start(context.Background()); !errors.Is(err, ErrNilSession) {
		t.Errorf("PersistentTtlNode(nil session).Start = %v", err)
	}
	if err := NewPersistentTtlNode(unused, "/", time.Minute, nil).Close(context.Background()); err != nil {
		t.Errorf("Close of a node with bad arguments: %v", err)
	}
	closed := NewPersistentTtlNode(unused, "/a", time.Minute, nil)
	if err := closed.Close(context.Background()); err != nil {
		t.Errorf("Close of a node never started: %v", err)
	}
	if err := closed.Start(context.Background()); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNodeStarted) {
		t.Errorf("Start after Close = %v, want ErrClosed and ErrNodeStarted", err)
	}
}

func TestTTLRefusal_TypesTheServersUnimplementedAnswer(t *testing.T) {
	// go-zookeeper's text for the code a server with extended types off
	// answers a TTL create with (seen from ZooKeeper 3.8).
	err := ttlRefusal(fmt.Errorf("unknown error: %v", -6))
	if !errors.Is(err, ErrTTLUnsupported) || !refused(err) {
		t.Fatalf("%v: want ErrTTLUnsupported, a refusal no retry mends", err)
	}
	other := errors.New("zk: node already exists")
	if ttlRefusal(other) != other || ttlRefusal(nil) != nil {
		t.Fatal("other errors pass unchanged")
	}
}

func TestNodeCache_TakesOnlyTheCompressionAndNameOptions(t *testing.T) {
	unused := &Session{}
	ctx := context.Background()
	for name, o := range map[string]TreeCacheOption{
		"WithMaxDepth": WithMaxDepth(1), "WithPathFilter": WithPathFilter(func(string) bool { return true }),
		"nil": nil,
	} {
		if err := NewNodeCache(unused, "/a", o).Start(ctx); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NodeCache(%s).Start = %v, want ErrInvalidArgument", name, err)
		}
	}
	if c := NewNodeCache(unused, "/a", WithCacheCompression(true)); c.err != nil || !c.compress {
		t.Fatalf("WithCacheCompression(true): err %v, compress %v", c.err, c.compress)
	}
	if c := NewNodeCache(unused, "/a", WithName("cfg")); c.err != nil || c.name != "cfg" {
		t.Fatalf("WithName: err %v, name %q", c.err, c.name)
	}
}

func TestCompressionDefaults_OffUnlessTheSessionOrTheRecipeSaysSo(t *testing.T) {
	off, on := &Session{}, &Session{cfg: sessionConfig{compress: true}}
	if NewNodeCache(off, "/a").compress || !NewNodeCache(on, "/a").compress || NewNodeCache(on, "/a", WithCacheCompression(false)).compress {
		t.Error("NodeCache")
	}
	if NewSharedValue(off, "/a", nil).compress || !NewSharedValue(on, "/a", nil).compress || !NewSharedValue(off, "/a", nil, WithValueCompression(true)).compress {
		t.Error("SharedValue")
	}
	if NewSharedCount(on, "/a", 1).v.compress {
		t.Error("SharedCount must keep Curator's 4-byte format")
	}
	if err := NewSharedValue(off, "/a", nil, nil).err; !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil SharedValueOption: %v", err)
	}
	var sc sessionConfig
	WithCompression(true)(&sc)
	if !sc.compress || defaultSessionConfig().compress {
		t.Error("WithCompression / default")
	}
}
