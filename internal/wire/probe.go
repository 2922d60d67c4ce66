package wire

// serverWatchModes is what the probe found of a connection's server
// (ownState.typed holds it).
type serverWatchModes int32

const (
	// modesUnknown: not probed, or the answer is not in yet.
	modesUnknown serverWatchModes = 0
	// modesTyped: the server removes a persistent watch by its type and
	// keeps one watch per mode on a path (3.9 and later).
	modesTyped serverWatchModes = 1
	// modesPerPath: it does neither; it keeps one watch mode per path
	// (3.6 to 3.8).
	modesPerPath serverWatchModes = -1
)

// known tells whether the probe has answered.
func (m serverWatchModes) known() bool { return m != modesUnknown }

// typed tells whether the server is known to keep one watch per mode:
// false while it may keep one mode per path.
func (m serverWatchModes) typed() bool { return m == modesTyped }

// perPath tells whether the server is known to keep one mode per path.
func (m serverWatchModes) perPath() bool { return m == modesPerPath }

// watchModes returns what the probe found of c's server so far.
func (c *conn) watchModes() serverWatchModes { return serverWatchModes(c.own.typed.Load()) }

// probeTypedLocked asks c's server, once per connection and with c.g.mu
// held, whether it knows the persistent watcher types (ZOOKEEPER-4472, 3.9):
// a checkWatches of type watcherPersistent on "/" changes nothing; a server
// that knows the type answers whether the connection holds such a watch
// there (CodeOK or CodeNoWatcher), one before 3.9 answers CodeMarshalling.
// The same release keeps one watch per mode on a path (ZOOKEEPER-4466), so
// the answer also says whether persistent watches must be set again behind
// one-shot watches on their paths. Replies come in order: the answer is in
// before the reply of any addWatch written after the probe.
func (l *Layer) probeTypedLocked(c *conn) {
	const opCheckWatches = 17
	if c.own.probed || !c.own.ready {
		return
	}
	c.own.probed = true
	_, _ = c.sendLocked(l.nextXid(), opCheckWatches, addBody("/", watcherPersistent), func(c *conn, r Reply) {
		m := modesPerPath
		if r.Code == CodeOK || r.Code == CodeNoWatcher {
			m = modesTyped
		}
		c.own.typed.Store(int32(m))
	})
}
