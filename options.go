package zkrecipes

import (
	"crypto/tls"
	"io"
	"log/slog"
	"math"
	"net"
	"slices"
	"strings"
	"time"
)

// SessionOption configures Connect and NewSession. An impossible value
// makes them fail with ErrInvalidArgument (ErrInvalidPath for a namespace).
type SessionOption func(*sessionConfig)

type sessionConfig struct {
	timeout   time.Duration
	retry     RetryPolicy
	namespace string
	acl       []ACL
	auth      []string // "user:password" digests
	policy    LossPolicy
	log       *slog.Logger
	tracer    Tracer
	obs       Observer            // what the Session reports to: WithObserver's, wrapped for a Tracer (trace.go)
	names     func(string) string // WithPathNames (observe.go)
	dialer    func(network, address string, timeout time.Duration) (net.Conn, error)
	resolver  Resolver // WithResolver (servers.go)
	maxReq    int      // request size limit (see requestsize.go); 0 means the default
	noWire    bool
	noTrack   bool          // WithEnsembleTracking(false) (ensembletrack.go)
	sasl      SASLMechanism // WithSASL (sasl.go)
	tls       *tls.Config   // WithTLS (tls.go)
	connOnly  []string      // the Connect-only options given, which NewSession refuses
	damping   RetryPolicy   // WithFlapDamping (flapdamping.go); nil: off
	compress  bool          // WithCompression (compression.go)
	err       error
}

func defaultSessionConfig() sessionConfig {
	return sessionConfig{
		timeout:  10 * time.Second,
		retry:    ExponentialBackoff(50*time.Millisecond, 5*time.Second),
		acl:      OpenACL(),
		policy:   LoseOnSuspended,
		maxReq:   defaultMaxRequest,
		log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		dialer:   net.DialTimeout,
		resolver: net.DefaultResolver,
	}
}

// connectOnly records a Connect-only option, which NewSession refuses.
func (c *sessionConfig) connectOnly(name string) { c.connOnly = append(c.connOnly, name) }

func (c *sessionConfig) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// WithSessionTimeout sets the ZooKeeper session timeout the client asks
// for; the server clamps it to its own bounds (by default 2 to 20 ticks).
// A client cut off for as long as the server granted considers its session
// lost. A d below 1ms or above 2^31-1 ms (about 24.8 days), which
// go-zookeeper cannot send, makes Connect and NewSession fail with
// ErrInvalidArgument. Default 10s.
func WithSessionTimeout(d time.Duration) SessionOption {
	return func(c *sessionConfig) {
		// go-zookeeper sends it as an int32 count of milliseconds: 0 or a
		// wrapped negative count never connects.
		if d < time.Millisecond || d > math.MaxInt32*time.Millisecond {
			c.fail(invalidArg("session timeout %v must be between 1ms and %v (servers grant 2 to 20 ticks: 4s to 40s by default)",
				d, math.MaxInt32*time.Millisecond))
			return
		}
		c.timeout = d
	}
}

// WithRetryPolicy sets how operations retry a lost connection, and how
// acquisitions start over after their session expired while waiting.
// Default ExponentialBackoff(50ms, 5s): retry until the caller's ctx ends.
func WithRetryPolicy(p RetryPolicy) SessionOption {
	return func(c *sessionConfig) {
		if err := validatePolicy(p); err != nil {
			c.fail(err)
			return
		}
		c.retry = p
	}
}

// WithNamespace roots every recipe path under ns, like Curator's namespace:
// with "app", a mutex on "/locks/a" uses "/app/locks/a". Paths reported back
// are relative to it. Default: none.
func WithNamespace(ns string) SessionOption {
	return func(c *sessionConfig) {
		abs, err := normalizeNamespace(ns)
		if err != nil {
			c.fail(err)
			return
		}
		c.namespace = abs
	}
}

// WithACL sets the ACL of every node the recipes create, parents included.
// Default OpenACL(). With CreatorACL or DigestACL entries, authenticate the
// session with WithDigestAuth. A digest entry whose user holds a ':'
// (ErrDigestUser) fails Connect and NewSession.
func WithACL(acl []ACL) SessionOption {
	return func(c *sessionConfig) {
		if len(acl) == 0 {
			c.fail(invalidArg("empty ACL"))
			return
		}
		for _, a := range acl {
			if a.Scheme == "digest" && strings.Count(a.ID, ":") != 1 {
				c.fail(ErrDigestUser) // a DigestACL of a user with ':'
				return
			}
		}
		c.acl = append([]ACL(nil), acl...)
	}
}

