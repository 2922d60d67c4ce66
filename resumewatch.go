package zkrecipes

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
)

// When go-zookeeper resumes a session on a new connection, the wire layer
// holds the connection's replies back until go-zookeeper has re-set its
// watches (internal/wire/resume.go), because go-zookeeper reads its last
// zxid for that request on one goroutine while another records every
// reply's zxid (go-zookeeper/zk#35). The hold is exact only while
// go-zookeeper holds a watch: one that holds none sends no SetWatches, yet
// may gain a watch from a reply before its loop goroutine has looked. So a
// Session of Connect's keeps one exists watch of go-zookeeper's set for
// its whole life, on a node no client creates: go-zookeeper then always
// re-sets its watches on a resumed session, and the layer always knows to
// wait for it. It costs the server one watch per Session and the client one
// goroutine, which ends with the Session.

// resumeWatchPath is the node of the Session's own watch: under
// /zookeeper, which the Session refuses as a user path, so no recipe of
// this package creates it.
const resumeWatchPath = "/zookeeper/zkrecipes-resume-watch"

// setResumeWatch sets the watch once; Connect calls it before it returns,
// so that a Session's watches are all set when the caller gets it.
func (s *Session) setResumeWatch() (<-chan zk.Event, error) {
	return s.ownExistsWatch(resumeWatchPath)
}

// keepResumeWatch sets the watch again whenever go-zookeeper drops it (its
// node was created or deleted by someone, or a new session began) until
// the Session closes or fails for good. ch is the watch set first, or nil.
func (s *Session) keepResumeWatch(ch <-chan zk.Event) {
	defer s.wg.Done()
	for {
		if ch != nil {
			select {
			case <-ch:
			case <-s.closedCh:
				return
			}
		}
		if _, _, err := s.awaitConnected(context.Background()); err != nil {
			return // closed, or failed for good
		}
		var err error
		if ch, err = s.setResumeWatch(); err != nil {
			ch = nil
			// The connection went under the request: try again on the
			// next one (awaitConnected waits for it once the Session has
			// seen the loss).
			select {
			case <-time.After(100 * time.Millisecond):
			case <-s.closedCh:
				return
			}
		}
	}
}
