// Package discovery registers service instances and finds them in
// ZooKeeper, wire-compatible with Apache Curator's curator-x-discovery
// 5.x: the same paths (<base path>/<service name>/<instance id>) and the
// same JSON (Curator's default JsonInstanceSerializer), so that a Go
// service registered here is found by a Java ServiceDiscovery, and the
// other way round.
//
// A registration is a zkrecipes.PersistentNode: it comes back after a
// session expiry or a deletion, never twice, and says whether it is in
// place (Status). A ServiceCache follows one service's instances; a
// Provider picks one of them (round robin, random or sticky) and leaves
// out those reported down with NoteError for a while.
//
// The package uses only zkrecipes' public API.
package discovery

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
)

// ServiceDiscovery registers instances under a base path and queries
// them, as Curator's ServiceDiscovery.
//
// New does no I/O. A ServiceDiscovery is safe for concurrent use. Close
// unregisters what it registered. The Session's Close ends the Dynamic
// registrations (ephemeral nodes end with the session) but not the
// Static or Permanent ones: Unregister or Close after it returns
// zkrecipes.ErrNodeLeft for those.
type ServiceDiscovery struct {
	s    *zr.Session
	base string
	err  error

	mu     sync.Mutex
	regs   map[string]*registration // by name/id
	closed bool

	compress bool // WithCompression
}

type registration struct {
	inst Instance
	node *zr.PersistentNode
	mode zr.CreateMode
}

// New returns a ServiceDiscovery for the services under basePath
// (relative to the Session's namespace), such as "/services". Options:
// WithCompression. Bad arguments are reported by every call.
func New(s *zr.Session, basePath string, opts ...Option) *ServiceDiscovery {
	d := &ServiceDiscovery{s: s, base: basePath, regs: map[string]*registration{}}
	for _, o := range opts {
		if o == nil {
			d.err = fmt.Errorf("%w: nil discovery Option", zr.ErrInvalidArgument)
			continue
		}
		o(d)
	}
	switch {
	case s == nil:
		d.err = zr.ErrNilSession
	case basePath == "" || basePath[0] != '/' || path.Clean(basePath) != basePath:
		d.err = fmt.Errorf("%w: base path %q must be absolute and clean", zr.ErrInvalidPath, basePath)
	}
	return d
}

// BasePath returns the base path given to New.
func (d *ServiceDiscovery) BasePath() string { return d.base }

func (d *ServiceDiscovery) servicePath(name string) string {
	if d.base == "/" {
		return "/" + name
	}
	return d.base + "/" + name
}

func (d *ServiceDiscovery) instancePath(name, id string) string {
	return d.servicePath(name) + "/" + id
}

func checkName(what, n string) error {
	if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\x00") {
		return fmt.Errorf("%w: %s %q", ErrBadName, what, n)
	}
	return nil
}

func (d *ServiceDiscovery) check(name, id string) error {
	if d.err != nil {
		return d.err
	}
	if err := checkName("service name", name); err != nil {
		return err
	}
	if id != "\x00" {
		return checkName("instance id", id)
	}
	return nil
}

// checkOpen is check, and closedErr after it.
func (d *ServiceDiscovery) checkOpen(name, id string) error {
	if err := d.check(name, id); err != nil {
		return err
	}
	return d.closedErr()
}

func key(name, id string) string { return name + "/" + id }

// errSessionClosed is what a call returns after the Session's Close.
var errSessionClosed = fmt.Errorf("%w: %w", ErrClosed, zr.ErrClosed)

// closedErr returns ErrClosed after Close, errSessionClosed after the
// Session's Close, and nil otherwise.
func (d *ServiceDiscovery) closedErr() error {
	if err := d.lockOpen(); err != nil {
		return err
	}
	d.mu.Unlock()
	if d.s.State() == zr.StateClosed {
		return errSessionClosed
	}
	return nil
}

// lockOpen locks d.mu and returns nil, or returns ErrClosed, unlocked,
// after Close.
func (d *ServiceDiscovery) lockOpen() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// closing maps the error of a call that failed because the Session was
// closed (zkrecipes.ErrClosed, or the connection's error of a request
// that Close cut short) to one that matches ErrClosed as well.
func (d *ServiceDiscovery) closing(err error) error {
	switch {
	case err == nil || errors.Is(err, ErrClosed):
		return err
	case errors.Is(err, zr.ErrClosed):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case d.s.State() == zr.StateClosed:
		return errSessionClosed
	}
	return err
}

