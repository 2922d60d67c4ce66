// Package wire holds every workaround zkrecipes makes at the byte level of
// go-zookeeper's TCP connection: reading the handshake (the granted session
// timeout and the session id: conn.go), telling when a create's frame is
// written and reading the zxid of its reply, the new node's czxid
// (notice.go), gathering request frames into one write (gather.go),
// keeping go-zookeeper's last zxid for it (zxid.go: go-zookeeper records
// none, so its race on that field cannot occur), holding a resumed
// session's replies until its watches are re-set (resume.go), checking the
// go-zookeeper a binary was built with (version.go), and sending requests
// of its own that go-zookeeper
// has no call for (own.go): ZooKeeper 3.6's persistent watches
// (watches.go), whose removal on servers before 3.9 puts back the
// one-shot watches go-zookeeper holds, which the layer follows on every
// path (shots.go), and which those servers, keeping one watch mode per
// path, need set again behind go-zookeeper's watches (rearm.go) and
// shared by the watches on one path (sharedpath.go).
//
// The seam is Layer: its Dialer wraps the connections of one go-zookeeper
// client; Granted, Gather, Expect, and AddWatch, RemoveWatch and Forget
// for the persistent watches, are all the recipes use, with
// OnResumeFallback for the Session's log, ReadCounts for the tests and
// Fits for Connect's version check. A nil *Layer is the
// layer switched off (zkrecipes.WithWireLayer(false)).
//
// The layer's own frames carry xids go-zookeeper never uses (negative,
// far from the protocol's special ones); they are written whole between
// go-zookeeper's frames, and their replies are taken out of the read
// stream at frame boundaries before go-zookeeper reads it. The reading
// side relies on go-zookeeper reading each frame as its 4-byte length and
// then its body, and on every frame after the handshake starting with a
// reply header (length, xid, zxid, err).
//
// The layer relies on how go-zookeeper (v1.0.4, the version in go.mod)
// writes to its connection. TestGoZookeeperWritesOneRequestFramePerWrite
// drives a real client against a fake server and fails when one of the
// first four stops holding (the order of a resumed session's first frames
// is checked as far as SetAuth first; the rest is go-zookeeper's conn.go):
//
//   - The first Write on a connection is the whole ConnectRequest; the
//     client reads the ConnectResponse before it writes anything else.
//   - After that, each Write carries exactly one whole request frame:
//     4-byte big-endian length (of the rest), xid, opcode, then the
//     request, which for a create starts with its path (4-byte length,
//     bytes).
//   - After the handshake, one goroutine writes (sendLoop), never two
//     Writes at once, in the order the requests were queued; so a request
//     queued once a create's frame is being written goes out after it.
//   - Each of those writes is bounded by SetWriteDeadline(now + two thirds
//     of the session timeout) and the deadline is cleared after; the
//     layer's own timer-driven write (flushLate) sets the same bound.
//   - On a resumed session, SetAuth frames come first, then SetWatches.
//
// And on how it reads: it records a reply's zxid as its last only when it
// is above 0, uses that field only in its ConnectRequest and SetWatches,
// and hands a reply's zxid to no caller (zxid.go blanks it).
package wire
