package chaos

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// Store is the shared resource the chaos clients write to: an HTTP server
// on 127.0.0.1 that accepts a write only if its fencing token is at least
// the highest it has accepted (equal tokens are the same holder writing
// again) and refuses it otherwise, answering 409.
//
//	POST /write?client=c1&token=12345
type Store struct {
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup

	mu       sync.Mutex
	highest  int64
	accepted []int64 // tokens, in the order accepted
	refused  int
}

// StartStore listens on 127.0.0.1 at a port the OS picks.
func StartStore() (*Store, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Store{ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /write", s.write)
	s.srv = &http.Server{Handler: mux}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return s, nil
}

// Addr returns "127.0.0.1:port".
func (s *Store) Addr() string { return s.ln.Addr().String() }

func (s *Store) write(w http.ResponseWriter, r *http.Request) {
	tok, err := strconv.ParseInt(r.URL.Query().Get("token"), 10, 64)
	if err != nil {
		http.Error(w, "bad token", http.StatusBadRequest)
		return
	}
	if !s.Offer(tok) {
		http.Error(w, "stale token", http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Offer applies the store's rule to a write with token tok and reports
// whether it was accepted.
func (s *Store) Offer(tok int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok < s.highest {
		s.refused++
		return false
	}
	s.highest = tok
	s.accepted = append(s.accepted, tok)
	return true
}

// StoreStats sums up what the store saw.
type StoreStats struct {
	Accepted, Refused int
	// OutOfOrder counts accepted writes whose token is lower than one
	// accepted before it, recomputed from the record: 0 when fencing held.
	OutOfOrder int
}

// Stats returns the store's figures.
func (s *Store) Stats() StoreStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := StoreStats{Accepted: len(s.accepted), Refused: s.refused}
	var hi int64
	for _, t := range s.accepted {
		if t < hi {
			st.OutOfOrder++
		}
		hi = max(hi, t)
	}
	return st
}

func (st StoreStats) String() string {
	return fmt.Sprintf("%d accepted, %d refused (stale token), %d accepted out of token order", st.Accepted, st.Refused, st.OutOfOrder)
}

// Close stops the server.
func (s *Store) Close() error {
	err := s.srv.Close()
	s.wg.Wait()
	return err
}