// Register registers inst and keeps it registered until Unregister or
// Close: its node is made again after a session expiry or a deletion. A
// zero RegistrationTime is set to now, and the node's kind follows Type
// (Dynamic: ephemeral, the default; DynamicSequential: ephemeral
// sequential; Static and Permanent: persistent). Registering an instance
// this ServiceDiscovery has registered already updates it; with a Type
// of another node kind, it deletes the old node and makes the new one in
// the new kind, as Curator does (a Dynamic instance made Static then
// outlives the Session).
//
// Register returns once the node is in place. As a recipe's Start does
// (zkrecipes.PersistentNode.Start), it waits within ctx only: if ctx ends
// first it returns ctx's error and nothing stays registered (a node it
// may have made is deleted in the background). When ZooKeeper refuses the
// node for the Session's credentials or ACL, Register fails at once with
// zkrecipes.ErrNotAuthorized (also matching zk.ErrNoAuth) or
// zkrecipes.ErrInvalidACL, and nothing stays registered; a refusal after
// Register (the ACL changed) is reported by Status while the
// registration keeps trying, no more often than every 2 s. It fails with ErrBadName, ErrBadInstance
// (and ErrBadType for a Type Curator does not know; nothing is written
// then), ErrClosed after Close or the Session's Close,
// zkrecipes.ErrDataTooLarge for an instance whose JSON is too large for a
// node under the Session's request size limit (nothing is sent; a
// registered instance keeps the data it had), and the Session's errors.
func (d *ServiceDiscovery) Register(ctx context.Context, inst Instance) error {
	if ctx == nil {
		return errNilCtx
	}
	if err := d.checkOpen(inst.Name, inst.ID); err != nil {
		return err
	}
	if inst.RegistrationTime.IsZero() {
		inst.RegistrationTime = time.Now()
	}
	inst.RegistrationTime = inst.RegistrationTime.Truncate(time.Millisecond)
	data, err := d.marshal(inst)
	if err != nil {
		return err
	}
	mode := zr.ModeEphemeral
	switch inst.Type {
	case DynamicSequential:
		mode = zr.ModeEphemeralSequential
	case Static, Permanent:
		mode = zr.ModePersistent
	}
	k := key(inst.Name, inst.ID)
	if err := d.lockOpen(); err != nil {
		return err
	}
	old, ok := d.regs[k]
	if ok && old.mode == mode {
		old.inst = inst
		d.mu.Unlock()
		if err := old.node.SetData(ctx, data); err != nil {
			return d.closing(err)
		}
		return d.closing(old.node.WaitInPlace(ctx))
	}
	node := zr.NewPersistentNode(d.s, d.instancePath(inst.Name, inst.ID), data, zr.WithCreateMode(mode))
	reg := &registration{inst: inst, node: node, mode: mode}
	d.regs[k] = reg
	d.mu.Unlock()
	if ok {
		// Another kind of node: delete the old one and make the new one,
		// as Curator does. A delete left to the background is called off
		// by the new node's keeper, which replaces what it finds there.
		_ = old.node.Close(ctx)
	}
	forget := func() {
		d.mu.Lock()
		if d.regs[k] == reg {
			delete(d.regs, k)
		}
		d.mu.Unlock()
	}
	if err := node.Start(ctx); err != nil {
		// ctx ended first, or ZooKeeper refused the node: Start has
		// stopped the node (deleting it in the background if made), and
		// nothing stays registered.
		forget()
		return d.closing(err)
	}
	return nil
}

// Update writes inst over its registration (found by name and ID). It
// fails with ErrNotRegistered for an instance not registered here,
// ErrClosed after Close or the Session's Close, and otherwise as
// PersistentNode.SetData: the data is kept and written when the node is
// next in place, except data too large (zkrecipes.ErrDataTooLarge), which
// is refused before anything is sent.
func (d *ServiceDiscovery) Update(ctx context.Context, inst Instance) error {
	if ctx == nil {
		return errNilCtx
	}
	if err := d.checkOpen(inst.Name, inst.ID); err != nil {
		return err
	}
	if err := d.lockOpen(); err != nil {
		return err
	}
	r, ok := d.regs[key(inst.Name, inst.ID)]
	if !ok {
		d.mu.Unlock()
		return fmt.Errorf("%w: %s/%s", ErrNotRegistered, inst.Name, inst.ID)
	}
	if inst.RegistrationTime.IsZero() {
		inst.RegistrationTime = r.inst.RegistrationTime
	}
	data, err := d.marshal(inst)
	if err == nil {
		r.inst = inst
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	return d.closing(r.node.SetData(ctx, data))
}

// Unregister stops keeping the instance registered and deletes its node.
// It fails with ErrNotRegistered for an instance not registered here,
// ErrClosed after Close, and as PersistentNode.Close otherwise: after the
// Session's Close, it returns nil for a Dynamic or DynamicSequential
// instance (it ended with the session) and ErrNodeLeft for a Static or
// Permanent one, which stays in ZooKeeper.
func (d *ServiceDiscovery) Unregister(ctx context.Context, name, id string) error {
	if ctx == nil {
		return errNilCtx
	}
	if err := d.check(name, id); err != nil {
		return err
	}
	if err := d.lockOpen(); err != nil {
		return err
	}
	r, ok := d.regs[key(name, id)]
	delete(d.regs, key(name, id))
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s/%s", ErrNotRegistered, name, id)
	}
	return r.node.Close(ctx)
}

