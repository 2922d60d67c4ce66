package zkrecipes

// The options of the queues: WorkQueue (WorkQueueOption), its puts
// (PutOption) and QueueSharder (SharderOption). The Session's and the
// other recipes' options are in options.go.

import (
	"time"
)

// WorkQueueOption configures a WorkQueue (NewWorkQueue).
type WorkQueueOption func(*workQueueConfig)

type workQueueConfig struct {
	lockPath string // "" until given
	maxItems int    // 0: unbounded
	delays   bool   // WithDelayOrder
	err      error
}

// WithLockPath sets the path under which a WorkQueue locks the items it
// takes: one ephemeral node per item, named as the item. Curator's
// DistributedQueue consumers that share the queue must be built with the
// same path (QueueBuilder.lockPath). The default is the queue's path with
// "-locks" appended ("/jobs" locks under "/jobs-locks"). It must not be
// the queue's path nor lie under it.
func WithLockPath(path string) WorkQueueOption {
	return func(c *workQueueConfig) {
		if err := validatePath(path); err != nil {
			c.err = err
			return
		}
		c.lockPath = path
	}
}

// WithMaxItems bounds the queue: Put and PutMulti wait, until ctx ends,
// while the queue's path has n children or more (Curator's
// QueueBuilder.maxItems). The bound is soft, as Curator's: producers that
// see room at the same time may all put. The default is no bound; n must
// be positive.
func WithMaxItems(n int) WorkQueueOption {
	return func(c *workQueueConfig) {
		if n <= 0 {
			c.err = invalidArg("WithMaxItems(%d): the bound must be positive", n)
			return
		}
		c.maxItems = n
	}
}

// WithDelayOrder makes a WorkQueue's consumers honour the delays of items
// put WithDelayUntil, as Curator's DistributedDelayQueue does: Take takes
// the items that are due, earliest due first, and waits for the first
// item that is not. An item with no delay in its name is due at once.
// The default is Curator's DistributedQueue order, delays ignored: items
// by name, less any id or due time in it (as Curator's DistributedIdQueue
// orders them), so in the order put but for priorities.
func WithDelayOrder() WorkQueueOption {
	return func(c *workQueueConfig) { c.delays = true }
}

// SharderOption configures a QueueSharder (NewQueueSharder).
type SharderOption func(*sharderConfig)

// The defaults of a QueueSharder, Curator's (QueueSharderPolicies).
const (
	defaultShardThreshold   = 10000
	defaultShardCheckPeriod = 30 * time.Second
	defaultMaxShards        = 10
)

type sharderConfig struct {
	threshold int
	period    time.Duration
	maxQueues int
	locksPath string // "" until given
	shardOpts []WorkQueueOption
	err       error
}

// WithNewQueueThreshold sets the number of items in a shard at which the
// leader adds a shard (Curator's newQueueThreshold); producers stop
// preferring a shard from that size on, and prefer it again once it holds
// half as many or fewer. n must be positive. The default is 10,000, as
// Curator's.
func WithNewQueueThreshold(n int) SharderOption {
	return func(c *sharderConfig) {
		if n <= 0 {
			c.err = firstErr(c.err, invalidArg("WithNewQueueThreshold(%d): the threshold must be positive", n))
			return
		}
		c.threshold = n
	}
}

// WithThresholdCheckPeriod sets how often a sharder checks the size of
// every shard (Curator's thresholdCheckMs), and so how soon it learns of
// shards others added and how soon its leader adds one. Each check costs
// one listing of the queues path and one read per shard. d must be
// positive. The default is 30s, as Curator's.
func WithThresholdCheckPeriod(d time.Duration) SharderOption {
	return func(c *sharderConfig) {
		if d <= 0 {
			c.err = firstErr(c.err, invalidArg("WithThresholdCheckPeriod(%v): the period must be positive", d))
			return
		}
		c.period = d
	}
}

// WithMaxQueues sets the number of shards past which the leader adds none
// (Curator's maxQueues); it then logs a warning at each check that finds
// a shard over the threshold. n must be at least 1. The default is 10, as
// Curator's.
func WithMaxQueues(n int) SharderOption {
	return func(c *sharderConfig) {
		if n < 1 {
			c.err = firstErr(c.err, invalidArg("WithMaxQueues(%d): at least one queue", n))
			return
		}
		c.maxQueues = n
	}
}

// WithShardLockPath sets the path under which each shard's items are
// locked: shard "queue-<uuid>" locks under path/queue-<uuid>. A Curator
// QueueSharder that shares the queue must allocate its DistributedQueues
// with the same lock paths (QueueBuilder.lockPath). It must not be the
// queues path or the leader path, nor lie under either. The default is
// the queues path with "-locks" appended ("/jobs" locks under
// "/jobs-locks/queue-<uuid>").
func WithShardLockPath(path string) SharderOption {
	return func(c *sharderConfig) {
		if err := validatePath(path); err != nil {
			c.err = firstErr(c.err, err)
			return
		}
		c.locksPath = path
	}
}

// WithShardOptions sets the options of every shard's WorkQueue:
// WithMaxItems bounds each shard, WithDelayOrder makes Take honour
// delays. WithLockPath is refused (ErrInvalidArgument): a shard's lock
// path follows from WithShardLockPath. The default is none.
func WithShardOptions(opts ...WorkQueueOption) SharderOption {
	return func(c *sharderConfig) { c.shardOpts = append(c.shardOpts, opts...) }
}

// PutOption configures one Put or PutMulti of a WorkQueue.
type PutOption func(*putConfig)

type putConfig struct {
	infix string // the item node's name between "queue-" and the sequence
	given string // the option that set it
	err   error
}

func (c *putConfig) set(name, infix string) {
	if c.given != "" {
		c.err = invalidArg("%s and %s: an item has one of a priority, a delay or an id, no more", c.given, name)
		return
	}
	c.given, c.infix = name, infix
}

// WithPriority puts the item with priority p, in the node name of Curator's
// DistributedPriorityQueue: consumers take items of lower p first (items
// of equal p in the order put). Priorities order only items that have
// one: an item put without one sorts among those of negative priority.
func WithPriority(p int32) PutOption {
	return func(c *putConfig) { c.set("WithPriority", workItemPriority(p)) }
}

// WithDelayUntil puts the item due at t (to the millisecond), in the node
// name of Curator's DistributedDelayQueue: consumers built WithDelayOrder,
// and Curator's DistributedDelayQueue consumers, take it no sooner than t
// by their own clock. Other consumers take it at once. t must be after
// 1970-01-01 UTC.
func WithDelayUntil(t time.Time) PutOption {
	return func(c *putConfig) {
		ms := t.UnixMilli()
		if ms <= 0 {
			c.err = invalidArg("WithDelayUntil(%v): a time after 1970 only", t)
			return
		}
		c.set("WithDelayUntil", workItemDelay(ms))
	}
}

// WithID puts the item with id, in the node name of Curator's
// DistributedIdQueue: WorkQueue.Remove, and that queue's remove, delete
// the items of an id that no consumer holds. Consumers take items with an
// id in the order put, among the others, and see the id (WorkItem.ID).
// Ids need not be unique. An item has one of a priority, a delay or an id.
// A bad id (empty, or holding '/', '|' or a character ZooKeeper refuses)
// fails the Put with ErrInvalidItemID before any call.
func WithID(id string) PutOption {
	return func(c *putConfig) {
		if err := checkWorkItemID(id); err != nil {
			c.err = err
			return
		}
		c.set("WithID", workItemID(id))
	}
}