// WithDigestAuth authenticates the session with ZooKeeper's digest scheme
// (user:password), again after every reconnect. A user name that is empty
// or holds a ':' (ErrDigestUser) fails Connect and NewSession. Default: no
// auth.
func WithDigestAuth(user, password string) SessionOption {
	return func(c *sessionConfig) {
		if user == "" {
			c.fail(invalidArg("empty digest user"))
			return
		}
		if strings.Contains(user, ":") {
			c.fail(ErrDigestUser) // not quoted: "user:password" passed as the user holds the password
			return
		}
		c.auth = append(c.auth, user+":"+password)
	}
}

// WithLossPolicy sets when leases are considered lost: LoseOnSuspended (the
// default) or LoseOnLost.
func WithLossPolicy(p LossPolicy) SessionOption {
	return func(c *sessionConfig) {
		if p != LoseOnSuspended && p != LoseOnLost {
			c.fail(invalidArg("unknown loss policy %d", int(p)))
			return
		}
		c.policy = p
	}
}

// WithLogger sets the logger for state changes, retries and background
// clean-up, and for the ZooKeeper client's own messages (at Debug).
// Default: discard everything.
func WithLogger(l *slog.Logger) SessionOption {
	return func(c *sessionConfig) {
		if l == nil {
			c.fail(invalidArg("nil logger"))
			return
		}
		c.log = l
	}
}

// WithTracer sets a hook that sees every ZooKeeper operation the recipes
// issue, with its absolute path. It is an adapter on the Session's one
// hook, the Observer: the Tracer sees what Observer.OpDone sees, beside
// the Observer set with WithObserver, if any. Default: none.
//
// Deprecated: use WithObserver, whose OpDone sees the same requests with
// the caller's ctx (its OpEvent.Path is relative to the namespace; the
// Session's WithNamespace makes it absolute).
func WithTracer(t Tracer) SessionOption {
	return func(c *sessionConfig) {
		if t == nil {
			c.fail(invalidArg("nil tracer"))
			return
		}
		c.tracer = t
	}
}

// WithDialer sets the function that opens each TCP connection to a
// ZooKeeper server (for a proxy, or a test's fault injector). It is given
// an address the server's name resolved to (see WithResolver), or the IP
// literal as written. Default: net.DialTimeout. WithTLS and WithSASL run
// over the connection it returns, and see the server's name as written; a
// TLS handshake it does itself that fails for a reason retrying cannot
// mend is taken as WithTLS's refusals are (ErrTLSRefused or
// ErrTLSUntrusted). Only Connect uses it: NewSession refuses it with
// ErrConnectOnlyOption.
func WithDialer(dial func(network, address string, timeout time.Duration) (net.Conn, error)) SessionOption {
	return func(c *sessionConfig) {
		if dial == nil {
			c.fail(invalidArg("nil dialer"))
			return
		}
		c.dialer = dial
		c.connectOnly("WithDialer")
	}
}

// WithMaxRequestSize sets the largest request, in bytes, that may write a
// node: a create, setData or multi (its data, full paths, ACL and headers;
// see docs/design-session.md). A write that would exceed it fails with
// ErrDataTooLarge before anything is sent, and so does every method of a
// recipe whose node data would; a server would instead close the
// connection, putting every lease of the Session in doubt. A recipe path
// too long for any request under it fails with ErrInvalidPath; so does
// Connect (or NewSession) for such a namespace, and with
// ErrInvalidArgument for an ACL or digest credentials that alone exceed
// it. Raise it only for servers that all run with a larger
// jute.maxbuffer, to at most that. Default
// 1048575, ZooKeeper's default jute.maxbuffer; at most 1572860, the most
// go-zookeeper sends.
func WithMaxRequestSize(n int) SessionOption {
	return func(c *sessionConfig) {
		if n <= 0 {
			c.fail(invalidArg("max request size %d must be positive", n))
			return
		}
		c.maxReq = min(n, clientMaxRequest)
	}
}