// Status returns whether the registration of the instance is in place
// now, and a channel that is closed when that changes (see
// zkrecipes.NodeStatus). It fails with ErrNotRegistered for an instance
// not registered here.
func (d *ServiceDiscovery) Status(name, id string) (zr.NodeStatus, <-chan struct{}, error) {
	d.mu.Lock()
	r, ok := d.regs[key(name, id)]
	d.mu.Unlock()
	if !ok {
		return zr.NodeStatus{}, nil, fmt.Errorf("%w: %s/%s", ErrNotRegistered, name, id)
	}
	st, ch := r.node.Status()
	return st, ch, nil
}

// Close unregisters every instance registered here and returns the first
// error of their deletes (see PersistentNode.Close: zkrecipes.ErrNodeLeft
// after the Session's Close for a Static or Permanent instance). Later
// calls on the ServiceDiscovery fail with ErrClosed; Close is idempotent.
func (d *ServiceDiscovery) Close(ctx context.Context) error {
	if ctx == nil {
		return errNilCtx
	}
	d.mu.Lock()
	regs := d.regs
	d.regs = map[string]*registration{}
	d.closed = true
	d.mu.Unlock()
	var first error
	for _, r := range regs {
		if err := r.node.Close(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// QueryForNames returns the names of the services under the base path,
// sorted (none when the base path does not exist). It fails with
// ErrClosed after Close or the Session's Close.
func (d *ServiceDiscovery) QueryForNames(ctx context.Context) ([]string, error) {
	if ctx == nil {
		return nil, errNilCtx
	}
	if d.err != nil {
		return nil, d.err
	}
	if err := d.closedErr(); err != nil {
		return nil, err
	}
	names, err := d.children(ctx, d.base)
	if err != nil {
		return nil, fmt.Errorf("zkrecipes: discovery: list services under %s: %w", short(d.base), err)
	}
	return names, nil
}

// QueryForInstances reads every instance of the service, sorted by ID.
// A node that does not hold an instance (ErrBadInstance) is skipped, not
// an error: one bad registration does not hide the others. It fails with
// ErrClosed after Close or the Session's Close.
func (d *ServiceDiscovery) QueryForInstances(ctx context.Context, name string) ([]Instance, error) {
	if ctx == nil {
		return nil, errNilCtx
	}
	if err := d.checkOpen(name, "\x00"); err != nil {
		return nil, err
	}
	ids, err := d.children(ctx, d.servicePath(name))
	if err != nil {
		return nil, fmt.Errorf("zkrecipes: discovery: list instances of %s: %w", short(name), err)
	}
	var out []Instance
	for _, id := range ids {
		inst, err := d.read(ctx, d.instancePath(name, id))
		switch {
		case err == nil:
			out = append(out, inst)
		case errors.Is(err, ErrNoInstance) || errors.Is(err, ErrBadInstance):
		default:
			return nil, err
		}
	}
	sortInstances(out)
	return out, nil
}

// QueryForInstance reads one instance of the service by the name of its
// node (its ID, unless registered DynamicSequential). It fails with
// ErrNoInstance when there is none, ErrBadInstance when the node does
// not hold an instance, and ErrClosed after Close or the Session's Close.
func (d *ServiceDiscovery) QueryForInstance(ctx context.Context, name, id string) (Instance, error) {
	if ctx == nil {
		return Instance{}, errNilCtx
	}
	if err := d.checkOpen(name, id); err != nil {
		return Instance{}, err
	}
	return d.read(ctx, d.instancePath(name, id))
}

func sortInstances(in []Instance) {
	sort.Slice(in, func(i, j int) bool { return in[i].ID < in[j].ID })
}

// The reads go through the Session's public reads (GetData, GetChildren),
// which check the path's size before sending, trace and type the request.

func (d *ServiceDiscovery) children(ctx context.Context, p string) ([]string, error) {
	kids, _, err := d.s.GetChildren(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, d.closing(err)
	}
	sort.Strings(kids)
	return kids, nil
}

func (d *ServiceDiscovery) read(ctx context.Context, p string) (Instance, error) {
	data, _, err := d.s.GetData(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return Instance{}, fmt.Errorf("%w: %s", ErrNoInstance, p)
	}
	if err != nil {
		return Instance{}, fmt.Errorf("zkrecipes: discovery: read %s: %w", short(p), d.closing(err))
	}
	inst, err := d.unmarshal(data)
	if err != nil {
		return Instance{}, fmt.Errorf("%s: %w", p, err)
	}
	return inst, nil
}

// short is p for an error's text: the head of a path too long for a
// request (a path of a megabyte would fill a log).
func short(p string) string {
	if len(p) > 200 {
		return p[:200] + "..."
	}
	return p
}
