package zkrecipes

import "sync"

// Watching held nodes without a goroutine per hold.
//
// A held lease must end when its node is deleted. Instead of one goroutine
// per hold waiting on its watch channel, a Session connected by Connect
// learns of every deletion from go-zookeeper's event callback, which sees
// each watch notification before it reaches the watch's channel, on the
// client's one reading goroutine (TestZKEventCallbackSeesANotificationBeforeItsWatchChannel
// checks that order). heldNodes maps each held node's path to its hold; the
// callback looks the path up and queues the loss for the Session's event
// goroutine (drain), which ends the hold. A hold only needs a watch set on
// its node: the one its waiter set, or one set once the hold has lasted
// selfWatchGrace (lease.go).
//
// One race is closed by lastDeleted: a node deleted while its hold is being
// registered may have had its notification pass the callback before the
// registration, and not yet reach its watch channel when the new hold
// polls it. The reading goroutine is then between the two, and has read
// nothing since: the last deletion the callback saw is that node's.
//
// A Session adopted with NewSession gets its events through a channel it
// reads on a goroutine of its own, after the watch channels got them, and
// that go-zookeeper drops when full: there a hold keeps a goroutine of its
// own on its watch channel (hold.monitor).

// heldNodes is the Session's registry of held nodes. The zero value is
// ready to use.
type heldNodes struct {
	mu          sync.Mutex
	byPath      map[string]*hold
	lastDeleted string // path of the last NodeDeleted the callback saw unregistered
}

// add registers h, and reports whether its node's deletion has already
// been seen by the event callback.
func (hn *heldNodes) add(h *hold) (deleted bool) {
	hn.mu.Lock()
	defer hn.mu.Unlock()
	if hn.byPath == nil {
		hn.byPath = map[string]*hold{}
	}
	hn.byPath[h.node.path] = h
	return hn.lastDeleted == h.node.path
}

// remove unregisters h, once it has ended.
func (hn *heldNodes) remove(h *hold) {
	hn.mu.Lock()
	defer hn.mu.Unlock()
	if hn.byPath[h.node.path] == h {
		delete(hn.byPath, h.node.path)
	}
}

// deleted is the event callback's part: it reports whether path is held,
// or else remembers it as the last deletion seen. It never blocks.
func (hn *heldNodes) deleted(path string) bool {
	hn.mu.Lock()
	defer hn.mu.Unlock()
	if _, ok := hn.byPath[path]; ok {
		return true
	}
	hn.lastDeleted = path
	return false
}

// get returns the hold of path, or nil.
func (hn *heldNodes) get(path string) *hold {
	hn.mu.Lock()
	defer hn.mu.Unlock()
	return hn.byPath[path]
}

// size is the number of holds registered.
func (hn *heldNodes) size() int {
	hn.mu.Lock()
	defer hn.mu.Unlock()
	return len(hn.byPath)
}
