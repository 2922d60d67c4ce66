package wire

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
		switch r.Code {
		case CodeOK, CodeNoWatcher:
			c.own.typed.Store(1)
		default:
			c.own.typed.Store(-1)
		}
	})
}
