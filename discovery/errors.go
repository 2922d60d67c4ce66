package discovery

import (
	"errors"
	"fmt"

	zr "github.com/zkrecipes/zkrecipes"
)

// Errors returned by this package. Compare with errors.Is: they are
// wrapped with detail before they reach you. Errors of the Session (such
// as zkrecipes.ErrClosed) and of ZooKeeper pass through, wrapped.
var (
	// ErrBadInstance reports data that is not a service instance in
	// Curator's JSON format, or an Instance that cannot be written (no
	// name or ID, a payload that is not JSON, a malformed URISpec).
	ErrBadInstance = errors.New("zkrecipes: discovery: not a valid service instance")

	// ErrBadName reports a service name or instance ID that cannot be a
	// node name (empty, ".", "..", or holding a "/").
	ErrBadName = errors.New("zkrecipes: discovery: invalid service name or instance id")

	// ErrNotRegistered is returned by Update and Unregister for an
	// instance this ServiceDiscovery did not register.
	ErrNotRegistered = errors.New("zkrecipes: discovery: instance not registered here; call Register first")

	// ErrNoInstance is returned by Provider.Instance when the service has
	// no instance to choose (none registered, or every one down or
	// disabled), and by QueryForInstance when the instance does not exist.
	ErrNoInstance = errors.New("zkrecipes: discovery: no instance of the service available")

	// ErrClosed is returned by a ServiceDiscovery, ServiceCache or
	// Provider after its Close (for a ServiceCache or Provider, also after
	// its ServiceDiscovery's), and by every call of them after the
	// Session's Close, then also matching zkrecipes.ErrClosed. A call cut
	// short by the Session's Close returns it too, never go-zookeeper's
	// zk.ErrConnectionClosed, which means "retry once reconnected".
	ErrClosed = errors.New("zkrecipes: discovery: closed")

	// ErrBadType is returned, with ErrBadInstance, by Register, Update and
	// Instance.Marshal for an Instance whose Type is not one of Curator's
	// service types (Dynamic, DynamicSequential, Static, Permanent, or ""
	// for Dynamic), before anything is written: Curator's readers fail on
	// such an instance for its whole service.
	ErrBadType = errors.New("zkrecipes: discovery: unknown service type; use DYNAMIC, DYNAMIC_SEQUENTIAL, STATIC or PERMANENT")
)

// errNilCtx is what every call given a nil context returns.
var errNilCtx = fmt.Errorf("%w: nil context", zr.ErrInvalidArgument)