// WithWireLayer turns the wire layer of Connect's connections on or off.
// The layer sits between go-zookeeper and the TCP connection: it reads the
// session timeout the server granted, lets a lock's first listing leave
// right behind its create, writes a waiter's requests together, and, when
// a session resumes on a new connection, holds replies back until the
// watches are re-set. It relies on how go-zookeeper writes its requests,
// which a test checks against the version this module requires.
//
// Turned off, Connect's connections are plain, as NewSession's: the
// Session presumes its session lost after the timeout it asked for, not
// the one granted (a server granting less may expire it first); an
// uncontended acquisition takes one more round trip, a waiter's requests
// are written one by one; and after a reconnection go-zookeeper may read a
// reply before it re-sets its watches, which can lose the notification of a
// change made while it was cut off (go-zookeeper/zk#35). Turn it off to
// rule it out when diagnosing, or with a go-zookeeper it does not fit.
// Connect turns it off itself, with a warning on the Session's logger,
// when the binary was built with a go-zookeeper other than the version the
// layer was tested with (v1.0.4), a fork or a local replace among them; a
// binary that does not say keeps it. Default true (on). Only Connect uses it: NewSession refuses it with
// ErrConnectOnlyOption.
func WithWireLayer(on bool) SessionOption {
	return func(c *sessionConfig) {
		c.noWire = !on
		c.connectOnly("WithWireLayer")
	}
}

// WithEnsembleTracking turns on or off following the ensemble's
// configuration, as Curator's EnsembleTracker does. On, a Session made by
// Connect reads ConfigPath once connected, watches it for the Session's
// life, and on every change dials the members' client addresses from then
// on (in place of the servers Connect was given; names are kept as the
// configuration writes them), with the Java client's rule: it stays on its
// server while that server is in the new configuration, and moves off one
// that left, keeping its ZooKeeper session (the move is a reconnection:
// SUSPENDED then RECONNECTED, which ends leases under LoseOnSuspended).
// A configuration with no client address, or with a member at 0.0.0.0,
// changes nothing; a server older than 3.5, or one whose ACL on ConfigPath
// refuses the Session, leaves the list as given (logged once at Warn). It
// costs one watch on the server and one getData per change, neither
// reported to the Tracer or Observer; the watch goes with the Session's
// Close.
//
// Turn it off when this client reaches the ensemble by other names or
// addresses than its configuration gives (from outside a Kubernetes
// cluster, through a load balancer or a port forward): it would move to
// servers it cannot reach. Default true (on) for Connect. NewSession never
// follows the ensemble (the caller's connection has its own server list),
// and refuses WithEnsembleTracking(true) with ErrConnectOnlyOption.
func WithEnsembleTracking(on bool) SessionOption {
	return func(c *sessionConfig) {
		c.noTrack = !on
		if on {
			c.connectOnly("WithEnsembleTracking")
		}
	}
}

// NodeOption configures a node operation of the Session: Create, Set,
// SetACL, Delete, and the ops of a transaction (CreateOp, SetOp, DeleteOp,
// CheckOp). An option an operation does not take (WithMode given to Set,
// say) makes it fail with ErrInvalidArgument before anything is sent.
type NodeOption func(*nodeConfig)

type nodeConfig struct {
	mode       CreateMode
	ttl        time.Duration
	protected  bool
	parents    bool
	version    int32
	guaranteed bool
	children   bool
	given      []string // the options given, to refuse those an operation does not take
	err        error
}

func (c *nodeConfig) set(name string, fn func()) {
	c.given = append(c.given, name)
	fn()
}

// WithMode sets the kind of node Create (or a CreateOp) makes: one of the
// CreateMode constants (ModePersistent, ModeEphemeral, their sequential
// forms, ModeContainer, and the TTL modes, which need WithTTL). An
// unknown mode fails the call with ErrInvalidArgument. Default
// ModePersistent. (PersistentNode takes its mode with WithCreateMode.)
func WithMode(m CreateMode) NodeOption {
	return func(c *nodeConfig) {
		c.set("WithMode", func() {
			if m < ModeEphemeral || m > ModePersistentSequentialWithTTL {
				c.fail(invalidArg("unknown CreateMode %d", int(m)))
			}
			c.mode = m
		})
	}
}

