package discovery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Strategy chooses one instance among the available ones, as Curator's
// ProviderStrategy. Choose is called with at least one instance, sorted
// by ID, and returns one of them; it must be safe for concurrent use.
type Strategy interface {
	Choose(instances []Instance) Instance
}

// RoundRobin returns a Strategy that takes the instances in turn (the
// default).
func RoundRobin() Strategy { return &roundRobin{} }

type roundRobin struct{ next atomic.Uint64 }

func (r *roundRobin) Choose(in []Instance) Instance {
	return in[(r.next.Add(1)-1)%uint64(len(in))]
}

// Random returns a Strategy that takes an instance at random.
func Random() Strategy { return random{} }

type random struct{}

func (random) Choose(in []Instance) Instance { return in[rand.IntN(len(in))] }

// Sticky returns a Strategy that keeps returning the instance it chose
// last, by ID, while that instance is available, and asks master for a
// new one otherwise. A nil master is RoundRobin().
func Sticky(master Strategy) Strategy {
	if master == nil {
		master = RoundRobin()
	}
	return &sticky{master: master}
}

type sticky struct {
	master Strategy
	mu     sync.Mutex
	id     string
	chosen bool
}

func (s *sticky) Choose(in []Instance) Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chosen {
		for _, i := range in {
			if i.ID == s.id {
				return i
			}
		}
	}
	i := s.master.Choose(in)
	s.id, s.chosen = i.ID, true
	return i
}

// ProviderOption configures NewProvider.
type ProviderOption func(*providerConfig)

type providerConfig struct {
	strategy  Strategy
	downFor   time.Duration
	threshold int
}

// WithStrategy sets how the Provider chooses. The default is RoundRobin().
// A nil Strategy keeps the default.
func WithStrategy(s Strategy) ProviderOption {
	return func(c *providerConfig) {
		if s != nil {
			c.strategy = s
		}
	}
}

// WithDownInstancePolicy sets when an instance is left out: after
// threshold calls of NoteError, for downFor from the first of them, as
// Curator's DownInstancePolicy. The default is 30 s and 2 errors.
// Values below 1 keep the default.
func WithDownInstancePolicy(downFor time.Duration, threshold int) ProviderOption {
	return func(c *providerConfig) {
		if downFor > 0 {
			c.downFor = downFor
		}
		if threshold > 0 {
			c.threshold = threshold
		}
	}
}

// Provider picks an instance of one service for each call, from a
// ServiceCache it runs, as Curator's ServiceProvider: disabled instances
// and those reported down are left out.
//
// NewProvider does no I/O. A Provider is safe for concurrent use; no
// goroutine of it is left after Close.
type Provider struct {
	cache *ServiceCache
	cfg   providerConfig
	now   func() time.Time

	downs atomic.Int32 // len(down), read without the lock
	mu    sync.Mutex
	down  map[string]*downStatus // by instance ID
}

func anyDisabled(in []Instance) bool {
	for i := range in {
		if in[i].Disabled {
			return true
		}
	}
	return false
}

type downStatus struct {
	since  time.Time
	errors int
}

// NewProvider returns a Provider of the named service.
func (d *ServiceDiscovery) NewProvider(name string, opts ...ProviderOption) *Provider {
	p := &Provider{cache: d.NewCache(name), now: time.Now, down: map[string]*downStatus{},
		cfg: providerConfig{strategy: RoundRobin(), downFor: 30 * time.Second, threshold: 2}}
	for _, o := range opts {
		if o != nil {
			o(&p.cfg)
		}
	}
	return p
}

// Start loads the service's instances, as ServiceCache.Start.
func (p *Provider) Start(ctx context.Context) error { return p.cache.Start(ctx) }

// Instance chooses an instance with the Provider's Strategy among the
// available ones. It fails with ErrNoInstance when there is none.
func (p *Provider) Instance() (Instance, error) {
	in := p.available()
	if len(in) == 0 {
		return Instance{}, fmt.Errorf("%w: %s", ErrNoInstance, p.cache.name)
	}
	return p.cfg.strategy.Choose(in), nil
}

// Available returns the instances a call of Instance chooses among:
// enabled, and not down; sorted by ID.
func (p *Provider) Available() []Instance { return slices.Clone(p.available()) }

// available is Available, shared with the cache when nothing is left
// out: never modify it.
func (p *Provider) available() []Instance {
	all := p.cache.snapshot()
	if p.downs.Load() == 0 && !anyDisabled(all) {
		return all
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purgeLocked()
	out := make([]Instance, 0, len(all))
	for _, i := range all {
		if i.Disabled {
			continue
		}
		if d, ok := p.down[i.ID]; ok && d.errors >= p.cfg.threshold {
			continue
		}
		out = append(out, i)
	}
	return out
}

// All returns every instance of the service as last read, down and
// disabled ones included, sorted by ID, and a channel that is closed at
// their next change (see ServiceCache.Instances).
func (p *Provider) All() ([]Instance, <-chan struct{}) { return p.cache.Instances() }

// NoteError reports that a call to inst failed. After the policy's
// threshold of errors (see WithDownInstancePolicy) the instance is left
// out until the policy's time has passed since the first of them.
func (p *Provider) NoteError(inst Instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purgeLocked()
	d, ok := p.down[inst.ID]
	if !ok {
		d = &downStatus{since: p.now()}
		p.down[inst.ID] = d
		p.downs.Store(int32(len(p.down)))
	}
	d.errors++
}

func (p *Provider) purgeLocked() {
	now := p.now()
	for id, d := range p.down {
		if now.Sub(d.since) >= p.cfg.downFor {
			delete(p.down, id)
		}
	}
	p.downs.Store(int32(len(p.down)))
}

// Changed returns a channel that is closed at the next change of the
// service's instances.
//
// Deprecated: use All, which returns the instances and that channel
// together.
func (p *Provider) Changed() <-chan struct{} {
	_, ch := p.cache.Instances()
	return ch
}

// Close stops the Provider's cache, as ServiceCache.Close does.
func (p *Provider) Close(ctx context.Context) error { return p.cache.Close(ctx) }
