package zkrecipes

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Config reads the ensemble's configuration (ConfigPath) from the server
// the Session is connected to, after a sync with the leader, so that it is
// at least as recent as the Session's last write. It fails with
// ErrNilSession, ErrInvalidArgument (a nil ctx), ErrClosed after Close,
// ctx's error, the connection's errors (not retried), zk.ErrNoNode on a
// server older than 3.5, and ErrInvalidArgument when the node holds no
// configuration of this form (a standalone server's is empty: its Members
// are then none).
func (s *Session) Config(ctx context.Context) (*EnsembleConfig, error) {
	if s == nil {
		return nil, ErrNilSession
	}
	if err := s.sync(ctx, ConfigPath); err != nil {
		return nil, err
	}
	data, _, err := s.get(ctx, ConfigPath)
	if err != nil {
		return nil, err
	}
	return ParseEnsembleConfig(data)
}

// Reconfig replaces the ensemble's membership with members, each a
// server line as EnsembleMember.Line gives it ("server.4=host:2888:3888:
// participant;host:2181"), provided the configuration's version is still
// version (-1: whatever it is). It returns the version of the new
// configuration. ZooKeeper commits it once a quorum of the new members
// has it; the Session (and every Session following the ensemble, see
// WithEnsembleTracking) then moves to the new server list.
//
// It is an administrator's operation: the ensemble must run with
// reconfigEnabled=true (otherwise ErrReconfigDisabled), and the Session be
// its super user (otherwise ErrReconfigNotAuthorized). A version that is no
// longer current fails with ErrConfigChanged. It fails like Config before
// any request, with ErrInvalidArgument for an empty members, and with
// ZooKeeper's error when the new configuration cannot be committed (no
// quorum of it up to date, another reconfiguration under way). It is not
// retried: when its reply is lost with the connection (a change of leader,
// which a reconfiguration can bring about, drops every client),
// or ctx ends while it is on its way, it may or may not have been applied,
// and it returns an error matching ErrOutcomeUnknown and its cause
// (zk.ErrConnectionClosed, ctx's error); read Config to find out.
func (s *Session) Reconfig(ctx context.Context, members []string, version int64) (int64, error) {
	if s == nil {
		return 0, ErrNilSession
	}
	if len(members) == 0 {
		return 0, invalidArg("reconfig: no members")
	}
	return s.reconfig(ctx, func() (*zk.Stat, error) { return s.conn.Reconfig(members, version) })
}

// IncrementalReconfig adds the servers joining (server lines, as for
// Reconfig) to the ensemble and removes those leaving (by id, as
// "4"), provided the configuration's version is still version (-1:
// whatever it is). It returns the version of the new configuration, and
// fails as Reconfig, with ErrInvalidArgument when both lists are empty.
func (s *Session) IncrementalReconfig(ctx context.Context, joining, leaving []string, version int64) (int64, error) {
	if s == nil {
		return 0, ErrNilSession
	}
	if len(joining) == 0 && len(leaving) == 0 {
		return 0, invalidArg("reconfig: nobody joining or leaving")
	}
	return s.reconfig(ctx, func() (*zk.Stat, error) { return s.conn.IncrementalReconfig(joining, leaving, version) })
}

// reconfig sends a reconfiguration and types its refusals. The Stat
// ZooKeeper returns is the configuration node's, whose Mzxid is the new
// configuration's version.
func (s *Session) reconfig(ctx context.Context, req func() (*zk.Stat, error)) (int64, error) {
	if ctx != nil && ctx.Err() != nil {
		return 0, ctx.Err() // not sent
	}
	st, err := call(ctx, s, "reconfig", ConfigPath, req, nil)
	switch {
	case err == nil:
		return st.Mzxid, nil
	case err == ErrClosed: // closed before it was sent
		return 0, err
	case errors.Is(err, zk.ErrReconfigDisabled):
		return 0, fmt.Errorf("%w (%w)", ErrReconfigDisabled, zk.ErrReconfigDisabled)
	case errors.Is(err, zk.ErrNoAuth):
		return 0, fmt.Errorf("%w (%w)", ErrReconfigNotAuthorized, zk.ErrNoAuth)
	case errors.Is(err, zk.ErrBadVersion):
		return 0, fmt.Errorf("%w (%w)", ErrConfigChanged, zk.ErrBadVersion)
	case replyLost(ctx, err):
		return 0, outcomeUnknown("reconfig", ConfigPath, err)
	}
	return 0, s.opError("reconfig", ConfigPath, err)
}
