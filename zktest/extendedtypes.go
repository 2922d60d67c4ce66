package zktest

// WithExtendedTypes turns ZooKeeper's extended node types (TTL nodes) on
// or off on the servers the "java" and "docker" backends start: the
// system property zookeeper.extendedTypesEnabled, which they get from
// their zoo.cfg (ZooKeeper sets every key it does not know as a system
// property prefixed with "zookeeper."). With them off, a server refuses
// every TTL create (UNIMPLEMENTED), as a production server does by
// default. They cost nothing to a test that makes no TTL node; they need
// server ids below 255, which every ensemble started here has. The
// "servers" backend runs servers configured elsewhere: off is refused
// there (Start fails), on is assumed. Optional, defaults to on.
func WithExtendedTypes(on bool) Option {
	return func(c *config) { c.noExtTypes = !on }
}

// extendedTypesCfg is the zoo.cfg line of WithExtendedTypes.
func (c config) extendedTypesCfg() string {
	if c.noExtTypes {
		return "extendedTypesEnabled=false\n"
	}
	return "extendedTypesEnabled=true\n"
}
