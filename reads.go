package zkrecipes

import "context"

// GetData reads the data and Stat of the node at path (relative to the
// Session's namespace) once, and leaves no watch on the server. It is the
// read that code built on the Session's public API (such as service
// discovery) sends instead of calling Conn: the request is checked,
// traced and typed like the recipes' own.
//
// A path that is not a valid recipe path, or too long for any request to
// name it under the Session's request size limit (WithMaxRequestSize),
// fails at once with an error matching ErrInvalidPath, and nothing is
// sent: a server closes the connection on such a request. It returns
// ZooKeeper's zk.ErrNoNode when the node does not exist,
// ErrNotAuthorized when the node's ACL refuses the Session, ErrNilSession
// or ErrInvalidArgument (a nil ctx) before any request, ErrClosed after
// Close, ctx's error as soon as ctx ends (the request, which cannot be
// cancelled, completes in the background), and the connection's errors
// otherwise (it is not retried). The Stat is nil on every error.
func (s *Session) GetData(ctx context.Context, path string) ([]byte, *NodeStat, error) {
	if s == nil {
		return nil, nil, ErrNilSession
	}
	if err := validateReadPath(path); err != nil {
		return nil, nil, err
	}
	data, st, err := s.get(ctx, s.readAbs(path))
	return data, newNodeStat(st), err
}

// GetChildren lists the names of the children of the node at path
// (relative to the Session's namespace; "/" lists the namespace's root),
// in no particular order, with the node's Stat, once, and leaves no watch
// on the server. It fails as GetData.
func (s *Session) GetChildren(ctx context.Context, path string) ([]string, *NodeStat, error) {
	if s == nil {
		return nil, nil, ErrNilSession
	}
	if err := validateReadPath(path); err != nil {
		return nil, nil, err
	}
	kids, st, err := s.childrenStat(ctx, s.readAbs(path))
	return kids, newNodeStat(st), err
}

// validateReadPath is validatePath, which also lets a read name the root
// and ConfigPath.
func validateReadPath(path string) error {
	if path == "/" || path == ConfigPath {
		return nil
	}
	return validatePath(path)
}

// readAbs is abs for a read, which may name the namespace's root.
func (s *Session) readAbs(path string) string {
	if path == "/" && s.cfg.namespace != "" {
		return s.cfg.namespace
	}
	return s.abs(path)
}
