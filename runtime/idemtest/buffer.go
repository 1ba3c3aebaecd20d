package idemtest

import (
	"bytes"
	"sync"
)

// SyncBuffer is a log sink safe for concurrent writers (a store's
// background goroutines, a heartbeat), for tests that read back what was
// logged. Its zero value is empty and ready.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