// WithTTL sets the time to live of a node created in a TTL mode
// (ModePersistentWithTTL, ModePersistentSequentialWithTTL): the server
// deletes the node once it has had no children and no change for ttl.
// It must be between 1ms and 2^40-1 ms, ZooKeeper's bounds, and is
// refused with any other mode; a TTL mode without it fails with
// ErrInvalidArgument. The servers must run with
// zookeeper.extendedTypesEnabled=true, or they refuse the create.
// Default: none.
func WithTTL(ttl time.Duration) NodeOption {
	return func(c *nodeConfig) {
		c.set("WithTTL", func() {
			if ttl < time.Millisecond || ttl > maxTTL {
				c.fail(invalidArg("ttl %v must be between 1ms and %v", ttl, maxTTL))
			}
			c.ttl = ttl
		})
	}
}

// maxTTL is the largest TTL ZooKeeper accepts (EphemeralType's 40 bits
// of milliseconds).
const maxTTL = (1<<40 - 1) * time.Millisecond

// WithProtection(true) makes Create name the node "_c_<uuid>-<name>" (name the
// last segment of the path given, followed by the sequence number in a
// sequential mode), as Curator's withProtection does, so that a create
// whose reply is lost can find its node again: Create then retries under
// the Session's retry policy and never makes two nodes. In a
// transaction (CreateOp) it lets a Multi whose reply was lost tell
// whether it was applied. Default: off (the name is the path given).
func WithProtection(on bool) NodeOption {
	return func(c *nodeConfig) { c.set("WithProtection", func() { c.protected = on }) }
}

// WithParents(true) makes Create create the missing ancestors of the node as
// container nodes (empty, deleted by the server once they have no
// children), as every recipe does and Curator's
// creatingParentContainersIfNeeded. Default: off (a missing parent fails
// the create with ErrNoNode).
func WithParents(on bool) NodeOption {
	return func(c *nodeConfig) { c.set("WithParents", func() { c.parents = on }) }
}

// WithVersion makes Set, SetACL, Delete (or a SetOp, DeleteOp, CheckOp)
// apply only while the node's version is v: its data version (the
// NodeStat's Version), or for SetACL its ACL version (Aversion). Otherwise
// the call fails with ErrBadVersion. Any v but -1 is sent as it is, a
// negative one too (a version wraps negative after 2^31-1 changes).
// Default -1: any version.
func WithVersion(v int32) NodeOption {
	return func(c *nodeConfig) { c.set("WithVersion", func() { c.version = v }) }
}

// WithGuaranteed(true) makes Delete keep deleting in the background when it
// cannot confirm the delete (the connection is lost, ctx ends, the retry
// policy gives up): until the node is gone, across connection losses and
// session expiries, or the Session is closed, whose Close then reports it
// (ErrDeletePending). Delete then returns ErrDeleteDeferred. Curator's
// guaranteed(). Default: off.
func WithGuaranteed(on bool) NodeOption {
	return func(c *nodeConfig) { c.set("WithGuaranteed", func() { c.guaranteed = on }) }
}

// WithDeleteChildren(true) makes Delete delete the node's descendants first,
// as Curator's deletingChildrenIfNeeded: a child created meanwhile is
// deleted too. Default: off (a node with children fails with
// ErrNotEmpty).
func WithDeleteChildren(on bool) NodeOption {
	return func(c *nodeConfig) { c.set("WithDeleteChildren", func() { c.children = on }) }
}

func (c *nodeConfig) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// buildNodeConfig applies opts for operation op, which takes the options
// named in takes.
func buildNodeConfig(op string, opts []NodeOption, takes ...string) (nodeConfig, error) {
	c := nodeConfig{mode: ModePersistent, version: -1}
	for _, o := range opts {
		if o == nil {
			return c, invalidArg("nil NodeOption")
		}
		o(&c)
	}
	for _, g := range c.given {
		if !slices.Contains(takes, g) {
			return c, invalidArg("%s does not take %s", op, g)
		}
	}
	return c, c.err
}
