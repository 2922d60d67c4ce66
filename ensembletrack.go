package zkrecipes

import (
	"context"
	"errors"
	"net"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// Following the ensemble (WithEnsembleTracking), as Curator's
// EnsembleTracker: one goroutine reads ConfigPath with a one-shot data
// watch, hands the members' client addresses to the serverList (update:
// the Java client's updateServerList), and reads again when the watch
// fires. go-zookeeper sets the watch again on every reconnection (the wire
// layer orders it before any reply), and the server fires it then if the
// configuration changed meanwhile; after a session expiry the watch is
// gone (EventNotWatching) and the loop reads again on the new session. The
// connection's Close takes the watch with it; the goroutine ends with the
// Session's Close.

// trackRetryPause paces the reads that failed for a reason other than a
// lost connection.
const trackRetryPause = time.Second

// trackEnsemble starts following the ensemble, unless switched off. It
// makes the first read itself, under Connect's ctx, so that a Session is
// on the ensemble's servers, its watch set, when Connect returns (and the
// read is not among the requests of the Session's first operations); a
// failed read is tried again in the background.
func (s *Session) trackEnsemble(ctx context.Context) {
	if s.cfg.noTrack || s.servers == nil {
		return
	}
	data, w, err := s.readConfig(ctx)
	if err == nil {
		s.applyConfig(data)
	}
	// Both goroutines exist when Connect returns: a caller that counts
	// its goroutines from then on sees none appear.
	tctx, cancel := ctxUntil(s.closedCh)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		s.followEnsemble(tctx, w, err)
	}()
}

// followEnsemble reads ConfigPath again whenever its watch w fires, or
// after a read that failed with err, until ctx ends.
func (s *Session) followEnsemble(ctx context.Context, w <-chan zk.Event, err error) {
	warned := false
	for {
		if err == nil {
			select {
			case <-w: // changed, or gone with its session: read again
			case <-ctx.Done():
				return
			}
		} else {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			if errors.Is(err, zk.ErrNoNode) || errors.Is(err, ErrNotAuthorized) {
				// A server before 3.5 has no configuration node; an ACL
				// that refuses this Session will refuse it again. (A
				// server's refusal of the whole Session, such as
				// ErrSASLRequired, is the connection's: the next server
				// may accept it, and awaitConnected ends the loop if none
				// does.)
				s.cfg.log.Warn("zkrecipes: cannot follow the ensemble's configuration; keeping the servers Connect was given (WithEnsembleTracking(false) says so quietly)",
					"path", ConfigPath, "err", err)
				return
			}
			// Connect's ctx may have ended the first read: no failure.
			quiet := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
			if !isRetryable(err) && !quiet && !warned {
				warned = true
				s.cfg.log.Warn("zkrecipes: reading the ensemble's configuration failed; trying again", "err", err)
			}
			if _, _, err := s.awaitConnected(ctx); err != nil {
				return
			}
			if sleepCtx(ctx, trackRetryPause) != nil {
				return
			}
		}
		var data []byte
		data, w, err = s.readConfig(ctx)
		if err == nil {
			s.applyConfig(data)
		}
	}
}

// applyConfig moves the Session's server list to the configuration's
// members, if it names any.
func (s *Session) applyConfig(data []byte) {
	cfg, err := ParseEnsembleConfig(data)
	if err != nil {
		s.cfg.log.Warn("zkrecipes: ensemble configuration not understood; keeping the server list", "err", err)
		return
	}
	servers := cfg.Servers()
	if len(servers) == 0 {
		return // a standalone server, or members without client addresses
	}
	for _, a := range servers {
		if host, _, _ := net.SplitHostPort(a); net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
			// A member listed as 0.0.0.0 (its own line, on a server that
			// listens on every address) names no server a client can dial.
			s.cfg.log.Warn("zkrecipes: ensemble configuration lists a member at an unspecified address; keeping the server list",
				"server", a, "version", cfg.Version)
			return
		}
	}
	if changed, moved := s.servers.update(servers); changed {
		s.cfg.log.Info("zkrecipes: following the ensemble's configuration", "servers", servers,
			"version", cfg.Version, "moved", moved)
	}
}

// Servers returns the servers a Session made by Connect dials (host:port),
// in no particular order: the ones Connect was given, normalised, until it
// follows the ensemble's configuration (WithEnsembleTracking), the
// members' client addresses from then on. It returns nil for a Session
// made by NewSession (its connection's list is the caller's) and on a nil
// Session.
func (s *Session) Servers() []string {
	if s == nil || s.servers == nil {
		return nil
	}
	s.servers.mu.Lock()
	defer s.servers.mu.Unlock()
	return slices.Clone(s.servers.given)
}
