package zkrecipes

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The QueueSharder gets the bad-path, nil-session, nil-option and
// nil-context rows of TestEveryPublicCallRejectsBadInputWithATypedError:
// its queues path is the path under test, with a valid leader path.
var badSharder = recipeUnderTest{"QueueSharder", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
	var opts []SharderOption
	if nilOpt {
		opts = append(opts, nil)
	}
	sh := NewQueueSharder(s, path, "/sharder-leader", opts...)
	return map[string]func(context.Context) error{
		"Start":    func(ctx context.Context) error { return sh.Start(ctx) },
		"Take":     func(ctx context.Context) error { _, err := sh.Take(ctx); return err },
		"Put":      func(ctx context.Context) error { return sh.Put(ctx, []byte("x")) },
		"PutMulti": func(ctx context.Context) error { return sh.PutMulti(ctx, [][]byte{[]byte("x")}) },
	}
}}

func init() { badRecipes = append(badRecipes, badSharder) }

// Every bad policy, path or shard option is refused before any I/O, by
// Start and every other method, with a typed error that says what to fix.
func TestQueueSharder_BadPoliciesAndPathsAreTypedErrors(t *testing.T) {
	unused := &Session{} // never reached: validation comes first
	for _, row := range []struct {
		name          string
		queues, lead  string
		opts          []SharderOption
		want          error
		wantInMessage string
	}{
		{"zero threshold", "/q", "/l", []SharderOption{WithNewQueueThreshold(0)}, ErrInvalidArgument, "threshold must be positive"},
		{"negative threshold", "/q", "/l", []SharderOption{WithNewQueueThreshold(-5)}, ErrInvalidArgument, "threshold must be positive"},
		{"max queues 0", "/q", "/l", []SharderOption{WithMaxQueues(0)}, ErrInvalidArgument, "at least one queue"},
		{"max queues -1", "/q", "/l", []SharderOption{WithMaxQueues(-1)}, ErrInvalidArgument, "at least one queue"},
		{"zero check period", "/q", "/l", []SharderOption{WithThresholdCheckPeriod(0)}, ErrInvalidArgument, "period must be positive"},
		{"negative check period", "/q", "/l", []SharderOption{WithThresholdCheckPeriod(-time.Second)}, ErrInvalidArgument, "period must be positive"},
		{"bad leader path", "/q", "l", nil, ErrInvalidPath, ""},
		{"reserved leader path", "/q", "/zookeeper/l", nil, ErrInvalidPath, ""},
		{"bad lock path", "/q", "/l", []SharderOption{WithShardLockPath("/a//b")}, ErrInvalidPath, ""},
		{"leader path is the queues path", "/q", "/q", nil, ErrInvalidArgument, "must not be"},
		{"leader path under the queues path", "/q", "/q/leader", nil, ErrInvalidArgument, "must not be"},
		{"queues path under the leader path", "/l/q", "/l", nil, ErrInvalidArgument, "must not be"},
		{"lock path under the queues path", "/q", "/l", []SharderOption{WithShardLockPath("/q/locks")}, ErrInvalidArgument, "must not be"},
		{"lock path is the leader path", "/q", "/l", []SharderOption{WithShardLockPath("/l")}, ErrInvalidArgument, "must not be"},
		{"default lock path under the leader path", "/l/q", "/l", nil, ErrInvalidArgument, "must not be"},
		{"WithLockPath as a shard option", "/q", "/l", []SharderOption{WithShardOptions(WithLockPath("/x"))}, ErrInvalidArgument, "WithShardLockPath"},
		{"nil shard option", "/q", "/l", []SharderOption{WithShardOptions(nil)}, ErrInvalidArgument, "nil WorkQueueOption"},
		{"bad shard option", "/q", "/l", []SharderOption{WithShardOptions(WithMaxItems(0))}, ErrInvalidArgument, "WithMaxItems"},
	} {
		t.Run(row.name, func(t *testing.T) {
			ctx := context.Background()
			sh := NewQueueSharder(unused, row.queues, row.lead, row.opts...)
			calls := map[string]error{
				"Start": sh.Start(ctx),
				"Put":   sh.Put(ctx, []byte("x")),
			}
			_, calls["Take"] = sh.Take(ctx)
			_, calls["Queue"] = sh.Queue()
			for name, err := range calls {
				assert.ErrorIs(t, err, row.want, name)
				if err != nil {
					assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), err.Error())
					assert.Contains(t, err.Error(), row.wantInMessage, name)
				}
			}
			assert.NoError(t, sh.Close(ctx), "Close of a sharder that cannot start")
		})
	}
}

// A sharder is used after Start, and starts once: before Start its
// methods say so, and a Close before Start keeps Start from running.
func TestQueueSharder_UseBeforeStartAndStartAfterCloseAreTypedErrors(t *testing.T) {
	ctx := context.Background()
	sh := NewQueueSharder(&Session{}, "/q", "/l")
	_, err := sh.Queue()
	assert.ErrorIs(t, err, ErrSharderNotStarted)
	_, err = sh.Take(ctx)
	assert.ErrorIs(t, err, ErrSharderNotStarted)
	assert.ErrorIs(t, sh.Put(ctx, []byte("x")), ErrSharderNotStarted)
	assert.Nil(t, sh.Shards())

	assert.NoError(t, sh.Close(ctx))
	assert.NoError(t, sh.Close(ctx), "Close is idempotent")
	err = sh.Start(ctx)
	assert.ErrorIs(t, err, ErrSharderStarted)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = sh.Queue()
	assert.ErrorIs(t, err, ErrClosed)
	var nilCtx context.Context
	assert.ErrorIs(t, sh.Close(nilCtx), ErrInvalidArgument)
}

// The defaults are Curator's QueueSharderPolicies: 10,000 items, 30s, 10
// queues; the locks lie beside the queues path.
func TestQueueSharder_DefaultsAreCurators(t *testing.T) {
	sh := NewQueueSharder(&Session{}, "/jobs", "/jobs-leader")
	assert.NoError(t, sh.err)
	assert.Equal(t, 10000, sh.cfg.threshold)
	assert.Equal(t, 30*time.Second, sh.cfg.period)
	assert.Equal(t, 10, sh.cfg.maxQueues)
	assert.Equal(t, "/jobs-locks", sh.locks)
}
